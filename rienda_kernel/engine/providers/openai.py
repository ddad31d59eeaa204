"""OpenAI's Chat Completions API (and servers that speak it), streamed over httpx.

``openai/<model>`` posts to ``{base_url}/chat/completions`` with ``stream: true`` and turns
the server-sent events back into chunks: ``delta.content`` -> :class:`TextChunk`,
``delta.reasoning_content`` (or ``reasoning``) -> :class:`ThinkingChunk`, tool calls (their
``arguments`` assembled from pieces, by ``index``) -> one :class:`ToolCallChunk` each at the
end, and the final ``usage`` -> :class:`UsageChunk`. The stream must end with
``data: [DONE]``; an answer cut off at the length limit ends the run with an error saying
so (the text so far is saved).

The key comes from ``api_key_env`` (``OPENAI_API_KEY``), the base URL from ``base_url`` or
else ``OPENAI_BASE_URL`` (default ``https://api.openai.com/v1``). Retries, timeouts and
cancellation are :class:`~.streaming.HttpProvider`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..cancel import CancelToken
from ..errors import ProviderError
from ..messages import Message, ToolCall, Usage
from .base import (
    Chunk,
    ModelRequest,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    UsageChunk,
)
from .streaming import (
    EventReader,
    HttpProvider,
    decode_arguments,
    decode_json,
    redact,
    server_message,
)

__all__ = ["OpenAIProvider", "request_body"]


class OpenAIProvider(HttpProvider):
    """A Chat Completions endpoint (see the module docstring)."""

    api = "openai"
    key_env = "OPENAI_API_KEY"
    base_url_env = "OPENAI_BASE_URL"
    default_base_url = "https://api.openai.com/v1"
    path = "/chat/completions"

    def stream(self, request: ModelRequest, cancel: CancelToken) -> Iterator[Chunk]:
        key = self.api_key(request.model)
        exchange = self.open(request_body(request), key, cancel, {"Accept": "text/event-stream"})
        try:
            yield from _parse(EventReader(exchange, key), key)
        finally:
            exchange.abandon()


def request_body(request: ModelRequest) -> dict[str, Any]:
    """The Chat Completions request for ``request`` (streamed, with usage)."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for message in request.messages:
        messages.append(_wire_message(message))
    body: dict[str, Any] = {
        "model": request.model,
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": messages,
    }
    if request.tools:
        body["tools"] = [tool.as_function() for tool in request.tools]
    return body


def _wire_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.text}
    if message.role == "assistant":
        wire: dict[str, Any] = {"role": "assistant", "content": message.text}
        if message.tool_calls:
            wire["content"] = message.text or None
            wire["tool_calls"] = [
                {"id": call.id, "type": "function",
                 "function": {"name": call.name,
                              "arguments": call.arguments if isinstance(call.arguments, str)
                              else json.dumps(call.arguments, ensure_ascii=False)}}
                for call in message.tool_calls
            ]
        return wire
    if message.role == "user":
        return {"role": "user", "content": message.text}
    raise ProviderError(f"cannot send a message with role {message.role!r} to an OpenAI model")


# -- the stream ----------------------------------------------------------------------------


def _parse(reader: EventReader, key: str) -> Iterator[Chunk]:
    """Chunks from the server-sent events, until ``data: [DONE]``."""
    calls: dict[int, dict[str, Any]] = {}
    usage: Usage | None = None
    finish: str | None = None
    for _, payload in reader.events():
        if payload.strip() == "[DONE]":
            break
        chunk = decode_json(payload, key)
        if chunk.get("error"):
            raise ProviderError(f"the server reported an error mid-stream: {redact(server_message(payload), key)}")
        if isinstance(chunk.get("usage"), dict):
            raw = chunk["usage"]
            usage = Usage(input_tokens=int(raw.get("prompt_tokens") or 0),
                          output_tokens=int(raw.get("completion_tokens") or 0))
        for choice in chunk.get("choices") or ():
            delta = (choice or {}).get("delta") or {}
            finish = (choice or {}).get("finish_reason") or finish
            thinking = delta.get("reasoning_content")
            if thinking is None:
                thinking = delta.get("reasoning")
            if isinstance(thinking, str) and thinking:
                yield ThinkingChunk(thinking)
            text = delta.get("content")
            if isinstance(text, str) and text:
                yield TextChunk(text)
            for position, piece in enumerate(delta.get("tool_calls") or ()):
                _add_piece(calls, position, piece)
    else:
        raise ProviderError(f"the stream ended before data: [DONE]; the last the server sent: {reader.tail()}")
    if finish == "length":
        raise ProviderError("the answer was cut off at the model's length limit (finish_reason: length)")

    for index in sorted(calls):
        call = calls[index]
        raw_arguments = "".join(call["arguments"])
        yield ToolCallChunk(ToolCall(call["id"] or f"call_{index}", call["name"], decode_arguments(raw_arguments)))
    if usage is not None:
        yield UsageChunk(usage)


def _add_piece(calls: dict[int, dict[str, Any]], position: int, piece: Any) -> None:
    if not isinstance(piece, dict):
        return
    index = piece.get("index")
    if not isinstance(index, int):
        index = position
    call = calls.setdefault(index, {"id": "", "name": "", "arguments": []})
    if piece.get("id"):
        call["id"] = str(piece["id"])
    function = piece.get("function") or {}
    if function.get("name"):
        call["name"] = str(function["name"])
    if isinstance(function.get("arguments"), str):
        call["arguments"].append(function["arguments"])
