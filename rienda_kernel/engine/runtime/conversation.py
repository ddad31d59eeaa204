"""One conversation: a session's messages in memory, its file on disk, its agent and model,
and the setup of each run in it (:meth:`Conversation.run`). Made by
:meth:`.rienda.Rienda.conversation` (a sub-agent's, by :meth:`.rienda.Rienda.child_conversation`)."""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass

from ..builtins import NOTEBOOK_TOOL_NAMES, WHERE_THEY_EXIST
from .seams import Link, RunHost
from .subagents import Subagents, fit_agent_tool
from ..cancel import CancelToken, run_interruptibly
from ..ctx.host import RunContext
from ..errors import ConfigError, Interrupted, ProviderError, SessionWriteError
from ..events import Compaction, Notify, RunEnd
from ..home.agents import DEFAULT_AGENT_ID, Agent
from ..home.config import Config
from ..home.extensions import check_declared
from ..hooks import inert_fail_closed
from .loop import RunResult, TurnSetup, compact_session, run_prompt
from .compactor import CompactionState, said_failed
from ..providers import Provider, ToolSpec, provider_for
from ..providers.recordings import RecordingProvider
from ..providers.choice import choose_default_model
from ..secrets import scrub_text
from ..tools.mcp.catalog import declared_tools
from ..ui import EventSink, FrontEnd, ScrubbingUI
from ..sessions.messages import Message
from ..sessions.reading import LoadedSession
from ..sessions.compaction.use import ContextUse, context_use
from ..sessions.records import PinRecord
from ..sessions.store import SessionWriter, new_session_id

__all__ = ["DEFAULT_MAX_TURNS", "Conversation", "ManualCompaction"]

DEFAULT_MAX_TURNS = 50


@dataclass(frozen=True)
class ManualCompaction:
    """A compaction by hand: its event (None: a stop cut it short, and the session is as it
    was) and the signal that stopped it, if one did."""

    event: Compaction | None
    stopped_by: int | None = None

    @property
    def kept_going(self) -> bool:
        """Whether it compacted, or found nothing to compact (not cancelled, rejected,
        failed or stopped): a command's exit 0."""
        return self.event is not None and not self.stopped_by and self.event.outcome in ("compacted", "nothing")


