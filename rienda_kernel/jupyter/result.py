"""What ``r = %rienda ask ...`` gives back: a turn's outcome as a Python object."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..engine import JSON, ContextFill, Message, RunEndReason, RunResult, Usage, scrub
from .notebook import display_bundle, shell_kernel

__all__ = ["ToolCallResult", "TurnResult", "current_cell"]


@dataclass(frozen=True)
class ToolCallResult:
    """One tool call of the turn: what was asked and what the model read back; for an
    ``agent`` call, the session its sub-agent's run was saved in."""

    id: str
    name: str
    arguments: JSON  # as the call's message saved them
    text: str | None
    is_error: bool | None
    subagent_session_id: str | None = None


@dataclass(frozen=True)
class TurnResult:
    """A turn's final ``text``, its ``messages``, ``tool_calls`` with results, the
    ``session_id``, the ``reason`` it ended (``end_turn``, ``interrupted``, ``error``) and
    ``context``, how full the model's window is now; ``usage`` sums what the provider
    reported for the turn's model calls (each message's ``usage`` has its own).

    Displays as the rendered answer, except in the cell that ran the turn, which already
    showed it live. Like every output, it holds no secret: each value is scrubbed as the
    cell showed it (a tool that printed an API key's value shows ``[redacted]`` here too).
    """

    text: str
    messages: list[Message]
    tool_calls: list[ToolCallResult]
    session_id: str
    reason: RunEndReason
    error: str | None = None
    shown_in: object = field(default=None, repr=False, compare=False)
    context: ContextFill | None = None  # how full the model's window is for the next turn (.percent, .window)

    @classmethod
    def from_run(cls, result: RunResult, shown_in: object = None) -> TurnResult:
        calls = [ToolCallResult(call.id, call.name, scrub(call.arguments), scrub(answer.text) if answer else None,
                                answer.is_error if answer else None, _subagent_session(answer))
                 for call, answer in result.tool_calls]
        messages = [Message.from_dict(scrub(message.to_dict())) for message in result.messages]
        return cls(scrub(result.text), messages, calls, result.session_id, result.reason, scrub(result.error), shown_in,
                   context=result.context)

    @property
    def usage(self) -> Usage:
        """The tokens the turn's model calls used, as the provider reported them, summed."""
        reported = [m.usage for m in self.messages if m.role == "assistant" and m.usage is not None]
        return Usage(sum(u.input_tokens for u in reported), sum(u.output_tokens for u in reported))

    def __str__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return self.text if self.reason == "end_turn" else f"*({self.reason})* {self.text}"

    def _ipython_display_(self) -> None:
        if self.shown_in is not None and self.shown_in == current_cell():
            return
        display_bundle({"text/plain": self.text, "text/markdown": self._repr_markdown_()})


def _subagent_session(answer: Message | None) -> str | None:
    link = answer.meta.subagent if answer is not None else None
    return link.session_id if link is not None else None


def current_cell() -> object:
    """What identifies the running cell: its execute request's id in a kernel (execution
    counts do not move when a front end runs cells without history), else the count."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return None
    kernel = shell_kernel(shell)
    if kernel is not None:
        return kernel.get_parent("shell").get("header", {}).get("msg_id")
    return shell.execution_count
