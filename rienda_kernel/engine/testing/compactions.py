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

from ..cancel import CancelToken
from ..hooks import HookChain
from ..sessions.compaction.view import Compacted, request_messages
from ..sessions.messages import Message
from ..sessions.reading import LoadedSession
from ..sessions.records import CompactionRecord
from ..sessions.seen import recover

__all__ = ["replay_compactions"]


def replay_compactions(chain: HookChain, loaded: LoadedSession, notes: list[str]) -> list[str]:
    """The differences of ``loaded``'s compactions replayed through ``chain`` (see the module
    docstring); what could not be checked goes to ``notes``."""
    records = loaded.records_of(CompactionRecord)
    if not any("beforeCompact" in hook.points or "afterCompact" in hook.points for hook in chain.hooks) and not any(
            record.by or record.hooks for record in records):
        return []  # no hook handles compaction now, and none acted then: nothing to compare
    differences: list[str] = []
    view: Compacted | None = None
    number = 0
    for record in records:
        if record.upto is None:
            continue
        number += 1
        upto = min(record.upto, len(loaded.messages))
        where = f"compaction {number} ({record.reason}, after message {upto})"
        differences += _compared(chain, record, request_messages(loaded.messages[:upto], view), where, notes)
        if record.view is not None:
            view = record.view
    return differences


def _compared(chain: HookChain, record: CompactionRecord, messages: list[Message], where: str,
              notes: list[str]) -> list[str]:
    asked = record.asked_instructions
    gate = chain.before_compact(record.reason, record.tokens_before, record.window, messages, asked, CancelToken())
    was_cancelled = record.by if record.outcome == "cancelled" else None
    if gate.cancelled_by != was_cancelled:
        return [f"{where}: {_cancelled(was_cancelled)} when recorded, {_cancelled(gate.cancelled_by)} now"]
    if gate.cancelled_by is not None:
        return []
    lines = []
    if gate.summary_by != record.summary_by:
        lines.append(f"{where}: the summary was {_supplied(record.summary_by)} when recorded, "
                     f"{_supplied(gate.summary_by)} now")
    instructions = gate.instructions or asked
    if instructions != record.instructions and record.outcome == "compacted":
        lines.append(f"{where}: the summariser's instructions now differ: {_short(record.instructions)!r} -> "
                     f"{_short(instructions)!r}")
    if record.view is not None and record.view.summary is not None:
        lines += _after(chain, record, record.view.summary, where, notes)
    return lines


def _after(chain: HookChain, record: CompactionRecord, saved: str, where: str, notes: list[str]) -> list[str]:
    """``afterCompact`` given the summary as it was before those hooks (``saved``: as kept)."""
    seen = record.saw
    given: str | None = saved
    if seen is not None and "summary" in seen:
        given = recover(seen["summary"], saved)
        if given is None:
            notes.append(f"{where}: its summary was replayed as saved, not as afterCompact was given it (its hooks "
                         "removed part of it, and what a hook removes is never written)")
            return []
    now = chain.after_compact(given or "", record.tokens_before, record.tokens_draft or 0, CancelToken())
    if (now or None) != (saved or None):
        return [f"{where}: the summary after afterCompact now differs: {_from_difference(saved, now)}"]
    return []


def _cancelled(by: str | None) -> str:
    return f"cancelled by hook {by}" if by else "not cancelled"


def _supplied(by: str | None) -> str:
    return f"supplied by hook {by}" if by else "written by the summariser"


def _from_difference(was: str, now: str) -> str:
    """Both texts from a little before where they first differ."""
    same = next((i for i, (a, b) in enumerate(zip(was, now)) if a != b), min(len(was), len(now)))
    start = max(0, same - 20)
    cut = "..." if start else ""
    return f"{cut + _short(was[start:])!r} -> {cut + _short(now[start:])!r}"


def _short(text: str | None) -> str:
    text = "" if text is None else text
    return text if len(text) <= 80 else text[:77] + "..."
