"""Tool calls and their results, paired the way every vendor requires.

Every vendor refuses a conversation in which a tool call has no result right after it
(OpenAI: "tool_call_ids did not have response messages"), or a result answers no call
before it, or (Anthropic) two calls share an id. A session can hold all of these: a run
killed mid-tool (SIGKILL, the OOM killer, a dead kernel) leaves calls unanswered; a torn
or damaged line can drop a call or a result; a model can repeat or omit call ids.

Contracts:
- :func:`unanswered` is every call of ``messages`` that no later result answers, in order:
  the calls a resumed run answers first, saving :func:`ended_result` for each (the session
  then says what happened, in ``rienda show`` too).
- :func:`for_vendors` is ``messages`` as a vendor may receive them: each assistant message
  followed at once by one result per call, in call order (the first result for that id
  found after it); a call with no result gets :func:`ended_result` (not saved); a result
  that answers no call (or a call already answered) is left out. Nothing else changes.
- :func:`unique_calls` gives each new call an id that is not empty and not used before in
  the conversation (nor earlier in the same answer), keeping the model's id when it is.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from dataclasses import replace

from .messages import Message, MessageMeta, ToolCall

__all__ = ["ENDED", "ended_result", "for_vendors", "unanswered", "unique_calls"]

ENDED = ("the run ended before this tool call finished (the process was stopped, killed or ran out of "
         "memory); whether the tool did its work is unknown")


def ended_result(call: ToolCall) -> Message:
    """The error result of a call whose run ended before it finished."""
    return Message.tool_result(call, ENDED, True, MessageMeta(run_ended=True))


def unanswered(messages: Sequence[Message]) -> list[ToolCall]:
    """The calls no later tool result answers, in conversation order."""
    results = _results_by_id(messages)
    missing = []
    for index, message in enumerate(messages):
        for call in message.tool_calls if message.role == "assistant" else ():
            if _take(results, call.id, index) is None:
                missing.append(call)
    return missing


def for_vendors(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with every call answered right after it (see the module's contracts)."""
    results = _results_by_id(messages)
    paired: list[Message] = []
    for index, message in enumerate(messages):
        if message.role == "tool":
            continue  # placed after its call, or answering none: left out
        paired.append(message)
        for call in message.tool_calls if message.role == "assistant" else ():
            position = _take(results, call.id, index)
            paired.append(ended_result(call) if position is None else messages[position])
    return paired


def unique_calls(calls: Iterable[ToolCall], history: Sequence[Message]) -> list[ToolCall]:
    """``calls`` with ids made unique in ``history`` and among themselves."""
    used = {call.id for message in history for call in message.tool_calls}
    used |= {message.tool_call_id for message in history if message.tool_call_id is not None}
    unique = []
    for call in calls:
        if not call.id or call.id in used:
            base, number = call.id or "call", 2
            while f"{base}_{number}" in used:
                number += 1
            call = replace(call, id=f"{base}_{number}")
        used.add(call.id)
        unique.append(call)
    return unique


def _results_by_id(messages: Sequence[Message]) -> dict[str | None, deque[int]]:
    found: dict[str | None, deque[int]] = defaultdict(deque)
    for index, message in enumerate(messages):
        if message.role == "tool":
            found[message.tool_call_id].append(index)
    return found


def _take(results: dict[str | None, deque[int]], call_id: str, after: int) -> int | None:
    """The position of the first unused result for ``call_id`` after ``after``, used up."""
    positions = results.get(call_id)
    while positions:
        position = positions.popleft()
        if position > after:
            return position
    return None
