"""The summariser's request: a structured prompt over the messages a compaction folds.

The summary has fixed sections (:data:`SECTIONS`): the goal, decisions, the current state,
the files and variables touched, open questions. The summariser reads the previous summary
(a session compacted before) and the folded messages as a transcript; a tool result is
cut to :data:`RESULT_CHARS` characters and the transcript to ``budget`` tokens, the oldest
messages left out first (said in the transcript), so the summariser's own request fits
the window it summarises for.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..fill import estimate_tokens
from ..messages import Message

__all__ = ["RESULT_CHARS", "SECTIONS", "SYSTEM", "summary_prompt", "transcript"]

RESULT_CHARS = 1_000
SECTIONS = ("Goal", "Decisions", "State", "Files and variables", "Open questions")
SYSTEM = ("You summarise a conversation between a user and an AI agent so that the agent can go on "
          "without it. Write only the summary, in the sections asked for, as short lists. Keep names, "
          "paths, numbers and the user's instructions exactly; leave out greetings and repetition.")


def summary_prompt(previous: str | None, folded: Sequence[Message], instructions: str | None, budget: int) -> str:
    """The user message the summariser answers."""
    sections = "\n".join(f"## {name}" for name in SECTIONS)
    parts = [f"Summarise the conversation below in these sections:\n\n{sections}\n"]
    if instructions:
        parts.append(f"Instructions for this summary:\n{instructions}\n")
    if previous:
        parts.append(f"The summary of what came before it:\n<summary>\n{previous}\n</summary>\n")
    parts.append(f"<conversation>\n{transcript(folded, budget)}\n</conversation>")
    return "\n".join(parts)


def transcript(messages: Sequence[Message], budget: int) -> str:
    """``messages`` as text, newest kept first within ``budget`` tokens."""
    lines: list[str] = []
    used = 0
    for index in range(len(messages) - 1, -1, -1):
        line = _line(messages[index])
        cost = estimate_tokens(line)
        if used + cost > budget and lines:
            lines.append(f"[{index + 1} earlier message(s) left out]")
            break
        lines.append(line if used + cost <= budget else line[: max(200, budget * 3)])
        used += cost
    return "\n".join(reversed(lines))


def _line(message: Message) -> str:
    if message.role == "user":
        return f"User: {message.text}"
    if message.role == "tool":
        text = message.text if len(message.text) <= RESULT_CHARS else (
            message.text[:RESULT_CHARS] + f" [… {len(message.text) - RESULT_CHARS:,} more characters]")
        return f"Result of {message.name or 'a tool'}{' (error)' if message.is_error else ''}: {text}"
    calls = "".join(f"\n  calls {call.name}({_arguments(call.arguments)})" for call in message.tool_calls)
    return f"Assistant: {message.text}{calls}"


def _arguments(arguments: object) -> str:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= 300 else text[:300] + " …"
