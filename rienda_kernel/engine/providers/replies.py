"""Reading what a server sends besides the answer: error bodies and ``Retry-After``.

A person reads these messages: :func:`server_message` gives the server's own error text,
unescaped, on one line, short; :func:`excerpt` quotes raw data (``repr``, so garbled bytes
stay visible).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from ..common import bounded
from ..common.json_value import JSON

__all__ = ["excerpt", "retry_after", "says_invalid", "server_message", "short"]

_EXCERPT = 300
_SHORT = 200
_INVALID = re.compile(r"invalid|validation|bad.?request|unprocessable|not supported|unsupported", re.I)


def server_message(text: str) -> str:
    """The server's own words from an error body, short and on one line: ``error.message``
    (or a string ``error``, or FastAPI's ``detail``), else the body itself."""
    data = _json(text)
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return short(str(error["message"]))
    if isinstance(error, str) and error:
        return short(error)
    detail = data.get("detail") if isinstance(data, dict) else None
    if isinstance(detail, list) and detail:  # FastAPI's validation errors
        return short("; ".join(_detail(item) for item in detail))
    if isinstance(detail, str) and detail:
        return short(detail)
    return short(text) if text.strip() else "(empty response)"


def says_invalid(text: str) -> bool:
    """Whether an error body says the request itself is at fault (retrying cannot help)."""
    data = _json(text)
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        named = " ".join(str(error.get(field) or "") for field in ("type", "code"))
        return bool(_INVALID.search(named) or _INVALID.search(str(error.get("message") or "")))
    if isinstance(data, dict) and isinstance(data.get("detail"), list):
        return True  # FastAPI's request validation
    return bool(_INVALID.search(str(error or "")))


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds); None if absent."""
    lowered = {k.lower(): v for k, v in headers.items()}
    try:
        if "retry-after-ms" in lowered:
            return float(lowered["retry-after-ms"]) / 1000
        if "retry-after" in lowered:
            return float(lowered["retry-after"])
    except ValueError:
        return None  # an HTTP date: fall back to the backoff
    return None


def short(text: str) -> str:
    """``text`` on one line (runs of white space made one space), at most 200 characters."""
    text = " ".join(text.split())
    return text if len(text) <= _SHORT else text[:_SHORT - 1] + "…"


def excerpt(text: str, tail: bool = False) -> str:
    """Raw data quoted as Python would (escapes visible), at most 300 characters: its
    start, or with ``tail`` its end."""
    text = text.strip()
    if len(text) > _EXCERPT:
        text = "..." + text[-_EXCERPT:] if tail else text[:_EXCERPT] + "..."
    return repr(text)


def _json(text: str) -> JSON:
    try:
        return bounded.loads(text)
    except (ValueError, TypeError):  # not JSON, or too deep or large to read: quoted as text
        return None


def _detail(item: JSON) -> str:
    if not isinstance(item, dict):
        return str(item)
    where = ".".join(str(part) for part in item.get("loc") or ())
    return f"{where}: {item.get('msg', '')}" if where else str(item.get("msg", item))
