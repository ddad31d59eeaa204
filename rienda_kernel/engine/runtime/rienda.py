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
from typing import TYPE_CHECKING

from ..home.agents import Agent, list_agents, load_agent
from ..cancel import CancelToken
from ..home.config import Config, check_config, rienda_home
from ..errors import ArgumentsError, ConfigError
from ..events import Diagnostic
from ..builtins.standard import BUILTIN_TOOLS
from ..home.extensions import DEFAULT_LOAD_TIMEOUT, ExtensionLoader, summary
from ..ctx.host import RunContext
from ..providers import provider_for
from ..common.hints import did_you_mean
from ..providers.recordings import Recording, record_mode
from ..common.json_value import JSONObject
from ..sandbox.protocol import SandboxLike
from ..sandbox.workers import Sandbox, shared_sandbox
from .conversation import DEFAULT_MAX_TURNS, Conversation
from .sandbox_on_use import SandboxOnUse
from .seams import Link
from ..sessions.reading import LoadedSession
from ..sessions.store import SessionInfo, SessionScan, SessionStore
from ..tools.model import NAME_RULE, Catalog, Tool, ToolResult
from ..tools.mcp.catalog import missing_tool, servers_for, with_mcp_tools
from ..tools.mcp.settings import remember_secrets
from ..ui import ConfirmPolicy, FrontEnd, ScrubbingUI, confirm_policy

if TYPE_CHECKING:
    from ..testing.hook_call import HookInvocation
    from ..testing.report import ReplayReport
    from ..tools.mcp.servers import McpServers

__all__ = ["CONFIRM_ENV", "DEFAULT_MAX_TURNS", "Conversation", "Rienda", "SavedExtension"]

