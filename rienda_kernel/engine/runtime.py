"""The engine's front door: what every front end (CLI, kernel, magics) uses.

:class:`Rienda` binds a home, a workdir and a sandbox; :meth:`Rienda.conversation` opens a
new or resumed session of an agent, and :meth:`Conversation.run` runs one prompt in it.
Extensions are rediscovered at each run (unchanged files are not re-run), so an edited
tool or hook applies from the next prompt on; a run loads only the tools and hooks its
agent declares, within ``load_timeout`` seconds each (``config.yaml``, default 2).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from .agents import Agent, list_agents, load_agent
from .cancel import CancelToken
from .config import load_config, redact, rienda_home
from .errors import ConfigError, Interrupted
from .events import Diagnostic, RunEnd
from .extensions import DEFAULT_LOAD_TIMEOUT, Catalog, ExtensionLoader
from .host import RunContext
from .loop import RunResult, TurnSetup, run_prompt
from .messages import Message
from .providers import provider_for
from .sandbox import Sandbox
from .sessions import SessionInfo, SessionStore, new_session_id
from .ui import UI

__all__ = ["Conversation", "Rienda"]

_SHARED_SANDBOX: Sandbox | None = None
_SHARED_LOCK = threading.Lock()


def shared_sandbox() -> Sandbox:
    """One sandbox (one pool of V8 worker processes) per process, made on first use; its
    first worker starts in the background at once."""
    global _SHARED_SANDBOX
    with _SHARED_LOCK:
        if _SHARED_SANDBOX is None:
            _SHARED_SANDBOX = Sandbox()
        return _SHARED_SANDBOX


class Rienda:
    """Rienda pointed at a home (``RIENDA_HOME``) and a workspace.

    The sandbox (``sandbox``, or the process's shared one) is taken on first use (a
    catalog, a run, a tool call), so commands that never run JavaScript start no V8
    worker; :meth:`prepare_sandbox` takes it at once, for a front end that will.
    """

    def __init__(self, home: str | os.PathLike[str] | None = None, workdir: str | os.PathLike[str] = ".",
                 sandbox: Sandbox | None = None) -> None:
        self.home = rienda_home(home)
        self.workdir = Path(workdir).resolve()
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
        """Start the sandbox's V8 workers now, in the background."""
        self.sandbox  # noqa: B018 - taking it starts them

    # -- what exists ------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        """The parsed config.yaml (ConfigError if malformed)."""
        return load_config(self.home)

    def catalog(self, tools: list[str] | None = None, hooks: list[str] | None = None,
                cancel: CancelToken | None = None, config: dict[str, Any] | None = None) -> Catalog:
        """Built-in tools plus the user's tools and hooks: all of them, or only those named.
        ``config`` is the parsed config.yaml when the caller has it (read otherwise)."""
        timeout = _load_timeout(self.config() if config is None else config, self.home)
        return self.loader.discover(self.home, tools=tools, hooks=hooks, load_timeout=timeout, cancel=cancel)

    def agents(self) -> tuple[list[Agent], list[Diagnostic]]:
        return list_agents(self.home, default_model=self.config().get("default_model"))

    def agent(self, agent_id: str) -> tuple[Agent, list[Diagnostic]]:
        return load_agent(self.home, agent_id, default_model=self.config().get("default_model"))

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
        conversation = Conversation(self, chosen, session_id, loaded.messages, model or header.get("model"))
        conversation.warnings = list(loaded.warnings)
        conversation.approvals = {(r["title"], r["body"]) for r in loaded.records
                                  if r.get("type") == "approval" and "title" in r and "body" in r}
        return conversation


class Conversation:
    """One session: its messages in memory, its file on disk, its agent and model.

    The session file is created by the first run (a run refused before it starts, e.g.
    for an unknown hook, writes nothing).
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
        self._writer = None

    def run(self, prompt: str, ui: UI, cancel: CancelToken | None = None) -> RunResult:
        """Run one prompt. Never raises for the run's own failures: the result's
        ``reason`` and ``error`` say what happened (bad setup is ``error`` too)."""
        cancel = cancel or CancelToken()
        try:
            setup = self._setup(ui, cancel)
        except ConfigError as exc:
            ui.emit(RunEnd("error", str(exc)))
            return RunResult(self.session_id or "", "error", [], str(exc))
        except Interrupted:
            ui.emit(RunEnd("interrupted", None))
            return RunResult(self.session_id or "", "interrupted", [], None)
        return run_prompt(setup, prompt, cancel)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _setup(self, ui: UI, cancel: CancelToken) -> TurnSetup:
        config = self.rienda.config()
        agent, diagnostics = self.rienda.agent(self.agent_id)
        catalog = self.rienda.catalog(list(agent.tools), list(agent.hooks), cancel, config)
        for diagnostic in diagnostics:
            ui.emit(diagnostic)
        _check_declared(agent, catalog)
        model_id = self.model or agent.model
        provider, model_name = provider_for(model_id, config)
        writer = self._open_writer(agent, model_id)
        run = RunContext(
            workdir=self.rienda.workdir,
            ui=ui,
            session={"id": self.session_id},
            agent={**agent.to_ctx(), "model": model_id},
            config=redact(config),
        )
        return TurnSetup(self.session_id, agent, model_id, provider, model_name, catalog,
                         self.rienda.sandbox, run, writer, self.messages, self.approvals)

    def _open_writer(self, agent: Agent, model_id: str):
        if self._writer is None:
            if self.session_id is None:
                self.session_id = new_session_id()
                self._writer = self.rienda.store.create(agent.id, model_id, session_id=self.session_id)
            else:
                self._writer = self.rienda.store.resume(self.session_id)
        return self._writer


def _load_timeout(config: dict[str, Any], home: Path) -> float:
    """``load_timeout`` from config.yaml (seconds a tool or hook file may take to load)."""
    value = config.get("load_timeout", DEFAULT_LOAD_TIMEOUT)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigError(f"{home / 'config.yaml'}: load_timeout must be a positive number of seconds, "
                          f"got {value!r}")
    return float(value)


def _check_declared(agent: Agent, catalog: Catalog) -> None:
    """Every declared tool and hook must exist; ConfigError naming it and the agent file."""
    where = agent.path or f"the built-in agent {agent.id!r}"
    for kind, names, found, folder in (("tool", agent.tools, catalog.tools, "tools"),
                                       ("hook", agent.hooks, catalog.hooks, "hooks")):
        for name in names:
            if name in found:
                continue
            skipped = [d.message for d in catalog.diagnostics
                       if d.path and Path(d.path).parts[-2:-1] == (name,) and f"/{folder}/" in d.path]
            detail = f" (it was skipped: {'; '.join(skipped)})" if skipped else f" (no {catalog.home / folder / name / 'index.js'})"
            raise ConfigError(f"{where}: declares {kind} {name!r}, which does not exist{detail}")