class Conversation:
    """One session: its messages in memory, its file on disk, its agent and model.

    The session file is created by the first run (a run refused before it starts, e.g.
    for an unknown hook, a missing API key or a bad option, writes nothing). A run is the session's one writer while it runs:
    a run of the same session that starts meanwhile, from any conversation in any process,
    is refused (``error``, naming the session and the pid holding it) before it writes
    anything. A run that finds the file changed since this conversation last read or wrote
    it (another conversation ran in between) reloads it first, so it goes on from the
    file's last message.
    A sub-agent's run is made with its ``link`` (:mod:`.subagents`); its saved session is
    never resumed alone (its lead's hooks would not cover it): that run is refused.

    ``session_id`` and ``loaded``: the saved session this conversation resumes, as read
    (its messages, its approvals and the warnings of reading it). ``max_turns`` overrides
    the agent's and config.yaml's limit (a front end may change it between runs).
    """

    def __init__(self, rienda: RunHost, agent_id: str, model: str | None = None, *,
                 session_id: str | None = None, loaded: LoadedSession | None = None, link: Link | None = None,
                 max_turns: int | None = None) -> None:
        self.rienda = rienda
        self.agent_id = agent_id
        self.model = model
        self.link = link
        self.max_turns = max_turns
        self.session_id = session_id
        self.messages: list[Message] = []
        self.warnings: list[str] = []
        self.approvals: set[tuple[str, str]] = set()  # confirms allowed for this session
        self.parent_session_id: str | None = None  # the session that started this one, when it was a sub-agent's
        self._known_size: int | None = None  # the file's size when this conversation last read or wrote it
        self.compaction = CompactionState()  # the view its requests are made from, and the pins
        if loaded is not None:
            self.warnings = list(loaded.warnings)
            self.restore(loaded)

    def restore(self, loaded: LoadedSession) -> None:
        """Take the messages and the approvals "for this session" of a loaded session."""
        self.messages[:] = loaded.messages
        self.parent_session_id = loaded.header.parent_session_id
        self.approvals = loaded.approvals()
        self.compaction.view = loaded.compaction_view(self.warnings)
        self.compaction.pins = loaded.pins()
        self._known_size = loaded.size

    def run(self, prompt: str, ui: FrontEnd, cancel: CancelToken | None = None) -> RunResult:
        """Run one prompt. Never raises for the run's own failures: the result's
        ``reason`` and ``error`` say what happened (bad setup is ``error`` too). Every
        event reaches ``ui`` scrubbed of secrets."""
        cancel = cancel or CancelToken()
        ui = ScrubbingUI.around(ui)
        if self.link is None and self.rienda.recording is not None:
            self.rienda.recording.begin_turn()
        try:
            setup = self._setup(ui, cancel)
        except (ConfigError, ProviderError, SessionWriteError) as exc:  # bad setup, or no session file
            error = scrub_text(str(exc))
            ui.emit(RunEnd("error", error))
            return RunResult(self.session_id or "", "error", [], error, failure=exc)
        except Interrupted:  # stopped while loading the agent's extensions: nothing was saved
            ui.emit(RunEnd("interrupted", None))
            return RunResult(self.session_id or "", "interrupted", [], None)
        try:
            return run_prompt(setup, prompt, cancel)
        finally:
            self._known_size = setup.writer.size()
            setup.writer.close()

    def compact(self, ui: FrontEnd, instructions: str | None = None, cancel: CancelToken | None = None) -> Compaction:
        """Compact the session now (``reason`` ``manual``), through the agent's hooks; the
        :class:`Compaction` it came to (said to ``ui`` too). A session that holds nothing yet,
        or a setup that fails, is a ``failed`` one naming why. Never raises but for a stop."""
        ui = ScrubbingUI.around(ui)
        if self.session_id is None:
            return said_failed(ui, "there is no session yet: nothing to compact")
        try:
            setup = self._setup(ui, cancel or CancelToken())
        except (ConfigError, ProviderError, SessionWriteError) as exc:
            return said_failed(ui, scrub_text(str(exc)))
        try:
            return compact_session(setup, instructions, cancel or CancelToken())
        finally:
            self._known_size = setup.writer.size()
            setup.writer.close()

    def compact_by_hand(self, ui: FrontEnd, instructions: str | None = None,
                        signals: tuple[int, ...] = (signal.SIGINT,)) -> ManualCompaction:
        """What every front end does for a compaction by hand (``rienda compact``,
        ``%rienda compact``, ``/compact``): :meth:`compact` on a thread that each of
        ``signals`` stops (:func:`..cancel.run_interruptibly`), never raising for a stop."""

        def work(cancel: CancelToken) -> Compaction | None:
            try:
                return self.compact(ui, instructions, cancel)
            except Interrupted:
                return None

        event, stopped_by = run_interruptibly(work, signals=signals)
        return ManualCompaction(event, stopped_by)

    def context_use(self, *, mcp: bool = True) -> ContextUse:
        """What fills the session's next request, part by part, without running a turn
        (:mod:`..sessions.compaction.use`): the agent's system prompt and tool definitions as
        its run sends them, the pinned prompts, the summary, the other messages, and the
        model's window. ``mcp=False`` leaves out MCP servers' tools (none is started).
        ConfigError when the agent or its model cannot be set up."""
        config = self.rienda.config()
        agent, _ = self.rienda.agent(self.agent_id, config)
        named = [name for name in agent.tools if mcp or not name.startswith("mcp__")]
        catalog = fit_agent_tool(self.rienda.catalog(named, [], CancelToken(), config), agent, self.rienda)
        specs = [ToolSpec(tool.name, tool.description, tool.parameters)
                 for tool in (catalog.tools.get(name) for name in named) if tool is not None]
        window = None
        model_id = self.model or agent.model
        if model_id:
            provider, model_name = self._provider(model_id, agent, config)
            found = provider.context_window(model_name, agent.options)
            window = found.tokens if found else None
        tools_json = json.dumps([spec.as_function() for spec in specs])
        return context_use(self.messages, self.compaction.view, self.compaction.pins, agent.system, tools_json,
                           window)

    def prompt_number(self, index: int) -> int:
        """The prompt number (1 for the first) of the message numbered ``index``."""
        return sum(1 for message in self.messages[:index + 1] if message.role == "user")

    def pin(self, number: int | None = None) -> int:
        """Keep prompt ``number`` (1 = the session's first prompt; None: the last) verbatim
        through every compaction: a ``pin`` record; the prompt's message number. ConfigError
        when the session has no such prompt (or none yet)."""
        if self.session_id is None:
            raise ConfigError("there is no session yet: run a prompt first, then pin it")
        with self.rienda.store.resume(self.session_id) as writer:
            if writer.opened_size != self._known_size:  # another run wrote since: pin what the file holds
                self.restore(self.rienda.store.load(self.session_id))
            prompts = [index for index, message in enumerate(self.messages) if message.role == "user"]
            if not prompts or (number is not None and not 1 <= number <= len(prompts)):
                raise ConfigError(f"session {self.session_id} has no prompt {number}: it has {len(prompts)}")
            index = prompts[-1 if number is None else number - 1]
            writer.append_record(PinRecord(index))
            self._known_size = writer.size()
        self.compaction.pins.add(index)
        return index

    def close(self) -> None:
        """Nothing to release: a run releases the session when it ends. Kept so that front
        ends can say when they are done with a conversation."""

    def _setup(self, ui: ScrubbingUI, cancel: CancelToken) -> TurnSetup:
        if self.parent_session_id and self.link is None:
            raise ConfigError(f"session {self.session_id} is a sub-agent's run, started by session "
                              f"{self.parent_session_id}: resume that session instead")
        config = self.rienda.config()
        agent, diagnostics = self.rienda.agent(self.agent_id, config)
        if not (self.model or agent.model) and agent.id != DEFAULT_AGENT_ID:  # a gate's policy: it never runs a model
            raise ConfigError(f"agent {agent.id} names no model ({agent.path} has no model: line): add "
                              "model: provider/model to run it, or give --model")
        if agent.hooks or agent.tools:
            self.rienda.wake_sandbox()  # workers a quiet period released start again now
        catalog = self.rienda.catalog(list(agent.tools), list(agent.hooks), cancel, config)
        for diagnostic in [*config.diagnostics, *diagnostics]:
            ui.emit(diagnostic)
        agent = declared_tools(agent, catalog, config.mcp_servers)  # MCP names checked, mcp__SERVER expanded
        check_declared(agent, catalog, NOTEBOOK_TOOL_NAMES, WHERE_THEY_EXIST)
        for diagnostic in inert_fail_closed(agent.path or agent.id, agent.fail_closed, catalog.hooks):
            ui.emit(diagnostic)
        catalog = fit_agent_tool(catalog, agent, self.rienda)
        model_id = self.model or agent.model or self._choose_model(ui)
        provider, model_name = self._provider(model_id, agent, config)
        inherited = self.link.hooks if self.link else ()
        hooks = tuple(dict.fromkeys([*(hook.name for hook in inherited), *agent.hooks]))  # a hook both declare runs once
        provider = self._recorded(provider, model_id, ui, hooks, agent.system)
        provider.preflight(model_name, agent.options, agent.path or f"the built-in agent {agent.id!r}",
                           workdir=self.rienda.workdir)
        max_turns = self._max_turns(agent, config)
        self._compaction_settings(config, ui)
        created = self.session_id is None
        writer = self._open_writer(agent, model_id)  # the last step that can fail: a failed setup saves nothing
        link = self.link
        try:
            run = RunContext(
                workdir=self.rienda.workdir,
                ui=ui,
                session={"id": self.session_id},
                agent={**agent.to_ctx(), "model": model_id},
                config=config.for_extensions(),
                subagent=link.ctx() if link else None,
                subagents=Subagents.of(self.rienda, agent, config, catalog, writer.id, ui, link, self.max_turns),
            )
        except BaseException:
            self._abandon(writer, created)
            raise
        return TurnSetup(writer.id, agent, model_id, provider, model_name, catalog,
                         self.rienda.sandbox_on_use, run, writer, self.messages, link.approvals if link else self.approvals,
                         max_turns=max_turns, inherited_hooks=link.hooks if link else (), compaction=self.compaction)

    def _abandon(self, writer: SessionWriter, created: bool) -> None:
        """A setup that failed after ``writer`` opened the session: released, and the file
        removed when this setup ``created`` it (it holds the header alone)."""
        writer.close()
        if created:
            writer.path.unlink(missing_ok=True)
            self.session_id = None

    def _provider(self, model_id: str, agent: Agent, config: Config) -> tuple[Provider, str]:
        """The model's provider and name; a model the agent file names that has none is an
        error naming the file and its ``model:`` line."""
        try:
            return provider_for(model_id, config)
        except ConfigError as exc:
            where = agent.model_where if not self.model and model_id == agent.model else None
            if where is None:
                raise
            raise ConfigError(f"{where}: {exc}") from exc

    def _compaction_settings(self, config: Config, ui: EventSink) -> None:
        """``compaction:`` of config.yaml, and its summariser."""
        settings = config.compaction
        self.compaction.settings = settings
        self.compaction.summariser = None
        if settings.model:
            try:
                provider, name = provider_for(settings.model, config)
            except ConfigError as exc:  # said as the setting at fault
                raise ConfigError(f"{config.path}: compaction.model: {exc}") from exc
            self.compaction.summariser = (self._recorded(provider, settings.model, ui), name, settings.model)

    def _recorded(self, provider: Provider, model_id: str, ui: EventSink, hooks: tuple[str, ...] = (),
                  agent_system: str | None = None) -> Provider:
        """``provider`` behind the Rienda's recording, when one is open (:mod:`..providers.recordings`)."""
        recording = self.rienda.recording
        if recording is None:
            return provider
        return RecordingProvider(provider, recording, model_id, ui, subagent=self.link.path[-1] if self.link else None,
                                 hooks=hooks, agent_system=agent_system)

    def _choose_model(self, ui: EventSink) -> str:
        """The built-in default agent's model when nothing names one; said in one line."""
        choice = choose_default_model(self.rienda.home / "config.yaml")
        ui.emit(Notify(source="rienda", title="model", body=choice.line()))
        self.model = choice.model
        return choice.model

    def _max_turns(self, agent: Agent, config: Config) -> int:
        """This conversation's override, else the agent's, else config.yaml's, else 50."""
        return self.max_turns or agent.max_turns or config.limits.max_turns or DEFAULT_MAX_TURNS

    def _open_writer(self, agent: Agent, model_id: str) -> SessionWriter:
        """The session, held for one run: created on the first, reloaded if it changed."""
        store = self.rienda.store
        if self.session_id is None:
            writer = store.create(agent.id, model_id, session_id=new_session_id(),
                                  parent=self.link.header() if self.link else None)
            self.session_id = writer.id
            return writer
        writer = store.resume(self.session_id)
        if writer.opened_size != self._known_size:
            try:
                self.restore(store.load(self.session_id))
            except Exception:
                writer.close()
                raise
        return writer
