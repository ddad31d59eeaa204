"""Each line a stdio MCP server writes on stdout, read as Rienda reads any foreign JSON.

The SDK (``mcp.client.stdio``) parses a line with pydantic: strict Unicode (a lone
surrogate escape fails it) and at most 128 levels. A line it cannot parse it logs with a
traceback and drops, so a banner printed a traceback at every command, and a reply it
could not read left its request waiting forever (a call until killed; a ``tools/list``
until the start bound, then reported as "no answer to initialize"). :func:`install_line_reader`
gives the SDK Rienda's reader of a line, :func:`read_line`:

- the line is JSON read by :func:`...common.bounded.loads` (at most ``MAX_DEPTH``
  levels), its lone surrogates made U+FFFD (:func:`...common.text.repair`), then the
  SDK's types;
- a reply (a line with an ``id`` and a ``result`` or an ``error``) that cannot be used
  becomes a JSON-RPC error for that ``id`` saying what was wrong: its request ends at once
  (a call as an error result naming the server, a start as a failure saying why);
- any other line (a banner, a debug print, a notification that cannot be read) is
  dropped and said in one line to the connection reading it (:data:`CURRENT_NOTE`), which
  shows it as it shows the server's own log messages.

The records the SDK, httpx, anyio and asyncio log never reach Python's fallback handler
(a ``NullHandler`` on each; a handler the embedding configured still gets them). Bytes
that are not UTF-8 become U+FFFD as they are decoded (the connection asks the SDK for
``replace``), so such a line is read like any other.
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...common import bounded
from ...common.json_value import JSON
from ...common.text import repair
from .long_lines import BoundedTextStream

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

__all__ = ["CURRENT_NOTE", "LIBRARY_LOGGERS", "install_line_reader", "read_line"]

# The connection whose server's stdout is read in this task: how it says a skipped line.
CURRENT_NOTE: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar(
    "rienda_mcp_note", default=None)
# The SDK logs under "mcp.*" and, for its client session, the bare name "client".
LIBRARY_LOGGERS = ("mcp", "client", "httpx", "httpcore", "anyio", "asyncio")
PARSE_ERROR = -32700  # JSON-RPC's code for a message that could not be read
_SHOWN = 120  # characters of a skipped line in its note


def install_line_reader() -> None:
    """Rienda's :func:`read_line` in place of the SDK's line parser, its lines read whole and
    bounded (:class:`.long_lines.BoundedTextStream`: a line past 16 MiB is reduced as it
    streams), and no library log record to Python's fallback handler. Idempotent."""
    from mcp.client import stdio

    for name in LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
            logger.addHandler(logging.NullHandler())
    if hasattr(stdio, "_parse_line"):  # mcp 2.x: the one function that reads a line
        stdio._parse_line = read_line  # noqa: SLF001 - the seam this module exists for
    if hasattr(stdio, "TextReceiveStream"):  # what its reader reads lines from: whole, bounded lines instead
        stdio.TextReceiveStream = BoundedTextStream  # the same use (iterated for text), the lines bounded


def read_line(line: str) -> SessionMessage | Exception:
    """One stdout line as the SDK's ``SessionMessage``: the message, or for a reply that
    cannot be used a JSON-RPC error for its id; any other line an Exception the SDK
    drops (said first through :data:`CURRENT_NOTE`)."""
    from mcp import types
    from mcp.shared.message import SessionMessage
    from pydantic import ValidationError

    try:
        data = repair(bounded.loads(line))
    except bounded.Unreadable as exc:
        return _unusable(line, _peeked_id(line), str(exc))
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(data, by_name=False))
    except ValidationError as exc:
        errors = exc.errors()
        where = ".".join(str(part) for part in errors[0].get("loc", ())) if errors else ""
        said = errors[0].get("msg") if errors else None
        return _unusable(line, _reply_id(data), f"{where}: {said}" if where else str(said))


def _unusable(line: str, reply_id: int | str | None, why: str) -> SessionMessage | Exception:
    from mcp import types
    from mcp.shared.message import SessionMessage

    if reply_id is not None:
        error = types.ErrorData(code=PARSE_ERROR, message=f"its reply could not be read: {why}")
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=reply_id, error=error))
    note = CURRENT_NOTE.get()
    if note is not None and line.strip():
        shown = line.strip() if len(line.strip()) <= _SHOWN else line.strip()[: _SHOWN - 3] + "..."
        note(f"rienda: skipped a line the server wrote on stdout ({why}): {repair(shown)}")
    return ValueError(why)


def _reply_id(data: JSON) -> int | str | None:
    """The id of a reply (an object with ``result`` or ``error``), else None."""
    reply_id = data.get("id") if isinstance(data, dict) and ("result" in data or "error" in data) else None
    return reply_id if isinstance(reply_id, (int, str)) else None


def _peeked_id(line: str) -> int | str | None:
    """A reply's id from a line :func:`...common.bounded.loads` refused (too deep, too
    large): read with Python's own JSON reader only to answer that request at once."""
    try:
        return _reply_id(json.loads(line))
    except (ValueError, RecursionError):
        return None
