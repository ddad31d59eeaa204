"""What fills a session's next request, part by part: :func:`context_use`, a :class:`ContextUse`.

Claude Code's ``/context`` says what takes a model's window; this is Rienda's, for a saved
session without running a turn (``rienda show``, ``%rienda context``, ``/context``): the
system prompt, the tool definitions, the pinned prompts (the first prompt and the ones
``pin`` keeps), the summary of a compaction, the other messages, and what is left of the
window. Every part is Rienda's estimate (:func:`..fill.estimate_tokens`), so the parts add
up; the fill a turn reports is the server's count where it gave one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..fill import estimate_message, estimate_tokens
from ..messages import Message
from .view import Compacted, request_messages

__all__ = ["ContextUse", "context_use"]


@dataclass(frozen=True)
class ContextUse:
    """Estimated tokens of each part of the next request, and the model's window (None:
    unknown)."""

    system: int
    tools: int
    pinned: int
    summary: int
    messages: int
    window: int | None

    @property
    def total(self) -> int:
        return self.system + self.tools + self.pinned + self.summary + self.messages

    def line(self) -> str:
        """``context: about 2,410 of 8,192 tokens (29 %): system prompt 120, tools 340,
        pinned 74, summary 0, messages 1,876; free 5,782`` (the window unknown: no
        percentage and no free)."""
        of = f" of {self.window:,}" if self.window else ""
        percent = f" ({round(100 * self.total / self.window)} %)" if self.window else ""
        parts = (f"system prompt {self.system:,}, tools {self.tools:,}, pinned {self.pinned:,}, summary "
                 f"{self.summary:,}, messages {self.messages:,}")
        free = f"; free {max(self.window - self.total, 0):,}" if self.window else "; the window is unknown"
        return f"context: about {self.total:,}{of} tokens{percent}: {parts}{free}"


def context_use(history: Sequence[Message], view: Compacted | None, pins: set[int], system: str, tools_json: str,
                window: int | None) -> ContextUse:
    """What the next request of ``history`` (through ``view``) holds, part by part:
    ``pins`` the prompts kept verbatim (message numbers; with a view, its head), ``system``
    the system prompt, ``tools_json`` the tool definitions as sent."""
    sent = request_messages(history, view)
    pinned_numbers = set(view.head) if view is not None else {0, *pins} & set(range(len(history)))
    pinned = sum(estimate_message(history[index]) for index in pinned_numbers if index < len(history))
    summary = sum(estimate_message(message) for message in sent if message.meta.compaction)
    everything = sum(estimate_message(message) for message in sent)
    return ContextUse(estimate_tokens(system), estimate_tokens(tools_json) if tools_json != "[]" else 0, pinned,
                      summary, everything - pinned - summary, window)
