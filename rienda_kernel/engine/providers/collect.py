"""One model response read from a provider's stream, as the loop takes it: the one door
through which any provider's text enters the engine, so it is made valid Unicode here (a
lone surrogate becomes U+FFFD, :func:`..common.text.repair`), whatever the provider.

:func:`stream_response` reads every chunk a provider yields: text and thinking are shown
as they arrive (as :class:`TextDelta` / :class:`ThinkingDelta`, re-cut so that no secret
is split across two deltas, each scrubbed on its own), tool calls, usage and vendor state
are collected, notices are passed on. A stop or any failure, a provider's own bug
included, raises :class:`Partial` holding what arrived, so the loop can save it.
"""

from __future__ import annotations

from ..cancel import CancelToken
from ..errors import AnswerCutOff
from ..events import Notify, TextDelta, ThinkingDelta
from ..hooks import ModelResponse
from ..secrets import StreamGuard
from ..common import bounded
from ..common.json_value import JSONObject
from ..common.text import repair
from ..sessions.messages import ToolCall, Usage
from ..ui import EventSink
from .base import (
    ModelRequest,
    NoticeChunk,
    Provider,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    UsageChunk,
    VendorStateChunk,
)

__all__ = ["Partial", "stream_response"]


class Partial(Exception):
    """A stream that stopped early: what arrived, and why it stopped."""

    def __init__(self, response: ModelResponse, cause: Exception) -> None:
        super().__init__(str(cause))
        self.response = response
        self.cause = cause


def stream_response(provider: Provider, request: ModelRequest, ui: EventSink, cancel: CancelToken,
                    limit: int | None = None) -> tuple[ModelResponse, Usage | None, JSONObject]:
    """Stream one response: the response, its usage and its vendor state; a stop or any
    failure (a provider's bug included) raises :class:`Partial`, whose cause the run then
    ends with once what arrived is saved. With ``limit``, a response whose text and
    thinking pass that many characters is cut off there (:class:`AnswerCutOff`), the rest
    of its stream never read: a server that ignores ``max_tokens`` cannot fill memory."""
    text: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    usage: Usage | None = None
    vendor: JSONObject = {}
    shown = _Deltas(ui)
    size = 0
    try:
        for chunk in provider.stream(request, cancel):
            cancel.raise_if_cancelled()
            if limit is not None and isinstance(chunk, (TextChunk, ThinkingChunk)):
                size += len(chunk.text)
                if size > limit:
                    raise AnswerCutOff(f"the answer passed {limit:,} characters; the rest was not read")
            if isinstance(chunk, TextChunk):
                text.append(repair(chunk.text))
                shown.add(TextDelta, text[-1])
            elif isinstance(chunk, ThinkingChunk):
                thinking.append(repair(chunk.text))
                shown.add(ThinkingDelta, thinking[-1])
            elif isinstance(chunk, ToolCallChunk):
                calls.append(_kept(chunk.call))
            elif isinstance(chunk, UsageChunk):
                usage = chunk.usage
            elif isinstance(chunk, VendorStateChunk):
                vendor.update(repair(dict(chunk.state)))
            elif isinstance(chunk, NoticeChunk):
                ui.emit(Notify(repair(chunk.source), repair(chunk.title), repair(chunk.body)))
        cancel.raise_if_cancelled()
    except Exception as exc:  # noqa: BLE001 - a stop, a provider's error or its bug: keep what arrived
        raise Partial(ModelResponse("".join(text), "".join(thinking)), exc) from exc
    finally:
        shown.flush()
    return ModelResponse("".join(text), "".join(thinking), tuple(calls)), usage, vendor


def _kept(call: ToolCall) -> ToolCall:
    """``call`` as the engine can keep it: arguments nested too deep to save, scrub or check
    (a provider's own objects) become :data:`~..common.bounded.DEEP_ARGUMENTS`, which
    the tool answers with an error result."""
    if not isinstance(call.arguments, str) and bounded.too_deep(call.arguments):
        return ToolCall(repair(call.id), repair(call.name), bounded.DEEP_ARGUMENTS)
    return ToolCall(repair(call.id), repair(call.name), repair(call.arguments))


_Delta = type[TextDelta] | type[ThinkingDelta]  # what a streamed piece is shown as


class _Deltas:
    """Streamed text and thinking on their way to the front end, re-cut so that no secret
    is split across two deltas (each delta is scrubbed on its own)."""

    def __init__(self, ui: EventSink) -> None:
        self._ui = ui
        self._guards: dict[_Delta, StreamGuard] = {TextDelta: StreamGuard(), ThinkingDelta: StreamGuard()}
        self._last: _Delta | None = None

    def add(self, kind: _Delta, piece: str) -> None:
        if self._last is not None and self._last is not kind:
            self._show(self._last, self._guards[self._last].flush())
        self._last = kind
        self._show(kind, self._guards[kind].feed(piece))

    def flush(self) -> None:
        for kind, guard in self._guards.items():
            self._show(kind, guard.flush())

    def _show(self, kind: _Delta, text: str) -> None:
        if text:
            self._ui.emit(kind(text))
