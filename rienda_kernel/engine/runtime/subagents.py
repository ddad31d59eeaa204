"""Sub-agents: a run starts another agent's run (through the ``agent`` tool,
:mod:`..builtins.agent`) and reads its answer.

    lead run ─ model calls agent {agent, prompt} ─▶ the lead's beforeToolExecute chain
      └▶ Subagents.start ─▶ a child run of agents/<agent>.md, in a session of its own
           every point: the lead's whole chain, then the child's own hooks
      ◀─ its last assistant text (an error result: its error) ─▶ the lead's afterToolExecute chain

Contracts (``docs/agents-and-models.md#sub-agents``):

- Hooks of the lead agent run on every call of every sub-agent. A child run's chain, at
  every point, is its lead's whole chain in order (itself its own lead's chain first, so a
  grandchild is covered by both), then the child's own hooks that are not in it already
  (a hook runs once per point); one chain, under the contract's rules: the first refusal
  stops it, rewrites chain. The ``agent`` call itself passes the lead's chain like any call.
- ``ctx.subagent`` is ``{agent, depth, parentSessionId, callId}`` in every hook and tool of
  a child run, ``undefined`` in a top-level run.
- A child's events reach the lead's front end tagged with their ``depth`` (its
  ``RunStart`` naming the parent session and call); a confirm it raises goes to the same
  person, titled with the sub-agent's name, and is decided against the top-level
  session's approvals (an "allow for this session" holds for the whole tree and is
  recorded in the top-level session).
- Limits: ``agents: [...]`` in the lead's front matter is the only agents it may start
  (the tool's schema lists them as an enum); ``max_depth`` (the top-level agent's front
  matter, else config.yaml, else :data:`DEFAULT_MAX_DEPTH`) is the deepest a run of the
  tree may be, and a sub-agent's own ``max_depth`` (levels below it) only lowers it. A
  call outside them, or naming an agent that cannot be loaded, is an error result.
- The result is the child's last assistant text (capped like every result); a child
  ending in ``error`` is an error result with its message; ``interrupted`` raises
  :class:`Interrupted`, so the whole tree stops, each run's ``afterRun`` innermost first.
  The child's transcript never enters the lead's conversation.
- Sessions are linked both ways: the child's header has ``parent_session_id``,
  ``parent_call_id`` and ``depth``; the lead's tool result has ``meta.subagent``
  (``{agent, session_id}``).

The child run is made through the :class:`~.rienda.Rienda` of the lead's conversation.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, Interrupted
from ..events import Event, RunStart
from ..hooks import chain_hooks
from ..builtins.agent import DESCRIPTION, NAME, PARAMETERS, run_agent
from ..ui import UI, Answer, ScrubbingUI

if TYPE_CHECKING:
    from ..cancel import CancelToken
    from ..home.agents import Agent
    from ..tools.model import Catalog, Hook

__all__ = ["DEFAULT_MAX_DEPTH", "ChildUI", "Limit", "Link", "Subagents", "fit_agent_tool",
           "inherited_hook_names", "recorded_ctx"]

DEFAULT_MAX_DEPTH = 3


@dataclass(frozen=True)
class Limit:
    """The deepest a run of one tree may be (the top-level run is depth 0), and who said so."""

    depth: int
    set_by: str

    @classmethod
    def of(cls, agent: Agent, config: dict[str, Any], link: Link | None) -> Limit:
        """A top-level run's (its agent's ``max_depth``, config.yaml's, the default), or a
        child's: its lead's, lowered by the child's own ``max_depth``."""
        if link is not None:
            if agent.max_depth is not None and link.depth + agent.max_depth < link.limit.depth:
                return cls(link.depth + agent.max_depth, f"max_depth: {agent.max_depth} in {agent.path}, "
                                                         f"at depth {link.depth}")
            return link.limit
        if agent.max_depth is not None:
            return cls(agent.max_depth, f"max_depth: {agent.max_depth} in {agent.path or agent.id}")
        if "max_depth" in config:
            return cls(config["max_depth"], f"max_depth: {config['max_depth']} in config.yaml")
        return cls(DEFAULT_MAX_DEPTH, f"max_depth: {DEFAULT_MAX_DEPTH}, the default")


