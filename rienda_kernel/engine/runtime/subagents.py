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
- A child's events reach the lead's front end tagged with their ``depth`` and their run's
  ``session_id`` (its ``RunStart`` naming the parent session and call); a confirm it raises goes to the same
  person, titled with the sub-agent's name, and is decided against the top-level
  session's approvals (an "allow for this session" holds for the whole tree and is
  recorded in the top-level session).
- Limits: ``agents: [...]`` in the lead's front matter is the only agents it may start
  (the tool's schema lists them as an enum); ``max_depth`` (the top-level agent's front
  matter, else config.yaml, else :data:`.seams.DEFAULT_MAX_DEPTH`) is the deepest a run of the
  tree may be, and a sub-agent's own ``max_depth`` (levels below it) only lowers it. A
  call outside them, or naming an agent that cannot be loaded, is an error result.
- The result is the child's last assistant text (capped like every result); a child
  ending in ``error`` is an error result with its message; ``interrupted`` is a result
  marked ``interrupted`` (holding the child's session), after which the lead's run stops
  too, so the whole tree stops, each run's ``afterRun`` innermost first.
  The child's transcript never enters the lead's conversation.
- Sessions are linked both ways: the child's header has ``parent_session_id``,
  ``parent_call_id`` and ``depth``; the lead's tool result has ``meta.subagent``
  (``{agent, session_id}``).

The child run is made through the :class:`~.rienda.Rienda` of the lead's conversation.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ..events import Event, RunEnd, RunStart
from ..hooks import chain_hooks, declared_hooks
from ..builtins.agent import DESCRIPTION, NAME, PARAMETERS, run_agent
from ..common.json_value import JSONObject
from ..sessions.messages import MessageMeta, SubagentLink
from ..sessions.records import SessionHeader
from ..tools.model import BuiltinHost, BuiltinTool, Catalog, Hook, ToolResult
from .seams import Limit, Link, RunHost
from ..ui import Answer, ScrubbingUI

if TYPE_CHECKING:
    from ..cancel import CancelToken
    from ..home.agents import Agent
    from ..home.config import Config
    from ..sessions.reading import LoadedSession
    from ..ui import Approvals

__all__ = ["ChildUI", "Subagents", "fit_agent_tool",
           "inherited_hooks", "recorded_ctx"]



class ChildUI(ScrubbingUI):
    """A child run's window on the top-level front end ``front`` (which scrubs): every
    event tagged with the child's depth and its session's id, its ``RunStart`` with the
    parent session and call; every question titled with the sub-agent's name, then put
    to ``front``, whose policy is the child's.

    The session's id is known at the child's ``RunStart``; what the child reports before
    it (while its agent is set up) is held until then and goes out first, with the id. A
    setup that fails ends in a ``RunEnd`` with no ``RunStart``: what was held goes out
    before it, and neither names a session (none was made). A run's events come in order,
    from the thread running it."""

    def __init__(self, front: ScrubbingUI, link: Link) -> None:
        super().__init__(front)
        self.link = link
        self._session_id: str | None = None
        self._held: list[Event] = []

    def emit(self, event: Event) -> None:
        if isinstance(event, RunStart):
            self._session_id = event.session_id
            event = replace(event, parent_session_id=self.link.parent_session_id,
                            parent_call_id=self.link.parent_call_id)
        elif self._session_id is None and not isinstance(event, RunEnd):
            self._held.append(event)
            return
        held, self._held = self._held, []
        for each in (*held, event):
            self.front.emit(self._tagged(each))

    def _tagged(self, event: Event) -> Event:
        """``event`` at the child's depth, with its session (a RunStart names its own)."""
        if isinstance(event, RunStart):
            return replace(event, depth=self.link.depth)
        return replace(event, depth=self.link.depth, session_id=self._session_id)

    def ask(self, title: str, body: str, cancel: CancelToken) -> Answer:
        return Answer(*self.front.ask(f"{title} (sub-agent {' › '.join(self.link.path[1:])})", body, cancel))


@dataclass(frozen=True)
class Subagents:
    """Starts the sub-agents of one run (its ``RunContext.subagents``)."""

    rienda: RunHost
    agent: Agent  # the run's agent
    session_id: str
    hooks: tuple[Hook, ...]  # the run's whole chain
    front: ScrubbingUI
    depth: int
    path: tuple[str, ...]
    limit: Limit
    max_turns: int | None

    @classmethod
    def of(cls, rienda: RunHost, agent: Agent, config: Config, catalog: Catalog, session_id: str,
           ui: ScrubbingUI, link: Link | None, max_turns: int | None) -> Subagents:
        """The sub-agents of a run of ``agent`` in ``session_id`` (``ui``: its front end), a
        top-level run or, with ``link``, a child's."""
        own = declared_hooks(catalog.hooks, agent.hooks, agent.fail_closed)
        return cls(rienda, agent, session_id, tuple(chain_hooks(link.hooks if link else (), own)),
                   link.front if link else ui, link.depth if link else 0, link.path if link else (agent.id,),
                   Limit.of(agent, config, link), max_turns)

    def start(self, name: str, prompt: str, host: BuiltinHost) -> ToolResult:
        """Run agent ``name`` on ``prompt`` as a child of this run, for the call ``host``
        serves: its answer (``meta``: the child's session), an error result saying why there
        is none, or, when the child was interrupted, an ``interrupted`` result."""
        refusal = self._refusal(name)
        if refusal:
            return ToolResult(refusal, True)
        try:
            self.rienda.agent(name)
        except ConfigError as exc:
            return ToolResult(f"cannot start sub-agent {name!r}: {exc}", True)
        if host.approvals is None:  # a run's host always has its session's approvals
            return ToolResult("the agent tool starts a sub-agent only during an agent's run", True)
        link = Link(self.session_id, host.call_id, self.depth + 1, (*self.path, name), self.hooks,
                    host.approvals, self.front, self.limit, self.max_turns)
        conversation = self.rienda.child_conversation(name, link, self.max_turns)
        result = conversation.run(prompt, ChildUI(self.front, link), host.cancel)
        meta = MessageMeta(subagent=SubagentLink(name, result.session_id)) if result.session_id else None
        if result.reason == "interrupted":
            return ToolResult(f"sub-agent {name} was interrupted", True, meta, interrupted=True)
        if result.reason == "error":
            return ToolResult(f"sub-agent {name} failed: {result.error}", True, meta)
        return ToolResult(result.text or f"sub-agent {name} ended without an answer", False, meta)

    def _refusal(self, name: str) -> str | None:
        allowed = self.agent.agents
        if allowed is not None and name not in allowed:
            return (f"agent {self.agent.id} may not start agent {name!r}: its agents are "
                    f"{', '.join(allowed) or 'none'} (agents: in {self.agent.path})")
        if self.depth + 1 > self.limit.depth:
            return (f"cannot start sub-agent {name!r}: it would run at depth {self.depth + 1}, past the limit "
                    f"of {self.limit.depth} ({self.limit.set_by})")
        return None


def fit_agent_tool(catalog: Catalog, agent: Agent, rienda: RunHost) -> Catalog:
    """``catalog`` with the built-in ``agent`` tool fitted to ``agent``: the agents it may
    start as the schema's enum, each with its description. Unchanged when the agent does
    not declare the tool or a user tool shadows it. ConfigError when ``agents:`` names an
    agent that cannot be loaded."""
    tool = catalog.tools.get(NAME)
    if NAME not in agent.tools or not (isinstance(tool, BuiltinTool) and tool.run is run_agent):
        return catalog
    if agent.agents is None:
        choices = {found.id: found.description for found in rienda.agents()[0]}
    else:
        choices = {}
        for name in agent.agents:
            try:
                choices[name] = rienda.agent(name)[0].description
            except ConfigError as exc:
                raise ConfigError(f"{agent.path}: agents: lists {name!r}, which cannot be started: {exc}") from exc
    parameters = copy.deepcopy(PARAMETERS)
    if choices:
        parameters["properties"]["agent"]["enum"] = list(choices)
    listed = "\n".join(f"- {name}: {text}" if text else f"- {name}" for name, text in choices.items())
    description = f"{DESCRIPTION}\n\nAgents:\n{listed}" if choices else f"{DESCRIPTION}\n\nNo agent may be started."
    fitted = replace(tool, description=description, parameters=parameters)
    return replace(catalog, tools={**catalog.tools, NAME: fitted})


def recorded_ctx(header: SessionHeader) -> JSONObject | None:
    """``ctx.subagent`` as a saved sub-agent's session header records it (None: a top-level session)."""
    parent = header.parent_session_id
    if parent is None:
        return None
    return {"agent": header.agent, "depth": header.depth, "parentSessionId": parent, "callId": header.parent_call_id}


def inherited_hooks(rienda: RunHost, header: SessionHeader,
                    load: Callable[[str], LoadedSession] | None = None) -> tuple[list[str], set[str]]:
    """The hooks a saved sub-agent's session ran before its own: its ancestors' agents'
    hooks as they are now, the top-level one's first (empty for a top-level session), and
    those of them any ancestor declares fail-closed. ``load(session_id)`` reads a session
    (default: from ``rienda``'s home). ConfigError when an ancestor's session cannot be read."""
    names: list[str] = []
    closed: set[str] = set()
    parent, seen = header.parent_session_id, set()
    while parent is not None and parent not in seen:
        seen.add(parent)
        try:
            above = (load or rienda.store.load)(parent).header
        except Exception as exc:  # noqa: BLE001 - any reason it cannot be read is said in one line
            raise ConfigError(f"session {header.id} is a sub-agent's, and its lead's session {parent} "
                              f"cannot be read ({exc}); choose the chain with --hooks") from exc
        agent = rienda.agent(above.agent or "default")[0]
        names = [*agent.hooks, *names]
        closed |= set(agent.fail_closed)
        parent = above.parent_session_id
    return list(dict.fromkeys(names)), closed
