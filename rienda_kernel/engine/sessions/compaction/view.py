"""What a request holds after a compaction: a :class:`Compacted` view of the session.

The session file stays append-only: every message is kept, and a ``compaction`` record
says which are sent from then on. A view is, in order:

1. ``head``: messages kept verbatim before the summary (the first prompt, pinned prompts);
2. the summary, as one user message (:func:`summary_message`), when there is one;
3. every message from ``tail_from`` on (those saved after the compaction too), a tool
   result in ``pruned`` sent as its stub (``[pruned: NAME, N characters]``).

Each record describes the whole view (not a change to the previous one), so resuming needs
only the last record (:meth:`..reading.LoadedSession.compaction_view`). Message numbers are positions in the
session's messages (file order, records not counted). A record this reader cannot use is
skipped with a warning, as a damaged line is: the view is then the previous record's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from ...common.json_value import JSON, JSONObject

from ..messages import Message, MessageMeta

__all__ = ["SUMMARY_OPENING", "Compacted", "pruned_stub", "request_messages", "summary_message"]

SUMMARY_OPENING = "[The conversation so far was compacted by Rienda; this summary replaces its earlier messages.]\n\n"


def pruned_stub(name: str | None, characters: int) -> str:
    """The text a pruned tool result is sent as."""
    return f"[pruned: {name or 'tool'}, {characters:,} characters]"


@dataclass(frozen=True)
class Compacted:
    """A session's view after a compaction (see the module docstring). ``upto``: how many
    messages the session held when it was made; ``answers``: assistant messages folded
    into the summary (the scripted model counts its turns with them)."""

    upto: int
    tail_from: int
    head: tuple[int, ...] = ()
    summary: str | None = None
    pruned: Mapping[int, str] = field(default_factory=dict)
    answers: int = 0

    def to_record(self) -> JSONObject:
        """The fields a ``compaction`` record holds for the view."""
        return {"upto": self.upto, "tail_from": self.tail_from, "head": list(self.head), "summary": self.summary,
                "pruned": {str(index): stub for index, stub in sorted(self.pruned.items())},
                "answers": self.answers}

    @classmethod
    def from_record(cls, record: Mapping[str, JSON]) -> Compacted:
        """The view a record describes; ValueError naming the first field that is wrong."""
        upto, tail_from, answers = (_count(record, key) for key in ("upto", "tail_from", "answers"))
        head = record.get("head", [])
        if not isinstance(head, list) or not all(_is_count(index) and index < tail_from for index in head):
            raise ValueError("'head' must be a list of message numbers before 'tail_from'")
        summary = record.get("summary")
        if summary is not None and not isinstance(summary, str):
            raise ValueError("'summary' must be a string or null")
        pruned = record.get("pruned", {})
        if not isinstance(pruned, dict) or not all(key.isdigit() and isinstance(stub, str)
                                                   for key, stub in pruned.items()):
            raise ValueError("'pruned' must map message numbers to their stubs")
        if tail_from > upto:
            raise ValueError("'tail_from' is past 'upto'")
        return cls(upto, tail_from, tuple(head), summary, {int(key): stub for key, stub in pruned.items()}, answers)

    def with_summary(self, summary: str | None) -> Compacted:
        return replace(self, summary=summary)


def summary_message(summary: str, answers: int = 0) -> Message:
    """The summary as the request sends it: a user message opening with :data:`SUMMARY_OPENING`."""
    return Message("user", SUMMARY_OPENING + summary, meta=MessageMeta(compaction=True, answers=answers))


def request_messages(history: Sequence[Message], view: Compacted | None) -> list[Message]:
    """The messages a request sends for ``history`` under ``view`` (all of them without
    one). Messages from before the view's ``upto`` lose their reported usage: it measured a
    request the compaction made smaller, so the fill estimates them instead."""
    if view is None:
        return list(history)
    sent = [_unmeasured(history[index]) for index in view.head if index < len(history)]
    if view.summary is not None:
        sent.append(summary_message(view.summary, view.answers))
    for index in range(min(view.tail_from, len(history)), len(history)):
        message = history[index]
        stub = view.pruned.get(index)
        if stub is not None and message.role == "tool":
            message = replace(message, text=stub)
        sent.append(_unmeasured(message) if index < view.upto else message)
    return sent


def _unmeasured(message: Message) -> Message:
    return message if message.usage is None else replace(message, usage=None)


def _is_count(value: JSON) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _count(record: Mapping[str, JSON], key: str) -> int:
    value = record.get(key, 0 if key == "answers" else None)
    if not _is_count(value):
        raise ValueError(f"{key!r} must be a whole number >= 0, got {value!r:.40}")
    return int(value)