@dataclass(frozen=True)
class Link:
    """What ties a child run to the run that started it, and what it inherits."""

    parent_session_id: str
    parent_call_id: str | None
    depth: int
    path: tuple[str, ...]  # agent ids from the top-level run's down to this child's
    hooks: tuple[Hook, ...]  # the lead's whole chain, in order
    approvals: Any  # ui.Approvals: the top-level session's
    front: UI  # the top-level front end (a ScrubbingUI)
    limit: Limit
    max_turns: int | None  # the top-level conversation's override, if any

    def header(self) -> dict[str, Any]:
        """What the child's session header records of its parent."""
        return {"parent_session_id": self.parent_session_id, "parent_call_id": self.parent_call_id,
                "depth": self.depth}

    def ctx(self) -> dict[str, Any]:
        """``ctx.subagent``."""
        return {"agent": self.path[-1], "depth": self.depth, "parentSessionId": self.parent_session_id,
                "callId": self.parent_call_id}


class ChildUI(ScrubbingUI):
    """A child run's window on the top-level front end ``front`` (which scrubs): every
    event tagged with the child's depth, its ``RunStart`` with the parent session and
    call; every question titled with the sub-agent's name. Policy and person are
    ``front``'s."""

    def __init__(self, front: UI, link: Link) -> None:
        super().__init__(front)
        self.link = link

    def emit(self, event: Event) -> None:
        tagged = replace(event, depth=self.link.depth)
        if isinstance(tagged, RunStart):
            tagged = replace(tagged, parent_session_id=self.link.parent_session_id,
                             parent_call_id=self.link.parent_call_id)
        self.front.emit(tagged)

    def ask(self, title: str, body: str, cancel: CancelToken) -> Answer:
        return Answer(*self.front.ask(f"{title} (sub-agent {' › '.join(self.link.path[1:])})", body, cancel))


@dataclass(frozen=True)
class Subagents:
    """Starts the sub-agents of one run (its ``RunContext.subagents``)."""

    rienda: Any  # runtime.Rienda
    agent: Agent  # the run's agent
    session_id: str
    hooks: tuple[Hook, ...]  # the run's whole chain
    front: UI
    depth: int
    path: tuple[str, ...]
    limit: Limit
    max_turns: int | None

    @classmethod
    def of(cls, rienda: Any, agent: Agent, config: dict[str, Any], catalog: Catalog, session_id: str, ui: UI,
           link: Link | None, max_turns: int | None) -> Subagents:
        """The sub-agents of a run of ``agent`` in ``session_id`` (``ui``: its front end), a
        top-level run or, with ``link``, a child's."""
        own = [catalog.hooks[name] for name in agent.hooks]
        return cls(rienda, agent, session_id, tuple(chain_hooks(link.hooks if link else (), own)),
                   link.front if link else ui, link.depth if link else 0, link.path if link else (agent.id,),
                   Limit.of(agent, config, link), max_turns)

    def start(self, name: str, prompt: str, host: Any) -> tuple[str, bool, dict[str, Any] | None]:
        """Run agent ``name`` on ``prompt`` as a child of this run, for the call ``host``
        serves; its answer as ``(text, is_error, meta)``. Raises only Interrupted."""
        refusal = self._refusal(name)
        if refusal:
            return refusal, True, None
        try:
            self.rienda.agent(name)
        except ConfigError as exc:
            return f"cannot start sub-agent {name!r}: {exc}", True, None
        link = Link(self.session_id, host.call_id, self.depth + 1, (*self.path, name), self.hooks,
                    host.run.ui.approvals, self.front, self.limit, self.max_turns)
        conversation = self.rienda.conversation(name)
        conversation.link, conversation.max_turns = link, self.max_turns
        result = conversation.run(prompt, ChildUI(self.front, link), host.cancel)
        meta = {"subagent": {"agent": name, "session_id": result.session_id}} if result.session_id else None
        if result.reason == "interrupted":
            stop = Interrupted(f"sub-agent {name} was interrupted")
            stop.result_meta = meta  # type: ignore[attr-defined] - the loop saves it with the call's result
            raise stop
        if result.reason == "error":
            return f"sub-agent {name} failed: {result.error}", True, meta
        return result.text or f"sub-agent {name} ended without an answer", False, meta

    def _refusal(self, name: str) -> str | None:
        allowed = self.agent.agents
        if allowed is not None and name not in allowed:
            return (f"agent {self.agent.id} may not start agent {name!r}: its agents are "
                    f"{', '.join(allowed) or 'none'} (agents: in {self.agent.path})")
        if self.depth + 1 > self.limit.depth:
            return (f"cannot start sub-agent {name!r}: it would run at depth {self.depth + 1}, past the limit "
                    f"of {self.limit.depth} ({self.limit.set_by})")
        return None


