"""What a ``%rienda`` command shows (:class:`CommandOutput`), and listings in a cell: a
heading, a table as text and as Markdown, diagnostics.

The tables of sessions, agents, tools and hooks are made here once (:func:`session_table`,
:func:`agent_table`, :func:`tool_table`, :func:`hook_table`: their columns and rows), for
every front end that lists them: ``%rienda sessions``, ``/sessions`` and ``rienda sessions``
show the same table."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..engine import Agent, BuiltinTool, Catalog, Diagnostic, Hook, McpTool, SessionInfo, Tool

__all__ = ["CommandOutput", "Table", "agent_table", "count", "escape", "hook_table", "listing", "mark",
           "markdown_table", "one_line", "session_table", "text_table", "tool_rows", "tool_table"]

Table = tuple[tuple[str, ...], list[tuple[object, ...]]]  # a table's column headers and its rows


@dataclass(frozen=True)
class CommandOutput:
    """What a command shows: ``text`` (text/plain), ``markdown`` (text/markdown, when
    richer, e.g. a table) and ``value`` (a Python value for the magics, or None)."""

    text: str
    markdown: str | None = None
    value: object = None


def count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def mark(current: bool) -> str:
    return "*" if current else ""


def one_line(value: object) -> str:
    return " ".join(str(value).split())


_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]<>|#~&])")


def escape(value: object) -> str:
    """``value`` as inline Markdown text: one line, every special character escaped
    (``|`` included, so it is safe in a table cell)."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", one_line(value))


def text_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[one_line(c) for c in row] for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(escape(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def diagnostics_block(diagnostics: Sequence[Diagnostic]) -> tuple[str, str]:
    if not diagnostics:
        return "", ""
    title = f"Diagnostics ({len(diagnostics)})"
    text = f"{title}:\n" + "\n".join("  - " + d.message.replace("\n", "\n    ") for d in diagnostics)
    markdown = f"**{title}**\n\n" + "\n".join(f"- {escape(d.message)}" for d in diagnostics)
    return text, markdown


def listing(heading: str, headers: Sequence[str], rows: Sequence[Sequence[object]],
             diagnostics: Sequence[Diagnostic], value: object, footer: Iterable[str] = ()) -> CommandOutput:
    """A heading, a table (when there are rows), footer lines, then the diagnostics: as
    text, as Markdown, and ``value`` (what the magics return)."""
    text_parts, markdown_parts = [heading], [escape(heading)]
    if rows:
        text_parts.append(text_table(headers, rows))
        markdown_parts.append(markdown_table(headers, rows))
    for line in footer:
        text_parts.append(line)
        markdown_parts.append(escape(line))
    diagnostics_text, diagnostics_markdown = diagnostics_block(diagnostics)
    if diagnostics:
        text_parts.append(diagnostics_text)
        markdown_parts.append(diagnostics_markdown)
    return CommandOutput("\n\n".join(text_parts), "\n\n".join(markdown_parts), value)


def tool_rows(catalog: Catalog, in_home: Callable[[str], str]) -> tuple[list[Tool], list[tuple[str, str, str, str]]]:
    """A catalog's tools (built-in and the user's, then each MCP server's, grouped by their
    names' ``mcp__SERVER__`` prefix) and their rows: name, description, origin, note."""
    tools = sorted(catalog.tools.values(), key=lambda tool: (isinstance(tool, McpTool), tool.name))
    rows = []
    for tool in tools:
        origin = (f"MCP server {tool.server}" if isinstance(tool, McpTool)
                  else "built-in" if isinstance(tool, BuiltinTool) else in_home(tool.path))
        shadowed = "the MCP server's tool" if tool.name.startswith("mcp__") else "the built-in"
        rows.append((tool.name, tool.description, origin, f"shadows {shadowed}" if tool.name in catalog.shadowed else ""))
    return tools, rows


def tool_table(catalog: Catalog, in_home: Callable[[str], str]) -> tuple[list[Tool], Table]:
    """:func:`tool_rows` with the columns' headers."""
    tools, rows = tool_rows(catalog, in_home)
    return tools, (("name", "description", "origin", "note"), list(rows))


def session_table(infos: Sequence[SessionInfo], current: str | None = None, *, marked: bool = False) -> Table:
    """Saved sessions as every front end lists them: id, agent, model, messages, title, and
    ``sub-agent of`` when one of them is a sub-agent's; ``marked``: a first column with ``*``
    for the ``current`` one."""
    columns: tuple[str, ...] = ("id", "agent", "model", "messages", "title")
    rows: list[tuple[object, ...]] = [(info.id, info.agent, info.model, info.messages, info.title) for info in infos]
    if any(info.parent_session_id for info in infos):  # a sub-agent's session names the session that started it
        columns += ("sub-agent of",)
        rows = [(*row, info.parent_session_id or "") for row, info in zip(rows, infos)]
    return _marked((columns, rows), [info.id == current for info in infos]) if marked else (columns, rows)


def agent_table(agents: Sequence[Agent], in_home: Callable[[str], str], current: str | None = None, *,
                marked: bool = False) -> Table:
    """Agents as every front end lists them: id, model, description, file (``built-in`` for
    the default agent); ``marked``: a first column with ``*`` for the ``current`` one."""
    rows: list[tuple[object, ...]] = [(agent.id, agent.model_label, agent.description,
                                       in_home(agent.path) if agent.path else "built-in") for agent in agents]
    table: Table = (("id", "model", "description", "file"), rows)
    return _marked(table, [agent.id == current for agent in agents]) if marked else table


def hook_table(hooks: Sequence[Hook], in_home: Callable[[str], str]) -> Table:
    """Hooks as every front end lists them: name, the points it handles, its file."""
    return ("name", "points", "path"), [(hook.name, ", ".join(hook.points), in_home(hook.path)) for hook in hooks]


def _marked(table: Table, current: Sequence[bool]) -> Table:
    columns, rows = table
    return ("", *columns), [(mark(flag), *row) for flag, row in zip(current, rows)]
