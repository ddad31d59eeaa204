"""What a compaction keeps, prunes and folds: :func:`plan_compaction`, by rule.

- The system prompt is never part of it (it is not a message).
- Kept verbatim: the first prompt (the task), every pinned prompt (a ``pin`` record), and
  the most recent messages up to ``keep_recent_tokens`` (at least the last answer and its
  results, whatever their size).
- Older tool results are pruned first (``[pruned: NAME, N characters]``): when that alone
  brings the request under ``target`` (an automatic compaction's), nothing is folded.
- Else every older message that is not kept is folded into the summary (with the previous
  summary, if the session was compacted before).
- The cut never separates a tool call from its result: the kept tail starts where every
  call before it has its result before it, and never with a tool result.

Pure functions over the messages: the property tests cut random histories at every point.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ..fill import estimate_message
from ..messages import Message
from .view import SUMMARY_OPENING, Compacted, pruned_stub, request_messages

__all__ = ["PRUNE_FROM", "Plan", "cut_points", "plan_compaction", "pruned_and_folded", "summary_tokens", "view_tokens"]

PRUNE_FROM = 400  # characters: an older tool result at least this long is pruned (its stub is ~40)


def pruned_and_folded(pruned: int, folded: int) -> str:
    """What a compaction did to the messages, as every front end says it (the compaction's
    line, ``rienda show``'s record): ``pruned 1 tool result, folded 12 messages into a
    summary``; a count of none is left out, and both none is ``nothing pruned or folded``."""
    done = [f"pruned {pruned:,} tool result{'s' * (pruned != 1)}"] if pruned else []
    done += [f"folded {folded:,} message{'s' * (folded != 1)} into a summary"] if folded else []
    return ", ".join(done) or "nothing pruned or folded"


@dataclass(frozen=True)
class Plan:
    """A compaction to make: the ``view`` after it (its summary still the previous one
    until the summariser writes the new), the messages newly ``folded`` into the summary
    and newly ``pruned``; ``tokens_before``/``tokens_after`` as estimated (the summary's
    own size not yet counted)."""

    view: Compacted
    folded: tuple[int, ...]
    pruned: tuple[int, ...]

    @property
    def empty(self) -> bool:
        """Nothing to prune or fold: every message is one the rules keep."""
        return not self.folded and not self.pruned


def cut_points(history: Sequence[Message]) -> list[int]:
    """Where a kept tail may start: positions whose message is not a tool result and
    before which every call has its result."""
    open_calls: set[str] = set()
    points = []
    for index, message in enumerate(history):
        if message.role != "tool" and not open_calls:
            points.append(index)
        if message.role == "assistant":
            open_calls.update(call.id for call in message.tool_calls)
        elif message.role == "tool":
            open_calls.discard(message.tool_call_id or "")
    return points


def view_tokens(history: Sequence[Message], view: Compacted | None, besides: int = 0) -> int:
    """The estimated tokens of a request for ``history`` under ``view``, plus ``besides``
    (the system prompt and tool definitions, estimated once by the caller)."""
    return sum(estimate_message(message) for message in request_messages(history, view)) + besides


def plan_compaction(history: Sequence[Message], previous: Compacted | None, pins: Collection[int],
                    keep_recent_tokens: int, *, fold: bool, target: int | None = None,
                    besides: int = 0) -> Plan:
    """The compaction of ``history`` (viewed through ``previous``): prune, and fold when
    ``fold`` or when pruning alone leaves the request above ``target`` tokens."""
    start = previous.tail_from if previous else 0
    cut = _cut(history, start, keep_recent_tokens)
    pruned = dict(previous.pruned) if previous else {}
    newly = [index for index in range(start, cut) if _prunable(history[index]) and index not in pruned
             and index not in (previous.head if previous else ())]
    answers = previous.answers if previous else 0
    summary = previous.summary if previous else None
    head = tuple(previous.head) if previous else ()
    pruning = Compacted(len(history), start, head, summary, {**pruned, **{i: _stub(history[i]) for i in newly}},
                        answers)
    if not fold and (target is None or view_tokens(history, pruning, besides) <= target):
        return Plan(pruning, (), tuple(newly))
    if cut <= start:
        return Plan(pruning, (), tuple(newly))
    kept = _head(history, head, pins, cut)
    folded = tuple(index for index in range(start, cut) if index not in kept)
    answers += sum(1 for index in folded if history[index].role == "assistant")
    view = Compacted(len(history), cut, kept, summary, {i: s for i, s in pruning.pruned.items() if i >= cut}, answers)
    return Plan(view, folded, tuple(index for index in newly if index >= cut))


def summary_tokens(summary: str) -> int:
    """The estimated tokens of the summary's message."""
    return estimate_message(Message("user", SUMMARY_OPENING + summary)) if summary else 0


def _cut(history: Sequence[Message], start: int, keep_recent_tokens: int) -> int:
    """Where the kept tail starts: the earliest cut point whose tail fits in
    ``keep_recent_tokens``, else the last cut point (the last answer and its results are
    always kept); never before ``start``."""
    points = [point for point in cut_points(history) if point > start]
    if not points:
        return start
    kept, candidate = 0, len(history)
    for index in range(len(history) - 1, start - 1, -1):
        kept += estimate_message(history[index])
        if kept > keep_recent_tokens:
            break
        candidate = index
    if candidate <= start:
        return start  # the whole tail fits: nothing to fold (planning again folds nothing)
    fitting = [point for point in points if point >= candidate]
    return fitting[0] if fitting else points[-1]


def _head(history: Sequence[Message], head: tuple[int, ...], pins: Collection[int], cut: int) -> tuple[int, ...]:
    """The messages kept before the summary: the previous head, the first prompt, and the
    pinned prompts before ``cut`` (a pin on a message folded earlier brings it back)."""
    first = next((index for index, message in enumerate(history) if message.role == "user"), None)
    chosen = set(head) | {index for index in pins if 0 <= index < cut and history[index].role == "user"}
    if first is not None and first < cut:
        chosen.add(first)
    return tuple(sorted(index for index in chosen if index < cut))


def _prunable(message: Message) -> bool:
    return message.role == "tool" and len(message.text) >= PRUNE_FROM


def _stub(message: Message) -> str:
    return pruned_stub(message.name, len(message.text))