def fit_agent_tool(catalog: Catalog, agent: Agent, rienda: Any) -> Catalog:
    """``catalog`` with the built-in ``agent`` tool fitted to ``agent``: the agents it may
    start as the schema's enum, each with its description. Unchanged when the agent does
    not declare the tool or a user tool shadows it. ConfigError when ``agents:`` names an
    agent that cannot be loaded."""
    tool = catalog.tools.get(NAME)
    if NAME not in agent.tools or getattr(tool, "run", None) is not run_agent:
        return catalog
    if agent.agents is None:
        choices = {found.id: found.description for found in rienda.agents()[0]}
    else:
        choices = {}
        for name in agent.agents:
            try:
                choices[name] = rienda.agent(name)[0].description
            except ConfigError as exc:
                raise ConfigError(f"{agent.path}: agents: lists {name!r}, which cannot be started: {exc}") from None
    parameters = copy.deepcopy(PARAMETERS)
    if choices:
        parameters["properties"]["agent"]["enum"] = list(choices)
    listed = "\n".join(f"- {name}: {text}" if text else f"- {name}" for name, text in choices.items())
    description = f"{DESCRIPTION}\n\nAgents:\n{listed}" if choices else f"{DESCRIPTION}\n\nNo agent may be started."
    fitted = replace(tool, description=description, parameters=parameters)
    return replace(catalog, tools={**catalog.tools, NAME: fitted})


def recorded_ctx(header: dict[str, Any]) -> dict[str, Any] | None:
    """``ctx.subagent`` as a saved sub-agent's session header records it (None: a top-level session)."""
    parent = header.get("parent_session_id")
    if not isinstance(parent, str):
        return None
    return {"agent": header.get("agent"), "depth": header.get("depth"), "parentSessionId": parent,
            "callId": header.get("parent_call_id")}


def inherited_hook_names(rienda: Any, header: dict[str, Any], load: Any = None) -> list[str]:
    """The hooks a saved sub-agent's session ran before its own: its ancestors' agents'
    hooks as they are now, the top-level one's first (empty for a top-level session).
    ``load(session_id)`` reads a session (default: from ``rienda``'s home). ConfigError
    when an ancestor's session cannot be read."""
    names: list[str] = []
    parent, seen = header.get("parent_session_id"), set()
    while isinstance(parent, str) and parent not in seen:
        seen.add(parent)
        try:
            above = (load or rienda.store.load)(parent).header
        except Exception as exc:  # noqa: BLE001 - any reason it cannot be read is said in one line
            raise ConfigError(f"session {header.get('id')} is a sub-agent's, and its lead's session {parent} "
                              f"cannot be read ({exc}); choose the chain with --hooks") from None
        names = [*rienda.agent(above.get("agent", "default"))[0].hooks, *names]
        parent = above.get("parent_session_id")
    return list(dict.fromkeys(names))
