"""The engine's front door: what every front end (CLI, kernel, magics) uses.

:class:`Rienda` binds a home, a workdir and a sandbox; :meth:`Rienda.conversation` opens a
new or resumed session of an agent, and :meth:`Conversation.run` runs one prompt in it.
Extensions are rediscovered at each run (unchanged files are not re-run), so an edited
tool or hook applies from the next prompt on; a run loads only the tools and hooks its
agent declares, within ``load_timeout`` seconds each (``config.yaml``, default 2).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .home.agents import Agent, list_agents, load_agent
from .cancel import CancelToken
from .home.config import NAME_RULE, read_config, rienda_home
from .errors import ConfigError, Interrupted, ProviderError, SessionWriteError
from .events import Diagnostic, Notify, RunEnd
from .home.extensions import DEFAULT_LOAD_TIMEOUT, Catalog, ExtensionLoader, Tool, check_declared, summary
from .ctx.host import RunContext
from .loop import RunResult, TurnSetup, run_prompt
from .sessions.messages import Message
from .providers.choice import choose_default_model
from .providers import provider_for
from .builtins.notebook import NOTEBOOK_TOOL_NAMES, WHERE_THEY_EXIST
from .sandbox.protocol import Sandbox, shared_sandbox
from .secrets import redact_config, scrub_text
from .sessions.store import LoadedSession, SessionInfo, SessionStore, SessionWriter, new_session_id
from .tools.invoke import ToolResult
from .ui import ConfirmPolicy, ScrubbingUI, UI, confirm_policy

if TYPE_CHECKING:
    from .testing.hook_call import HookInvocation
    from .testing.replay import ReplayReport

__all__ = ["DEFAULT_MAX_TURNS", "Conversation", "Rienda", "SavedExtension"]

DEFAULT_MAX_TURNS = 50
CONFIRM_ENV = "RIENDA_CONFIRM"

@dataclass(frozen=True)
class SavedExtension:
    """What :meth:`Rienda.save_extension` did: the file written, what the loader said of
    it (``problems``), and a one-line ``summary`` when it loaded."""

    path: Path
    problems: list[str]
    summary: str | None


class Rienda:
    """Rienda pointed at a home (``RIENDA_HOME``) and a workspace.

    The sandbox (``sandbox``, or the process's shared one) is taken on first use (a
    catalog, a run, a tool call), so commands that never run JavaScript start no V8
    worker; :meth:`prepare_sandbox` takes it at once, for a front end that will.

    ``extra_tools`` are built-in tools that exist only in this front end (the notebook's
    ``python`` and ``variables``, see :mod:`.builtins.notebook`): every catalog of this
    ``Rienda`` has them, no other ``Rienda`` in the process does.
    """

    def __init__(self, home: str | os.PathLike[str] | None = None, workdir: str | os.PathLike[str] = ".",
                 sandbox: Sandbox | None = None, extra_tools: Mapping[str, Tool] | None = None) -> None:
        self.home = rienda_home(home)
        self.workdir = Path(workdir).resolve()
        self.extra_tools: dict[str, Tool] = dict(extra_tools or {})
        self._sandbox = sandbox
        self._loader: ExtensionLoader | None = None
        self.store = SessionStore(self.home)

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = shared_sandbox()
        return self._sandbox

    @property
    def loader(self) -> ExtensionLoader:
        if self._loader is None:
            self._loader = ExtensionLoader(self.sandbox)
        return self._loader

    def prepare_sandbox(self) -> None:
        """Start the sandbox's V8 workers now, in the background (again, if a quiet period
        released them)."""
        prepare = getattr(self.sandbox, "prepare", None)  # the in-process sandbox has none
        if prepare is not None:
            prepare()

    # -- what exists ------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        """The checked config.yaml (ConfigError if malformed or a setting is of the wrong type)."""
        return read_config(self.home)[0]

    def config_diagnostics(self) -> list[Diagnostic]:
        """What config.yaml holds that Rienda ignores (unknown keys); ConfigError as for :meth:`config`."""
        return read_config(self.home)[1]

    def catalog(self, tools: list[str] | None = None, hooks: list[str] | None = None,
                cancel: CancelToken | None = None, config: dict[str, Any] | None = None,
                extra_tools: Mapping[str, Tool] | None = None) -> Catalog:
        """Built-in tools (with this front end's extra ones, or ``extra_tools`` instead)
        plus the user's tools and hooks: all of them, or only those named. ``config`` is the
        parsed config.yaml when the caller has it (read otherwise)."""
        timeout = _load_timeout(self.config() if config is None else config)
        extra = self.extra_tools if extra_tools is None else extra_tools
        return self.loader.discover(self.home, tools=tools, hooks=hooks, load_timeout=timeout, cancel=cancel,
                                    extra_tools=extra)

    def confirm_policy(self, explicit: ConfirmPolicy | None = None) -> ConfirmPolicy:
        """The confirm policy of this front end's runs: ``explicit`` (``--confirm``,
        ``--yes``, ``%rienda confirm``), else ``$RIENDA_CONFIRM`` (which kernel.json's
        ``env`` can carry), else config.yaml's ``confirm`` (or its older ``auto_approve``),
        else ``ask``. ConfigError for a value that is not a policy, naming where it is."""
        if explicit is not None:
            return confirm_policy(explicit, "the confirm policy")
        if os.environ.get(CONFIRM_ENV, "").strip():
            return confirm_policy(os.environ[CONFIRM_ENV], f"${CONFIRM_ENV}")
        config = self.config()
        if "confirm" in config:
            return config["confirm"]
        if "auto_approve" in config:
            return "allow" if config["auto_approve"] else "deny"
        return "ask"

    def agents(self) -> tuple[list[Agent], list[Diagnostic]]:
        """The agents, with the diagnostics of the agent files and of config.yaml."""
        config, config_diagnostics = read_config(self.home)
        agents, diagnostics = list_agents(self.home, default_model=config.get("default_model"))
        return agents, config_diagnostics + diagnostics

    def agent(self, agent_id: str) -> tuple[Agent, list[Diagnostic]]:
        return load_agent(self.home, agent_id, default_model=self.config().get("default_model"))

    def models(self) -> list[str]:
        """What a model setting can start with: each provider's prefix (``openai/``...,
        config.yaml's named endpoints too), then the models the agents name."""
        from .providers import PROVIDERS

        try:
            endpoints = self.config().get("providers") or {}
        except ConfigError:
            endpoints = {}
        prefixes = sorted(set(PROVIDERS) | {name for name in endpoints if isinstance(name, str)})
        named = sorted({agent.model for agent in self.agents()[0] if agent.model})
        return [f"{prefix}/" for prefix in prefixes] + named

    def sessions(self) -> list[SessionInfo]:
        return self.store.list()

    def resolve_session(self, session_id: str) -> str:
        """``session_id`` itself, or for ``last`` the newest saved session's id."""
        if session_id != "last":
            return session_id
        saved = self.sessions()
        if not saved:
            raise ConfigError(f"there is no saved session in {self.store.directory}")
        return saved[-1].id

    def load_session(self, session_id: str) -> LoadedSession:
        """The saved session ``session_id`` (or ``last``), read tolerantly: lines it cannot
        read are left out and named in ``warnings`` (``file:line``)."""
        return self.store.load(self.resolve_session(session_id))

    def check_model(self, model: str) -> None:
        """ConfigError unless ``model`` (``provider/model``) names a provider that can be
        set up here (its endpoint in config.yaml, if named, valid)."""
        provider_for(model, self.config())

    def save_extension(self, kind: str, name: str, source: str) -> SavedExtension:
        """Write ``source`` as ``<home>/<kind>/<name>/index.js`` (``kind``: ``tools`` or
        ``hooks``) and load it: what the loader said of the file, and a one-line summary
        when it loaded. ConfigError for a name that is not valid."""
        if kind not in ("tools", "hooks"):
            raise ValueError(f"kind must be 'tools' or 'hooks', got {kind!r}")
        if not NAME_RULE.fullmatch(name):
            raise ConfigError(f"{name!r} is not a valid name (1 to 64 letters, digits, '_' or '-')")
        path = self.home / kind / name / "index.js"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
        catalog = self.catalog()
        loaded = (catalog.tools if kind == "tools" else catalog.hooks).get(name)
        return SavedExtension(path, catalog.diagnostics_of(kind, name), summary(loaded) if loaded else None)

    # -- one tool, one hook point, a recorded session ------------------------------------------
    def call_tool(self, name: str, arguments: str | dict[str, Any], ui: UI,
                  cancel: CancelToken | None = None) -> ToolResult:
        """Run tool ``name`` once, outside any run (``rienda call``): only that tool is
        loaded; ``ctx`` has no session or agent. ConfigError naming what exists when there
        is no such tool; Interrupted when ``cancel`` stops it."""
        from .tools.invoke import invoke_tool

        catalog = self.catalog(tools=[name], hooks=[])  # the other extensions are not loaded
        if name not in catalog.tools:
            catalog = self.catalog(hooks=[])  # every tool, to say what exists and what is broken
            for diagnostic in catalog.diagnostics:
                ui.emit(diagnostic)
            raise ConfigError(f"no tool named {name!r} in {self.home / 'tools'} or the built-ins "
                              f"({', '.join(sorted(catalog.tools))})")
        run = RunContext(workdir=self.workdir, ui=ScrubbingUI.around(ui), session={"id": None},
                         agent={"id": None, "description": "", "model": None, "tools": [name], "hooks": []},
                         config=redact_config(self.config()))
        return invoke_tool(catalog.tools[name], arguments, run, self.sandbox, cancel or CancelToken())

    def hook_call(self, name: str, point: str, payload: str | dict[str, Any], *, agent_id: str = "default",
                  session_id: str | None = None) -> HookInvocation:
        """Hook ``name`` loaded and ``payload`` fitted to ``point``, ready to run as a run
        would (``rienda hook``, ``%rienda hook``); see :mod:`.testing.hook_call`."""
        from .testing.hook_call import prepare_hook_call

        return prepare_hook_call(self, name, point, payload, agent_id=agent_id, session_id=session_id)

    def replay(self, session_id: str, *, hooks: list[str] | None = None, agent_id: str | None = None,
               run_tools: bool = False, ui: UI | None = None) -> ReplayReport:
        """The saved session ``session_id`` (or ``last``) through a hook chain again, no
        model; see :mod:`.testing.replay`."""
        from .testing.replay import replay_session

        return replay_session(self, self.resolve_session(session_id), hooks=hooks, agent_id=agent_id,
                              run_tools=run_tools, ui=ui)

    def replay_file(self, path: str | os.PathLike[str], *, hooks: list[str] | None = None,
                    run_tools: bool = False, ui: UI | None = None) -> ReplayReport:
        """:meth:`replay` for a session file anywhere (the pytest plugin's folders)."""
        from .testing.replay import replay_file

        return replay_file(self, Path(path), hooks=hooks, run_tools=run_tools, ui=ui)

    def script(self, session_id: str) -> str:
        """The saved session ``session_id`` (or ``last``) as a scripted-model file."""
        from .testing.replay import session_script

        return session_script(self, self.resolve_session(session_id))

    # -- conversations -----------------------------------------------------------------------
    def conversation(self, agent_id: str = "default", session_id: str | None = None,
                     model: str | None = None) -> Conversation:
        """A new conversation with ``agent_id``, or the session ``session_id`` (or ``last``)
        resumed (its agent, unless ``agent_id`` is given explicitly as another one)."""
        if session_id is None:
            return Conversation(self, agent_id, None, [], model)
        session_id = self.resolve_session(session_id)
        loaded = self.store.load(session_id)
        header = loaded.header
        chosen = agent_id if agent_id != "default" else header.get("agent", "default")
        conversation = Conversation(self, chosen, session_id, [], model or header.get("model"))
        conversation.warnings = list(loaded.warnings)
        conversation.restore(loaded)
        return conversation


