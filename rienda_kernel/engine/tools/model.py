"""What a tool is, whatever its kind, and what a run's tools and hooks are together.

- :class:`JSTool`: a user's JavaScript tool (``$RIENDA_HOME/tools/<name>/index.js``), run
  in the V8 sandbox; :class:`Hook`: a user's hook and the :data:`HOOK_POINTS` it handles.
- :class:`BuiltinTool`: a tool implemented in Python (the built-ins, the notebook tools),
  run against a :class:`BuiltinHost`; :class:`McpTool`: an MCP server's tool, the same
  shape plus the names it has on the server's side.
- :class:`ToolResult`: what the model reads back from any tool.
- :class:`Catalog`: the tools and hooks one run (or one listing) can use, with the
  diagnostics of whatever was skipped (and, for MCP servers, :class:`McpProblem`: what
  each of those diagnostics is about).

This module holds no tool's implementation: reading a home (:mod:`..home`) builds these
objects without importing any built-in, MCP or sandbox code.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..common.json_value import JSONObject
from ..events import Diagnostic, StreamName
from ..sessions.messages import MessageMeta

if TYPE_CHECKING:
    from ..cancel import CancelToken
    from ..ctx.files import Workspace
    from ..ui import Approvals

__all__ = ["HOOK_POINTS", "NAME_RULE", "BuiltinHost", "BuiltinTool", "Catalog", "Hook", "JSTool", "McpProblem", "McpTool",
           "SubagentStarter", "Tool", "ToolResult"]

# The names of agents, tools and hooks (their file or folder under the home) and of an MCP
# server's tools as Rienda names them: 1 to 64 letters, digits, "_" or "-". Anything else
# is skipped with a diagnostic.
NAME_RULE = re.compile(r"[A-Za-z0-9_-]{1,64}")

HOOK_POINTS = (
    "beforeRun",
    "afterRun",
    "beforeModelRequest",
    "afterModelResponse",
    "beforeToolExecute",
    "afterToolExecute",
    "beforeCompact",
    "afterCompact",
)


@dataclass(frozen=True)
class JSTool:
    """A user tool: ``source`` is the file's text as loaded and checked; ``parameters`` the
    JSON Schema its module exports (checked whole at load)."""

    name: str
    path: str
    source: str
    description: str
    parameters: JSONObject


@dataclass(frozen=True)
class Hook:
    """A user hook and the points it handles, in :data:`HOOK_POINTS` order.

    ``fail_closed``: the agent running it declared it so (``fail_closed: [...]`` in its front
    matter): at ``beforeToolExecute`` its failure refuses the call instead of being skipped.
    The catalog's hooks are False; a run's chain holds copies marked as its agents ask
    (:func:`..hooks.declared_hooks`)."""

    name: str
    path: str
    source: str
    points: tuple[str, ...]
    fail_closed: bool = False


class BuiltinHost(Protocol):
    """What the engine hands a built-in tool (``call_id``: the model's call it serves).

    ``subagents`` starts sub-agents during an agent's run (None elsewhere: ``rienda call``,
    replay); ``approvals`` are the confirms the run's session allowed "for this session"
    (None outside a run)."""

    @property
    def workspace(self) -> Workspace: ...

    @property
    def cancel(self) -> CancelToken: ...

    @property
    def call_id(self) -> str | None: ...

    @property
    def subagents(self) -> SubagentStarter | None: ...

    @property
    def approvals(self) -> Approvals | None: ...

    def emit_output(self, stream: StreamName, text: str) -> None:
        """Show live output (``"stdout"`` or ``"stderr"``) in the front end."""

    def emit_log(self, text: str) -> None:
        """Show a log line (as ``ctx.log`` does) in the front end."""


@dataclass(frozen=True)
class BuiltinTool:
    """A tool implemented in Python; ``parameters`` is the JSON Schema of its arguments.
    ``run`` gets the model's arguments (checked against ``parameters``) and returns
    ``(text, is_error)``, or a :class:`ToolResult` when it has more to say (``meta`` for the
    session, or that it was ``interrupted``)."""

    name: str
    description: str
    parameters: JSONObject
    run: Callable[[BuiltinHost, JSONObject], tuple[str, bool] | ToolResult]


@dataclass(frozen=True)
class McpTool:
    """A tool of the MCP server ``server``, called ``tool`` there (``name`` is
    ``mcp__SERVER__TOOL``): ``parameters`` is the tool's ``inputSchema``, ``run`` calls the
    server (:mod:`.mcp`) and returns ``(text, is_error)`` like a built-in's."""

    name: str
    description: str
    parameters: JSONObject
    run: Callable[[BuiltinHost, JSONObject], tuple[str, bool]]
    server: str = ""
    tool: str = ""


Tool = JSTool | BuiltinTool | McpTool


class SubagentStarter(Protocol):
    """Starts the sub-agents of one run (:class:`..runtime.subagents.Subagents`)."""

    def start(self, name: str, prompt: str, host: BuiltinHost) -> ToolResult:
        """Run agent ``name`` on ``prompt`` as a child of this run, for the call ``host``
        serves: its answer, an error result saying why there is none, or an
        ``interrupted`` result holding the child's session in ``meta``."""


@dataclass(frozen=True)
class ToolResult:
    """What the model reads back from a tool call.

    ``meta`` is what the session records beside the result (the ``agent`` tool: the
    sub-agent's session); the model and the hooks never see it. ``interrupted``: the tool
    was stopped before it finished (a sub-agent's run was interrupted); the run saves this
    result with its ``meta`` and then stops as at any interrupt (no ``afterToolExecute``)."""

    text: str
    is_error: bool = False
    meta: MessageMeta | None = field(default=None, compare=False)
    interrupted: bool = field(default=False, compare=False)

    def to_js(self) -> dict[str, object]:
        return {"text": self.text, "isError": self.is_error}


@dataclass(frozen=True)
class McpProblem:
    """Why an MCP server, or one of its tools, is not in a catalog: ``message`` is what its
    diagnostic says (:meth:`diagnostic`, source ``mcp:SERVER``); ``tool`` names the tool
    skipped (its name on the server), None when the server itself cannot be used (it did
    not start)."""

    server: str
    message: str
    tool: str | None = None

    def diagnostic(self) -> Diagnostic:
        return Diagnostic(f"mcp:{self.server}", self.message)


@dataclass(frozen=True)
class Catalog:
    """Everything found under one home: usable tools (built-ins included) and hooks,
    plus the diagnostics of whatever was skipped or suspicious. ``mcp_problems`` are the
    MCP servers' among them, as data (:func:`.mcp.catalog.missing_tool` reads them)."""

    home: Path
    tools: dict[str, Tool]
    hooks: dict[str, Hook]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    shadowed: tuple[str, ...] = ()
    mcp_problems: tuple[McpProblem, ...] = ()

    def diagnostics_of(self, folder: str, name: str) -> list[str]:
        """The messages about ``<folder>/<name>/index.js`` (``folder``: "tools" or "hooks"),
        e.g. why that extension was skipped."""
        return [d.message for d in self.diagnostics
                if d.path and Path(d.path).parent.name == name and Path(d.path).parent.parent.name == folder]
