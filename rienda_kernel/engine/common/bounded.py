"""JSON from outside the engine, bounded in depth and size, with duplicate keys refused
where a person wrote it.

Legal JSON can still be pathological: arrays nested 5,000 deep make Python's reader (and
every recursive walk after it: the scrubber, the schema check, the session writer) raise
``RecursionError``; a payload of gigabytes takes the memory with it. Every boundary where
a model, a server or a user hands the engine JSON (tool-call arguments, a server's events,
session lines, ``rienda call`` and ``rienda hook`` payloads) reads it with :func:`loads`,
and a value that did not come as text (a provider's own objects) is checked with
:func:`too_deep`, so that past that point a value is at most :data:`MAX_DEPTH` levels deep.

Contracts:
- :func:`loads` returns the value, or raises :class:`Unreadable` (a ``ValueError``) whose
  message says what is wrong in a few words, ready to follow "the payload for X is":
  ``not valid JSON: ...``, ``nested more than 200 levels deep``, ``larger than 16 MiB``,
  ``holding the key 'a' twice`` (with ``unique_keys``, for what a person wrote).
- Nothing here recurses: a value of any depth is checked on an explicit stack.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from .json_value import JSON, JSONObject

__all__ = ["DEEP_ARGUMENTS", "MAX_BYTES", "MAX_DEPTH", "TOO_DEEP", "Unreadable", "loads", "too_deep"]

MAX_DEPTH = 200  # the V8 bridge's bound too (sandbox/wire.py): a value passes both or neither
MAX_BYTES = 16 * 1024 * 1024
TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep"
# What a tool call keeps of arguments a provider handed over as objects nested too deep to
# keep (they could not be saved, scrubbed or checked); the tool gets an error result.
DEEP_ARGUMENTS = f"(arguments {TOO_DEEP}; not kept)"


class Unreadable(ValueError):
    """JSON text that is not valid, too deep, too large, or repeats a key (see :func:`loads`)."""


def loads(text: str | bytes, *, max_bytes: int = MAX_BYTES, unique_keys: bool = False) -> JSON:
    """``text`` decoded, at most :data:`MAX_DEPTH` deep and ``max_bytes`` long; see the
    module's contracts."""
    if len(text) > max_bytes:
        raise Unreadable(f"larger than {_size(max_bytes)}")
    try:
        value = json.loads(text, object_pairs_hook=_unique if unique_keys else None)
    except RecursionError:  # from None: chained, the cause would keep thousands of frames alive
        raise Unreadable(TOO_DEEP) from None
    except json.JSONDecodeError as exc:
        raise Unreadable(f"not valid JSON: {exc}") from exc
    except UnicodeDecodeError as exc:  # bytes that are not UTF-8 (nor UTF-16/32)
        raise Unreadable(f"not valid JSON: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    if _nesting_possible(text) and too_deep(value):
        raise Unreadable(TOO_DEEP)
    return value


def too_deep(value: object, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` holds dicts and lists nested more than ``limit`` levels deep."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, (dict, list, tuple)):
            continue
        if depth > limit:
            return True
        children: Iterable[object] = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list, tuple)))
    return False


def _nesting_possible(text: str | bytes) -> bool:
    if isinstance(text, bytes):
        return text.count(b"[") + text.count(b"{") > MAX_DEPTH
    return text.count("[") + text.count("{") > MAX_DEPTH


def _unique(pairs: list[tuple[str, JSON]]) -> JSONObject:
    found: JSONObject = {}
    for key, value in pairs:
        if key in found:
            raise Unreadable(f"holding the key {key!r} twice (JSON keeps only the last; say it once)")
        found[key] = value
    return found


def _size(count: int) -> str:
    return f"{count // (1024 * 1024)} MiB" if count >= 1024 * 1024 else f"{count // 1024} KiB"
