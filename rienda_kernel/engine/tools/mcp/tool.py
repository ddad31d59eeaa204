"""The tool object an MCP server's tool is in a catalog: a built-in-like tool whose ``run``
calls the server.

An :class:`McpTool` is a :class:`~..builtins.standard.BuiltinTool` (name, description,
``parameters`` = the tool's ``inputSchema``, ``run(host, args) -> (text, is_error)``), so
:func:`..invoke.invoke_tool` treats it like every tool: arguments decoded and validated
against ``parameters`` first (the server is not called when they do not fit), the result
typed and capped. ``server`` and ``tool`` are its names on the server's side.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...builtins.standard import BuiltinTool

__all__ = ["McpTool"]


@dataclass(frozen=True)
class McpTool(BuiltinTool):
    """A tool of the MCP server ``server``, called ``tool`` there (``name`` is ``mcp__SERVER__TOOL``)."""

    server: str = ""
    tool: str = ""
