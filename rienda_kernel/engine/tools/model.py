"""What a tool is, whatever its kind, and what a run's tools and hooks are together.

- :class:`JSTool`: a user's JavaScript tool (``$RIENDA_HOME/tools/<name>/index.js``), run
  in the V8 sandbox; :class:`Hook`: a user's hook and the :data:`HOOK_POINTS` it handles.
- :class:`BuiltinTool`: a tool implemented in Python (the built-ins, the notebook tools),
  run against a :class:`BuiltinHost`; :class:`McpTool`: an MCP server's tool, the same
  shape plus the names it has on the server's side.
- :class:`ToolResult`: what the model reads back from any tool.
- :class:`Catalog`: the tools and hooks one run (or one listing) can use, with the
  diagnostics of whatever was skipped.

This module holds no tool's implementation: reading a home (:mod:`..home`) builds these
objects without importing any built-in, MCP or sandbox code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..events import Diagnostic

if TYPE_CHECKING:
    from ..cancel import CancelToken
    from ..ctx.files import Workspace

__all__ = ["HOOK_POINTS", "BuiltinHost", "BuiltinTool", "Catalog", "Hook", "JSTool", "McpTool", "Tool",
           "ToolResult"]

HOOK_POINTS = (
    "beforeRun",
    "afterRun",
    "beforeModelRequest",
    "afterModelResponse",
    "beforeToolExecute",
    "afterToolExecute",
)


@dataclass(frozen=True)
class JSTool:
    """A user tool: ``source`` is the file's text as loaded and checked."""

    name: str
    path: str
    source: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class Hook:
    """A user hook and the points it handles, in :data:`HOOK_POINTS` order."""

    name: str
    path: str
    source: str
    points: tuple[str, ...]


class BuiltinHost(Protocol):
    """What the engine hands a built-in tool (``call_id``: the model's call it serves)."""

    workspace: Workspace
    cancel: CancelToken
    call_id: str | None

    def emit_output(self, stream: str, text: str) -> None:
        """Show live output (``"stdout"`` or ``"stderr"``) in the front end."""

    def emit_log(self, text: str) -> None:
        """Show a log line (as ``ctx.log`` does) in the front end."""


@dataclass(frozen=True)
class BuiltinTool:
    """A tool implemented in Python; ``parameters`` is the JSON Schema of its arguments.
    ``run`` returns ``(text, is_error)``, or ``(text, is_error, meta)`` where ``meta`` is
    what the session records beside the result (never shown to the model or to hooks)."""

    name: str
    description: str
    parameters: dict
    run: Callable[[BuiltinHost, dict], tuple]


@dataclass(frozen=True)
class McpTool:
    """A tool of the MCP server ``server``, called ``tool`` there (``name`` is
    ``mcp__SERVER__TOOL``): ``parameters`` is the tool's ``inputSchema``, ``run`` calls the
    server (:mod:`.mcp`) and returns ``(text, is_error)`` like a built-in's."""

    name: str
    description: str
    parameters: dict
    run: Callable[[BuiltinHost, dict], tuple]
    server: str = ""
    tool: str = ""


Tool = JSTool | BuiltinTool | McpTool


@dataclass(frozen=True)
class ToolResult:
    """What the model reads back from a tool call."""

    text: str
    is_error: bool = False
    meta: dict[str, Any] | None = field(default=None, compare=False)  # for the session, not the model

    def to_js(self) -> dict[str, Any]:
        return {"text": self.text, "isError": self.is_error}


@dataclass(frozen=True)
class Catalog:
    """Everything found under one home: usable tools (built-ins included) and hooks,
    plus the diagnostics of whatever was skipped or suspicious."""

    home: Path
    tools: dict[str, Tool]
    hooks: dict[str, Hook]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    shadowed: tuple[str, ...] = ()

    def diagnostics_of(self, folder: str, name: str) -> list[str]:
        """The messages about ``<folder>/<name>/index.js`` (``folder``: "tools" or "hooks"),
        e.g. why that extension was skipped."""
        return [d.message for d in self.diagnostics
                if d.path and Path(d.path).parent.name == name and Path(d.path).parent.parent.name == folder]
