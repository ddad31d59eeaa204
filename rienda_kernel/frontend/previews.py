"""A tool result as a person reads it, the same in every front end (``rienda run``, ``rienda
show``, a cell, a sub-agent's box).

- :func:`readable`: JSON (an object or an array, as many tools and MCP servers answer;
  or the JSON a text starts with, up to a line break, as a command's output before the
  shell tool's ``exit code`` line) pretty-printed, a container that fits on one line kept on one, an array of numbers or
  strings as many to a line as fit; any other text as it is.
- :func:`preview`: the first lines of :func:`readable`'s text, each cut to a width, and
  how many lines were left out; ``None`` for either bound shows all of it.

What the model read is never changed: these only shape what a front end prints.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..engine import JSON

__all__ = ["PREVIEW_LINES", "PREVIEW_WIDTH", "Preview", "preview", "readable"]

PREVIEW_LINES = 8    # a result's lines a run shows before "… N more lines"
PREVIEW_WIDTH = 200  # characters of one line a run shows
_JSON_AT_MOST = 1024 * 1024  # bigger text is shown as it is: not parsed for a preview
_ONE_LINE = 76  # a JSON container up to this wide stays on one line


def readable(text: str) -> str:
    """``text`` with JSON pretty-printed (2-space indent, short containers on one line): all
    of it, or the JSON it starts with (a command's output before its ``exit code`` line)."""
    found = _json_container(text)
    if found is None:
        return text
    value, rest = found
    return _pretty(value, 0) + rest


@dataclass(frozen=True)
class Preview:
    """The lines to show, and how many more lines the text has."""

    lines: list[str]
    more: int

    def more_line(self, how_to_see_all: str) -> str | None:
        """``… N more lines (how_to_see_all)``, or None when nothing was left out."""
        if not self.more:
            return None
        return f"… {self.more} more line{'s' if self.more != 1 else ''} ({how_to_see_all})"


def preview(text: str, max_lines: int | None = PREVIEW_LINES, width: int | None = PREVIEW_WIDTH) -> Preview:
    """The first ``max_lines`` lines of ``readable(text)``, each cut to ``width`` (a cut line
    ends in ``…``); ``None`` for no bound."""
    lines = readable(text).rstrip("\n").splitlines() or [""]
    shown = lines if max_lines is None else lines[:max_lines]
    if width is not None:
        shown = [line if len(line) <= width else line[:width] + "…" for line in shown]
    return Preview(shown, len(lines) - len(shown))


def _json_container(text: str) -> tuple[JSON, str] | None:
    """The object or array ``text`` starts with as JSON, and the text after it; None when
    it does not start with one."""
    stripped = text.strip()
    if len(stripped) > _JSON_AT_MOST or not stripped.startswith(("{", "[")):
        return None
    try:
        value, end = json.JSONDecoder().raw_decode(stripped)
    except (ValueError, RecursionError):
        return None
    rest = stripped[end:]
    if not (isinstance(value, (dict, list)) and value) or (rest and not rest.startswith("\n")):
        return None
    return value, rest


def _pretty(value: JSON, level: int) -> str:
    flat = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, (dict, list)) or not value or len(flat) + 2 * level <= _ONE_LINE:
        return flat
    pad, close = "  " * (level + 1), "  " * level
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(key, ensure_ascii=False)}: {_pretty(item, level + 1)}"
                 for key, item in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{close}}}"
    if not any(isinstance(item, (dict, list)) for item in value):  # scalars: as many to a line as fit
        return "[\n" + ",\n".join(pad + row for row in _rows(value, _ONE_LINE - len(pad))) + f"\n{close}]"
    items = [f"{pad}{_pretty(item, level + 1)}" for item in value]
    return "[\n" + ",\n".join(items) + f"\n{close}]"


def _rows(scalars: list[JSON], width: int) -> list[str]:
    """JSON scalars joined by ", " in rows up to ``width`` wide (a wider one alone)."""
    rows: list[str] = []
    for text in (json.dumps(item, ensure_ascii=False) for item in scalars):
        if rows and len(rows[-1]) + 2 + len(text) <= width:
            rows[-1] += ", " + text
        else:
            rows.append(text)
    return rows
