"""MCP tool names: ``mcp__SERVER__TOOL`` (Claude Code's convention, which hook authors match on).

A server name never contains ``__`` nor ends in ``_`` (:mod:`.settings` holds it), so the
first ``__`` after ``mcp__`` always ends the server's part. A declared ``mcp__SERVER``
stands for every tool of that server. Imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

__all__ = ["MCP_PREFIX", "expand_declared", "servers_wanted", "split_name", "tool_name"]

MCP_PREFIX = "mcp__"


def tool_name(server: str, tool: str) -> str:
    """The Rienda name of ``server``'s tool ``tool`` (not yet checked against the name rule)."""
    return f"{MCP_PREFIX}{server}__{tool}"


def split_name(name: str) -> tuple[str, str | None] | None:
    """``(server, tool)`` for ``mcp__SERVER__TOOL``, ``(server, None)`` for ``mcp__SERVER``,
    None for a name that is not an MCP name."""
    if not name.startswith(MCP_PREFIX) or len(name) == len(MCP_PREFIX):
        return None
    server, separator, tool = name[len(MCP_PREFIX):].partition("__")
    if not server:
        return None
    return (server, tool) if separator and tool else ((server, None) if not separator else None)


def servers_wanted(names: Iterable[str] | None, configured: Collection[str]) -> set[str]:
    """The configured servers whose tools ``names`` mention (None: all of them)."""
    if names is None:
        return set(configured)
    wanted = set()
    for name in names:
        parts = split_name(name)
        if parts is not None and parts[0] in configured:
            wanted.add(parts[0])
    return wanted


def expand_declared(declared: Iterable[str], tools: Collection[str], servers: Collection[str]) -> tuple[str, ...]:
    """An agent's ``tools:`` with each ``mcp__SERVER`` (a configured server) replaced by
    that server's tools among the names ``tools`` (sorted), in place; every other name kept
    as it is."""
    expanded: list[str] = []
    for name in declared:
        parts = split_name(name)
        if parts is not None and parts[1] is None and parts[0] in servers:
            prefix = f"{name}__"
            expanded += [tool for tool in sorted(tools) if tool.startswith(prefix) and tool not in expanded]
        elif name not in expanded:
            expanded.append(name)
    return tuple(expanded)