class Conversation:
    """One session: its messages in memory, its file on disk, its agent and model.

    The session file is created by the first run (a run refused before it starts, e.g.
    for an unknown hook, a missing API key or a bad option, writes nothing). A run is the session's one writer while it runs:
    a run of the same session that starts meanwhile, from any conversation in any process,
    is refused (``error``, naming the session and the pid holding it) before it writes
    anything. A run that finds the file changed since this conversation last read or wrote
    it (another conversation ran in between) reloads it first, so it goes on from the
    file's last message.
    """

    def __init__(self, rienda: Rienda, agent_id: str, session_id: str | None,
                 messages: list[Message], model: str | None) -> None:
        self.rienda = rienda
        self.agent_id = agent_id
        self.session_id = session_id
        self.messages = messages
        self.model = model
        self.warnings: list[str] = []
        self.approvals: set[tuple[str, str]] = set()  # confirms allowed for this session
        self.max_turns: int | None = None  # overrides the agent's and the configuration's
        self._known_size: int | None = None  # the file's size when this conversation last read or wrote it

    def restore(self, loaded: LoadedSession) -> None:
        """Take the messages and the approvals "for this session" of a loaded session."""
        self.messages[:] = loaded.messages
        self.approvals = {(r["title"], r["body"]) for r in loaded.records if r.get("type") == "approval"
                          and isinstance(r.get("title"), str) and isinstance(r.get("body"), str)}
        self._known_size = loaded.size

    def run(self, prompt: str, ui: UI, cancel: CancelToken | None = None) -> RunResult:
        """Run one prompt. Never raises for the run's own failures: the result's
        ``reason`` and ``error`` say what happened (bad setup is ``error`` too). Every
        event reaches ``ui`` scrubbed of secrets."""
        cancel = cancel or CancelToken()
        ui = ScrubbingUI.around(ui)
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

    def close(self) -> None:
        """Nothing to release: a run releases the session when it ends. Kept so that front
        ends can say when they are done with a conversation."""

    def _setup(self, ui: UI, cancel: CancelToken) -> TurnSetup:
        config, config_diagnostics = read_config(self.rienda.home)
        agent, diagnostics = self.rienda.agent(self.agent_id)
        if (agent.hooks or agent.tools) and self.rienda._sandbox is not None:
            self.rienda.prepare_sandbox()  # workers a quiet period released start again now
        catalog = self.rienda.catalog(list(agent.tools), list(agent.hooks), cancel, config)
        for diagnostic in config_diagnostics + diagnostics:
            ui.emit(diagnostic)
        check_declared(agent, catalog, NOTEBOOK_TOOL_NAMES, WHERE_THEY_EXIST)
        model_id = self.model or agent.model or self._choose_model(ui)
        provider, model_name = provider_for(model_id, config)
        provider.preflight(model_name, agent.options, agent.path or f"the built-in agent {agent.id!r}")
        max_turns = self._max_turns(agent, config)
        writer = self._open_writer(agent, model_id)
        run = RunContext(
            workdir=self.rienda.workdir,
            ui=ui,
            session={"id": self.session_id},
            agent={**agent.to_ctx(), "model": model_id},
            config=redact_config(config),
        )
        return TurnSetup(self.session_id, agent, model_id, provider, model_name, catalog,
                         self.rienda.sandbox, run, writer, self.messages, self.approvals,
                         max_turns=max_turns)

    def _choose_model(self, ui: UI) -> str:
        """The built-in default agent's model when nothing names one; said in one line."""
        choice = choose_default_model(self.rienda.home / "config.yaml")
        ui.emit(Notify(source="rienda", title="model", body=choice.line()))
        self.model = choice.model
        return choice.model

    def _max_turns(self, agent: Agent, config: dict[str, Any]) -> int:
        """This conversation's override, else the agent's, else config.yaml's (checked by
        :func:`.config.read_config`), else 50."""
        return self.max_turns or agent.max_turns or config.get("max_turns") or DEFAULT_MAX_TURNS

    def _open_writer(self, agent: Agent, model_id: str) -> SessionWriter:
        """The session, held for one run: created on the first, reloaded if it changed."""
        store = self.rienda.store
        if self.session_id is None:
            writer = store.create(agent.id, model_id, session_id=new_session_id())
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


def _load_timeout(config: dict[str, Any]) -> float:
    """``load_timeout`` from config.yaml (seconds a tool or hook file may take to load;
    :func:`.config.read_config` checked its type)."""
    return float(config.get("load_timeout", DEFAULT_LOAD_TIMEOUT))
