"""What the run's set-up (:mod:`.conversation`) and the sub-agents (:mod:`.subagents`)
share: :class:`RunHost`, what they ask of the :class:`~.rienda.Rienda` that made them (a
Protocol, so that neither imports the front door that imports them), and :class:`Link`
and :class:`Limit`, what ties a child run to its lead."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..common.json_value import JSONObject

if TYPE_CHECKING:
    from ..cancel import CancelToken
    from ..events import Diagnostic
    from ..home.agents import Agent
    from ..home.config import Config
    from ..providers.recordings import Recording
    from .loop import RunResult
    from ..sandbox.protocol import SandboxLike
    from ..sessions.store import SessionStore
    from ..tools.model import Catalog, Tool
    from ..tools.model import Hook
    from ..ui import Approvals, FrontEnd, ScrubbingUI

__all__ = ["DEFAULT_MAX_DEPTH", "ChildRun", "Limit", "Link", "RunHost"]

DEFAULT_MAX_DEPTH = 3


class ChildRun(Protocol):
    """A conversation as a sub-agent's run uses it: one prompt, run to its end."""

    def run(self, prompt: str, ui: FrontEnd, cancel: CancelToken | None = None) -> RunResult: ...


class RunHost(Protocol):
    """The Rienda a run is set up from (and a replay or a hook call runs against)."""

    home: Path
    workdir: Path
    store: SessionStore
    recording: Recording | None  # where every run's model requests go first, when one is open

    @property
    def sandbox(self) -> SandboxLike:
        """The sandbox, made now if it was not."""

    @property
    def sandbox_on_use(self) -> SandboxLike:
        """The sandbox, made when first used (a run without JavaScript starts no worker)."""

    def wake_sandbox(self) -> None:
        """Start again the V8 workers a quiet period released, if the sandbox exists."""

    def config(self) -> Config:
        """config.yaml, read and checked now."""

    def agent(self, agent_id: str, config: Config | None = None) -> tuple[Agent, list[Diagnostic]]:
        """Agent ``agent_id`` (ConfigError when it cannot be loaded); ``config``: config.yaml
        when the caller has it (read otherwise)."""

    def agents(self) -> tuple[list[Agent], list[Diagnostic]]:
        """Every agent of the home."""

    def catalog(self, tools: list[str] | None = None, hooks: list[str] | None = None,
                cancel: CancelToken | None = None, config: Config | None = None,
                extra_tools: Mapping[str, Tool] | None = None) -> Catalog:
        """The tools and hooks named (see :meth:`.rienda.Rienda.catalog`)."""

    def child_conversation(self, agent_id: str, link: Link, max_turns: int | None) -> ChildRun:
        """A new conversation with ``agent_id`` as a sub-agent's run under ``link``."""


@dataclass(frozen=True)
class Limit:
    """The deepest a run of one tree may be (the top-level run is depth 0), and who said so."""

    depth: int
    set_by: str

    @classmethod
    def of(cls, agent: Agent, config: Config, link: Link | None) -> Limit:
        """A top-level run's (its agent's ``max_depth``, config.yaml's, the default), or a
        child's: its lead's, lowered by the child's own ``max_depth``."""
        if link is not None:
            if agent.max_depth is not None and link.depth + agent.max_depth < link.limit.depth:
                return cls(link.depth + agent.max_depth, f"max_depth: {agent.max_depth} in {agent.path}, "
                                                         f"at depth {link.depth}")
            return link.limit
        if agent.max_depth is not None:
            return cls(agent.max_depth, f"max_depth: {agent.max_depth} in {agent.path or agent.id}")
        if config.limits.max_depth is not None:
            return cls(config.limits.max_depth, f"max_depth: {config.limits.max_depth} in config.yaml")
        return cls(DEFAULT_MAX_DEPTH, f"max_depth: {DEFAULT_MAX_DEPTH}, the default")


@dataclass(frozen=True)
class Link:
    """What ties a child run to the run that started it, and what it inherits."""

    parent_session_id: str
    parent_call_id: str | None
    depth: int
    path: tuple[str, ...]  # agent ids from the top-level run's down to this child's
    hooks: tuple[Hook, ...]  # the lead's whole chain, in order
    approvals: Approvals  # the top-level session's
    front: ScrubbingUI  # the top-level front end
    limit: Limit
    max_turns: int | None  # the top-level conversation's override, if any

    def header(self) -> JSONObject:
        """What the child's session header records of its parent."""
        return {"parent_session_id": self.parent_session_id, "parent_call_id": self.parent_call_id,
                "depth": self.depth}

    def ctx(self) -> JSONObject:
        """``ctx.subagent``."""
        return {"agent": self.path[-1], "depth": self.depth, "parentSessionId": self.parent_session_id,
                "callId": self.parent_call_id}