CONFIRM_ENV = "RIENDA_CONFIRM"  # the environment variable holding a front end's confirm policy


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
    ``Rienda`` has them, no other ``Rienda`` in the process does. MCP servers: see :meth:`catalog`.
    """

    def __init__(self, home: str | os.PathLike[str] | None = None, workdir: str | os.PathLike[str] = ".",
                 sandbox: Sandbox | None = None, extra_tools: Mapping[str, Tool] | None = None) -> None:
        self.home = rienda_home(home)
        self.workdir = Path(workdir).resolve()
        self.extra_tools: dict[str, Tool] = dict(extra_tools or {})
        self._sandbox = sandbox
        self._loader: ExtensionLoader | None = None
        self._mcp: McpServers | None = None  # made when config.yaml names a server
        self.store = SessionStore(self.home)
        self.recording: Recording | None = None  # every run's model exchanges go through it (record())

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = shared_sandbox()
        return self._sandbox

    @property
    def sandbox_on_use(self) -> SandboxLike:
        """:attr:`sandbox`, made when one of its methods is first used: what a run and the
        extension loader hold, so that a run with no JavaScript tool or hook never starts a
        V8 worker (which would boot on the cores its first request needs)."""
        return self._sandbox if self._sandbox is not None else SandboxOnUse(lambda: self.sandbox)

    @property
    def loader(self) -> ExtensionLoader:
        if self._loader is None:
            self._loader = ExtensionLoader(self.sandbox_on_use)
        return self._loader

    def wake_sandbox(self) -> None:
        """Start again the V8 workers a quiet period released, if this Rienda's sandbox
        exists (never makes one: a run that may call JavaScript asks this)."""
        if self._sandbox is not None:
            self.prepare_sandbox()

    def prepare_sandbox(self) -> None:
        """Start the sandbox's V8 workers now, in the background (again, if a quiet period
        released them)."""
        self.sandbox.prepare()

    def close(self) -> None:
        """Stop the MCP servers this Rienda started, within seconds (it may be used again)."""
        if self._mcp is not None:
            self._mcp.close()

    # -- what exists ------------------------------------------------------------------------
    def config(self) -> Config:
        """config.yaml, read and checked now (ConfigError if malformed or a setting is of the
        wrong type): one read per call, so a caller that needs it twice passes it on. From
        now on its MCP servers' secrets are the process's (no output shows them)."""
        config = check_config(self.home)
        remember_secrets(config.mcp_servers.values())
        return config

    def config_diagnostics(self) -> list[Diagnostic]:
        """What config.yaml holds that Rienda ignores (unknown keys); ConfigError as for :meth:`config`."""
        return list(self.config().diagnostics)

    def catalog(self, tools: list[str] | None = None, hooks: list[str] | None = None,
                cancel: CancelToken | None = None, config: Config | None = None,
                extra_tools: Mapping[str, Tool] | None = None, mcp_servers: bool = False) -> Catalog:
        """Built-in tools (with this front end's extra ones, or ``extra_tools`` instead)
        plus the user's tools and hooks: all of them, or only those named. ``config`` is
        config.yaml when the caller has it (read otherwise). MCP tools: those named, or
        every server's with ``mcp_servers`` and no ``tools``: a server starts when first needed
        (:mod:`.tools.mcp`) and runs until :meth:`close`."""
        config = self.config() if config is None else config
        extra = self.extra_tools if extra_tools is None else extra_tools
        load_timeout = config.limits.load_timeout
        catalog = self.loader.discover(self.home, tools=tools, hooks=hooks, cancel=cancel,
                                       builtin_tools={**BUILTIN_TOOLS, **extra},
                                       load_timeout=DEFAULT_LOAD_TIMEOUT if load_timeout is None else load_timeout)
        if config.mcp_servers or self._mcp is not None:
            self._mcp = self._mcp or servers_for(self.workdir)
            catalog = with_mcp_tools(catalog, self._mcp, config.mcp_servers, tools, mcp_servers, cancel)
        return catalog

    def confirm_policy(self, explicit: ConfirmPolicy | None = None) -> ConfirmPolicy:
        """The confirm policy of this front end's runs: ``explicit`` (``--confirm``,
        ``--yes``, ``%rienda confirm``), else ``$RIENDA_CONFIRM`` (which kernel.json's
        ``env`` can carry), else config.yaml's ``confirm`` (or its older ``auto_approve``),
        else ``ask``. ConfigError for a value that is not a policy, naming where it is."""
        if explicit is not None:
            return confirm_policy(explicit, "the confirm policy")
        if os.environ.get(CONFIRM_ENV, "").strip():
            return confirm_policy(os.environ[CONFIRM_ENV], f"${CONFIRM_ENV}")
        return self.config().confirm or "ask"

    def agents(self) -> tuple[list[Agent], list[Diagnostic]]:
        """The agents, with the diagnostics of the agent files and of config.yaml."""
        config = self.config()
        agents, diagnostics = list_agents(self.home, default_model=config.default_model)
        return agents, [*config.diagnostics, *diagnostics]

    def agent(self, agent_id: str, config: Config | None = None) -> tuple[Agent, list[Diagnostic]]:
        """Agent ``agent_id`` (its model, when it names none, config.yaml's ``default_model``;
        ``config``: config.yaml when the caller has it, read otherwise)."""
        config = self.config() if config is None else config
        return load_agent(self.home, agent_id, default_model=config.default_model)

    def models(self) -> list[str]:
        """What a model setting can start with: each provider's prefix (``openai/``...,
        config.yaml's named endpoints too), then the models the agents name."""
        from ..providers import PROVIDERS

        try:
            endpoints = set(self.config().providers)
        except ConfigError:
            endpoints = set()
        prefixes = sorted(set(PROVIDERS) | endpoints)
        named = sorted({agent.model for agent in self.agents()[0] if agent.model})
        return [f"{prefix}/" for prefix in prefixes] + named

    def sessions(self, gate: bool = False) -> list[SessionInfo]:
        """The saved sessions, oldest first: Rienda's own (runs, chats, sub-agents), or
        with ``gate`` the sessions of ``rienda gate`` alone (other agents' decided calls)."""
        return [info for info in self.store.list() if (info.gate is not None) == gate]

    def resolve_session(self, session_id: str) -> str:
        """``session_id`` itself; for ``last`` the newest saved top-level session's id of
        Rienda's own (a sub-agent's session is never ``last``, nor a gate's); for a gate's
        session named by its agent and that agent's session id (``claude-code-<id>``), when
        no session has that id, the newest such."""
        if session_id != "last":
            from ..gate.record import named_session

            return named_session(self.store, session_id)
        return self._last(self.store.scan())[0]

    def _last(self, scan: SessionScan) -> tuple[str, list[str]]:
        """The newest usable top-level session of Rienda's own in ``scan``, and a warning for
        each file newer than it that the listing left out (the newest session may be one of
        them). ConfigError when there is none, naming the newest file left out, if one was."""
        saved = [info for info in scan.sessions if not info.parent_session_id and info.gate is None]
        if not saved:
            left = f": {scan.unusable[-1].message}" if scan.unusable else ""
            raise ConfigError(f"there is no saved session in {self.store.directory}{left}")
        last = saved[-1].id
        return last, [f"{unusable.message}; left out, so last is {last}" for unusable in scan.unusable
                      if unusable.path.stem > last]

    def _load(self, session_id: str) -> LoadedSession:
        """Session ``session_id`` (or ``last``, with :meth:`_last`'s warnings), read."""
        if session_id != "last":
            return self.store.load(self.resolve_session(session_id))
        last, warnings = self._last(self.store.scan())
        loaded = self.store.load(last)
        loaded.warnings[:0] = warnings
        return loaded

    def remove_session(self, session_id: str) -> list[str]:
        """Delete the saved session ``session_id`` (or ``last``) and its sub-agents' sessions
        (which cannot be resumed without it), children first: the ids removed.
        :class:`SessionBusy` for a session a run is writing (the ones before it are gone)."""
        session_id = self.resolve_session(session_id)
        children: dict[str, list[str]] = {}
        for info in self.sessions():
            if info.parent_session_id:
                children.setdefault(info.parent_session_id, []).append(info.id)
        order: list[str] = []

        def gather(parent: str) -> None:
            for child in children.get(parent, []):
                if child not in order:
                    gather(child)
            order.append(parent)

        gather(session_id)
        for doomed in order:
            self.store.remove(doomed)
        return order

    def load_session(self, session_id: str) -> LoadedSession:
        """The saved session ``session_id`` (or ``last``), read tolerantly: lines it cannot
        read are left out and named in ``warnings`` (``file:line``)."""
        return self._load(session_id)

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
    def find_tool(self, name: str, ui: FrontEnd) -> Tool:
        """Tool ``name``, loading only it (``rienda call``); ConfigError naming what exists
        when there is none (the diagnostics of every tool file go to ``ui`` then)."""
        config = self.config()
        catalog = self.catalog(tools=[name], hooks=[], config=config)  # the other extensions are not loaded
        if name not in catalog.tools and (problem := missing_tool(name, catalog, config.mcp_servers)):
            raise ConfigError(f"no tool named {name!r}: {problem}")
        if name not in catalog.tools:
            source = self.home / "tools" / name / "index.js"
            why = [d.message for d in catalog.diagnostics if d.path == str(source)]
            if why:  # the file is there: say why it could not be loaded, not that it does not exist
                raise ConfigError(f"tool {name!r} could not be loaded: {'; '.join(why)}")
            catalog = self.catalog(hooks=[], config=config)  # every tool, to say what exists and what is broken
            for diagnostic in catalog.diagnostics:
                ScrubbingUI.around(ui).emit(diagnostic)
            raise ConfigError(f"no tool named {name!r}{did_you_mean(name, catalog.tools)} in {self.home / 'tools'} "
                              f"or the built-ins ({', '.join(sorted(catalog.tools))})")
        return catalog.tools[name]

    def call_tool(self, tool: Tool | str, arguments: str | JSONObject, ui: FrontEnd,
                  cancel: CancelToken | None = None) -> ToolResult:
        """Run ``tool`` (from :meth:`find_tool`, or its name) once, outside any run: ``ctx``
        has no session or agent. ArgumentsError for JSON text that is not valid, too deep or
        too large, or holds a key twice; Interrupted when ``cancel`` stops it."""
        from ..common import bounded
        from ..tools.invoke import invoke_tool

        if isinstance(tool, str):
            tool = self.find_tool(tool, ui)
        if isinstance(arguments, str) and arguments.strip():  # what a person wrote: nothing dropped silently
            try:
                arguments = bounded.loads(arguments, unique_keys=True)
            except bounded.Unreadable as exc:
                raise ArgumentsError(f"the arguments for {tool.name} are {exc}") from exc

        run = RunContext(workdir=self.workdir, ui=ScrubbingUI.around(ui), session={"id": None},
                         agent={"id": None, "description": "", "model": None, "tools": [tool.name], "hooks": []},
                         config=self.config().for_extensions())
        return invoke_tool(tool, arguments, run, self.sandbox, cancel or CancelToken())

    def hook_call(self, name: str, point: str, payload: str | JSONObject, *, agent_id: str = "default",
                  session_id: str | None = None) -> HookInvocation:
        """Hook ``name`` loaded and ``payload`` fitted to ``point``, ready to run as a run
        would (``rienda hook``, ``%rienda hook``); see :mod:`.testing.hook_call`."""
        from ..testing.hook_call import prepare_hook_call

        return prepare_hook_call(self, name, point, payload, agent_id=agent_id, session_id=session_id)

    def replay(self, session_id: str, *, hooks: list[str] | None = None, agent_id: str | None = None,
               run_tools: bool = False, ui: FrontEnd | None = None) -> ReplayReport:
        """The saved session ``session_id`` (or ``last``) through a hook chain again, no
        model; see :mod:`.testing.replay`."""
        from ..testing.replay import replay_session

        return replay_session(self, self.resolve_session(session_id), hooks=hooks, agent_id=agent_id,
                              run_tools=run_tools, ui=ui)

    def replay_file(self, path: str | os.PathLike[str], *, hooks: list[str] | None = None,
                    run_tools: bool = False, ui: FrontEnd | None = None) -> ReplayReport:
        """:meth:`replay` for a session file anywhere (the pytest plugin's folders)."""
        from ..testing.replay import replay_file

        return replay_file(self, Path(path), hooks=hooks, run_tools=run_tools, ui=ui)

    def script(self, session_id: str) -> str:
        """The saved session ``session_id`` (or ``last``) as a scripted-model file."""
        from ..testing.replay import session_script

        return session_script(self, self.resolve_session(session_id))

    # -- a recording --------------------------------------------------------------------------
    def record(self, path: str | os.PathLike[str], mode: str | None = None, *, mode_given_as: str = "the mode",
               environment_first: bool = True) -> Recording:
        """From now on every model request of this Rienda's runs (the lead's, its sub-agents',
        compaction summaries) goes through the recording ``path`` (relative to the workdir),
        opened now in ``mode`` (``auto``, ``replay``, ``live``; see
        :func:`..providers.recordings.record_mode` for ``$RIENDA_RECORD_MODE`` and the order,
        ``mode_given_as`` naming the option in errors). Opening it again starts its
        answers from the first again. ConfigError for a mode that is not one, a file that
        is not a recording (naming its line), or nothing to replay."""
        chosen = record_mode(mode, mode_given_as, environment_first=environment_first)
        given = Path(path).expanduser()
        self.recording = Recording(given if given.is_absolute() else self.workdir / given, str(path), chosen)
        return self.recording

    def stop_recording(self) -> Recording | None:
        """Runs ask their models directly again; the recording that was open, if one was."""
        stopped, self.recording = self.recording, None
        return stopped

    # -- conversations -----------------------------------------------------------------------
    def conversation(self, agent_id: str = "default", session_id: str | None = None,
                     model: str | None = None, *, max_turns: int | None = None) -> Conversation:
        """A new conversation with ``agent_id``, or the session ``session_id`` (or ``last``)
        resumed (its agent, unless ``agent_id`` is given explicitly as another one).
        ``max_turns`` overrides the agent's and config.yaml's limit."""
        if session_id is None:
            return Conversation(self, agent_id, model, max_turns=max_turns)
        loaded = self._load(session_id)
        header, session_id = loaded.header, loaded.header.id
        if header.gate is not None:
            raise ConfigError(f"session {session_id} is rienda gate's record of {header.gate.get('agent')}'s calls, "
                              f"not a conversation: it cannot be resumed (rienda show or rienda replay it)")
        chosen = agent_id if agent_id != "default" else header.agent or "default"
        return Conversation(self, chosen, model or header.model or None, session_id=session_id, loaded=loaded,
                            max_turns=max_turns)

    def child_conversation(self, agent_id: str, link: Link, max_turns: int | None) -> Conversation:
        """A new conversation with ``agent_id`` as a sub-agent's run under ``link``
        (:mod:`.subagents`)."""
        return Conversation(self, agent_id, link=link, max_turns=max_turns)

