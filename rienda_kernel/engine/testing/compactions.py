"""Replaying a session's compactions through a hook chain: :func:`replay_compactions`.

Each ``compaction`` record (every outcome but ``nothing``, which is not recorded) is given
to ``beforeCompact`` again with what the hooks were given when it was made: its reason, the
tokens and window, the request's messages as they were then (the session's first ``upto``
messages through the compaction before it) and the instructions it was asked with. Then
``afterCompact``, for a compaction that was made, with the summary as it was before those
hooks (kept in the record's ``saw``, :mod:`..sessions.seen`) and the tokens it was given.

What differs is one line each: cancelled then and not now (or the other way round, or by
another hook), a summary supplied by another hook (or none), other instructions for the
summariser, a different summary after ``afterCompact``. Where the record does not hold
the summary ``afterCompact`` was given (its hooks removed text, which is never written)
that is a note, as it is for a rewritten answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..cancel import CancelToken
from ..hooks import HookChain
from ..sessions.compaction.view import Compacted, request_messages
from ..sessions.reading import LoadedSession
from ..sessions.seen import recover

__all__ = ["replay_compactions"]


def replay_compactions(chain: HookChain, loaded: LoadedSession, notes: list[str]) -> list[str]:
    """The differences of ``loaded``'s compactions replayed through ``chain`` (see the module
    docstring); what could not be checked goes to ``notes``."""
    if not any("beforeCompact" in hook.points or "afterCompact" in hook.points for hook in chain.hooks) and not any(
            record.get("type") == "compaction" and (record.get("by") or record.get("hooks")) for record in loaded.records):
        return []  # no hook handles compaction now, and none acted then: nothing to compare
    differences: list[str] = []
    view: Compacted | None = None
    number = 0
    for record in loaded.records:
        if record.get("type") != "compaction" or not _whole(record.get("upto")):
            continue
        number += 1
        upto = min(record["upto"], len(loaded.messages))
        where = f"compaction {number} ({record.get('reason')}, after message {upto})"
        differences += _compared(chain, record, request_messages(loaded.messages[:upto], view), where, notes)
        if record.get("outcome") == "compacted":
            try:
                view = Compacted.from_record(record)
            except ValueError:
                notes.append(f"{where}: its record cannot be read back; the compactions after it were replayed "
                             "against the view before it")
    return differences


def _compared(chain: HookChain, record: Mapping[str, Any], messages: list[Any], where: str,
              notes: list[str]) -> list[str]:
    asked = record.get("asked_instructions") if isinstance(record.get("asked_instructions"), str) else None
    window = record.get("window") if _whole(record.get("window")) else None
    gate = chain.before_compact(str(record.get("reason")), _count(record, "tokens_before"), window, messages, asked,
                                CancelToken())
    was_cancelled = record.get("by") if record.get("outcome") == "cancelled" else None
    if gate.cancelled_by != was_cancelled:
        return [f"{where}: {_cancelled(was_cancelled)} when recorded, {_cancelled(gate.cancelled_by)} now"]
    if gate.cancelled_by is not None:
        return []
    lines = []
    if gate.summary_by != record.get("summary_by"):
        lines.append(f"{where}: the summary was {_supplied(record.get('summary_by'))} when recorded, "
                     f"{_supplied(gate.summary_by)} now")
    instructions = gate.instructions or asked
    if instructions != record.get("instructions") and record.get("outcome") == "compacted":
        lines.append(f"{where}: the summariser's instructions now differ: {_short(record.get('instructions'))!r} -> "
                     f"{_short(instructions)!r}")
    if record.get("outcome") == "compacted" and isinstance(record.get("summary"), str):
        lines += _after(chain, record, where, notes)
    return lines


def _after(chain: HookChain, record: Mapping[str, Any], where: str, notes: list[str]) -> list[str]:
    """``afterCompact`` given the summary as it was before those hooks."""
    saved = record["summary"]
    seen = record.get("saw")
    given = saved
    if isinstance(seen, dict) and "summary" in seen:
        given = recover(seen["summary"], saved)
        if given is None:
            notes.append(f"{where}: its summary was replayed as saved, not as afterCompact was given it (its hooks "
                         "removed part of it, and what a hook removes is never written)")
            return []
    now = chain.after_compact(given, _count(record, "tokens_before"), _count(record, "tokens_draft"), CancelToken())
    if (now or None) != (saved or None):
        return [f"{where}: the summary after afterCompact now differs: {_from_difference(saved, now)}"]
    return []


def _cancelled(by: Any) -> str:
    return f"cancelled by hook {by}" if by else "not cancelled"


def _supplied(by: Any) -> str:
    return f"supplied by hook {by}" if by else "written by the summariser"


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _count(record: Mapping[str, Any], key: str) -> int:
    value = record.get(key)
    return value if _whole(value) else 0


def _from_difference(was: str, now: str) -> str:
    """Both texts from a little before where they first differ."""
    same = next((i for i, (a, b) in enumerate(zip(was, now)) if a != b), min(len(was), len(now)))
    start = max(0, same - 20)
    cut = "..." if start else ""
    return f"{cut + _short(was[start:])!r} -> {cut + _short(now[start:])!r}"


def _short(text: Any) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= 80 else text[:77] + "..."
