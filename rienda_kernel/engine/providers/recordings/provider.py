"""The provider a recorded run asks: its conversation's own provider, behind its recording.

:class:`RecordingProvider` takes each :class:`~..base.ModelRequest` (as the hooks left it)
to the :class:`~.recording.Recording` first. Found: a :class:`~...events.Replayed` event,
then the recorded answer streamed as a live one is (thinking, text and tool calls in
order, the vendor state, the usage the live call reported), and the model is not asked.
Not found: in ``replay`` mode the run ends with :class:`~...errors.NotInRecording`, one
line naming the cell or turn and the first difference; in ``auto`` mode a
:class:`~...events.Divergence` line (unless the request only goes on where the recording
stops: a new turn), then the model is asked, and the rest of the run is live. Every
exchange asked of the model (``auto``, ``live``) is appended once it has streamed whole; a
failed or stopped one is not kept.

The key is needed only when the model is asked: :meth:`RecordingProvider.preflight` lets a
missing key pass (but not a wrong option) unless the mode is ``live``; a request that must
be asked then fails with the provider's own line. A model's context window is read from
the recording when it holds one (a replay shows the same fill, and asks no server).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from ...cancel import CancelToken
from ...common.json_value import JSON
from ...errors import NotInRecording, ProviderError
from ...events import Divergence, Replayed
from ...ui import EventSink
from ..base import (
    Chunk,
    ModelRequest,
    Provider,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    UsageChunk,
    VendorStateChunk,
)
from ..window import Window, configured_window
from .canonical import form_key, request_form
from .recording import Miss, Recording
from .records import Answered, RecordedExchange, joined

__all__ = ["RecordingProvider"]

_PIECES = re.compile(r"\S+\s*|\s+")  # a replayed text streams word by word, as a live one arrives


class RecordingProvider(Provider):
    """``inner`` (the conversation's provider for ``model_id``) behind ``recording``; lines
    go to ``ui`` (the run's). ``subagent``: the sub-agent whose run this is, named in lines;
    ``hooks``: the hooks that run on its requests; ``agent_system``: its agent's own system
    prompt (the request's may be a hook's)."""

    def __init__(self, inner: Provider, recording: Recording, model_id: str, ui: EventSink, *,
                 subagent: str | None = None, hooks: tuple[str, ...] = (), agent_system: str | None = None) -> None:
        self.inner = inner
        self.recording = recording
        self.model_id = model_id
        self.ui = ui
        self.subagent = subagent
        self.hooks = hooks
        self.agent_system = agent_system
        self.live = False  # a request of this run was not in the recording: the rest is asked

    def preflight(self, model: str, options: Mapping[str, JSON], where: str, *, workdir: Path) -> None:
        try:
            self.inner.preflight(model, options, where, workdir=workdir)
        except ProviderError:  # a missing key: needed only if a request must be asked
            if self.recording.mode == "live":
                raise

    def context_window(self, model: str, options: Mapping[str, JSON]) -> Window | None:
        configured = configured_window(options)
        if configured is not None:
            return configured
        found, window = self.recording.window(self.model_id)
        if found:
            return window
        window = self.inner.context_window(model, options)
        if self.recording.mode != "replay":
            self.recording.add_window(self.model_id, window)
        return window

    def stream(self, request: ModelRequest, cancel: CancelToken) -> Iterator[Chunk]:
        form = request_form(self.model_id, request)
        if self.recording.mode != "live" and not self.live:
            found = self.recording.take(form_key(form))
            if found is not None:
                number, exchange = found
                usage = exchange.usage
                self.ui.emit(Replayed(self.recording.name, number, request.purpose,
                                      usage.input_tokens if usage else 0, usage.output_tokens if usage else 0))
                yield from _replayed(exchange, cancel)
                return
            miss = self.recording.miss(form, self.hooks, self.agent_system)
            self.live = True
            self._left(miss, request)
        parts: list[Answered] = []
        exchange_usage = None
        for chunk in self.inner.stream(request, cancel):
            if isinstance(chunk, (TextChunk, ThinkingChunk, ToolCallChunk, VendorStateChunk)):
                parts.append(chunk)
            elif isinstance(chunk, UsageChunk):
                exchange_usage = chunk.usage
            yield chunk
        cancel.raise_if_cancelled()
        system = self.agent_system if self.agent_system is not None and self.agent_system != request.system else None
        turn = request.purpose == "turn"
        self.recording.add(RecordedExchange(form, joined(parts), exchange_usage, self.hooks if turn else (),
                                            system if turn else None))

    def _where(self, request: ModelRequest) -> str:
        parts = [self.recording.place]
        if self.subagent:
            parts.append(f"sub-agent {self.subagent}")
        if request.purpose == "compaction":
            parts.append("its compaction summary")
        return ", ".join(parts)

    def _left(self, miss: Miss, request: ModelRequest) -> None:
        """Say that this request is not in the recording: the run's end (``replay``), or a
        divergence line (``auto``, unless it is a turn the recording never reached)."""
        where = self._where(request)
        if self.recording.mode == "replay":
            raise NotInRecording(f"{where} is not in the recording {self.recording.name}: {miss.difference}; "
                                 "replay mode never asks the model")
        if miss.new:
            return
        message = (f"{where} left the recording {self.recording.name}: {miss.difference}; "
                   "the model was asked, and the rest of this turn is live")
        self.ui.emit(Divergence(self.recording.name, where, miss.difference, True, message))


def _replayed(exchange: RecordedExchange, cancel: CancelToken) -> Iterator[Chunk]:
    """The recorded answer as chunks, text and thinking word by word, the usage last."""
    for part in exchange.answer:
        cancel.raise_if_cancelled()
        if isinstance(part, (TextChunk, ThinkingChunk)):
            kind = type(part)
            for piece in _PIECES.findall(part.text):
                yield kind(piece)
        else:
            yield part
    if exchange.usage is not None:
        yield UsageChunk(exchange.usage)
