"""OpenAI's Chat Completions API (and servers that speak it), streamed over httpx.

``openai/<model>`` posts to ``{base_url}/chat/completions`` with ``stream: true`` and turns
the server-sent events back into chunks: ``delta.content`` -> :class:`TextChunk`,
``delta.reasoning_content`` (or ``reasoning``) -> :class:`ThinkingChunk`, tool calls (their
``arguments`` assembled from pieces, by ``index``) -> one :class:`ToolCallChunk` each at the
end, and the final ``usage`` -> :class:`UsageChunk`. The stream must end with
``data: [DONE]``; an answer cut off at the length limit ends the run with an error saying
so (the text so far is saved).

The key comes from ``api_key_env`` (``OPENAI_API_KEY``; none for an endpoint with a
``base_url`` of its own unless ``api_key_env`` is set), the base URL from ``base_url`` or
else ``OPENAI_BASE_URL`` (default ``https://api.openai.com/v1``). The request options
(:mod:`.options`) are sent as the API names them; ``tool_choice`` naming a tool becomes
``{"type": "function", "function": {"name": ...}}`` and is sent only with tools;
``extra_body`` is merged in last. Retries, timeouts and cancellation are
:class:`~.streaming.HttpProvider`'s.

A stream that ends with no answer (no text, thinking or tool call) and holds chunks in no
shape this module reads is an error quoting them, not a silent empty answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from ..cancel import CancelToken
from ..common.json_value import JSON, JSONObject
from ..errors import AnswerCutOff, ProviderError
from ..sessions.messages import Message, ToolCall, Usage
from .base import (
    Chunk,
    ModelRequest,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    UsageChunk,
)
from .replies import excerpt, server_message
from .streaming import HttpProvider
from .exchange import (
    EventReader,
    decode_model_arguments,
    decode_json,
    redact,
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
        body = request_body(request, self.request_options_for(request))
        exchange = yield from self.open(body, key, cancel, {"Accept": "text/event-stream"})
        yield from self.read(exchange, _parse(EventReader(exchange, key), key, self.name), request)


_SAMPLING = ("max_tokens", "temperature", "top_p", "stop")
_CHOICES = ("auto", "none", "required")


def request_body(request: ModelRequest, options: Mapping[str, JSON] | None = None) -> JSONObject:
    """The Chat Completions request for ``request`` (streamed, with usage), with the
    request ``options`` (checked by :mod:`.options`)."""
    options = options or {}
    messages: list[JSONObject] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for message in request.messages:
        messages.append(_wire_message(message))
    body: JSONObject = {
        "model": request.model,
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": messages,
    }
    body.update({name: options[name] for name in _SAMPLING if name in options})
    if request.tools:
        body["tools"] = [tool.as_function() for tool in request.tools]
        choice = options.get("tool_choice")
        if choice is not None:
            body["tool_choice"] = choice if choice in _CHOICES else {"type": "function", "function": {"name": choice}}
    body.update(options.get("extra_body") or {})
    return body


def _wire_message(message: Message) -> JSONObject:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.text}
    if message.role == "assistant":
        # "content" stays a string with tool calls too: some servers answer 500 to null.
        wire: JSONObject = {"role": "assistant", "content": message.text}
        if message.tool_calls:
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


def _parse(reader: EventReader, key: str, endpoint: str) -> Iterator[Chunk]:
    """Chunks from the server-sent events, until ``data: [DONE]``."""
    calls: dict[int, _CallPieces] = {}
    usage: Usage | None = None
    finish: str | None = None
    answered = False
    unread = ""  # the first payload in no shape we read
    for _, payload in reader.events():
        if payload.strip() == "[DONE]":
            break
        chunk = decode_json(payload, key)
        if chunk.get("error"):
            raise ProviderError(f"the server reported an error mid-stream: {redact(server_message(payload), key)}")
        if not unread and not _readable(chunk):
            unread = payload
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
                answered = True
                yield ThinkingChunk(thinking)
            text = delta.get("content")
            if isinstance(text, str) and text:
                answered = True
                yield TextChunk(text)
            for position, piece in enumerate(delta.get("tool_calls") or ()):
                _add_piece(calls, position, piece)
    else:
        raise ProviderError(f"the stream ended before data: [DONE]; the last the server sent: {reader.tail()}")
    if finish == "length":
        raise AnswerCutOff("the answer was cut off at the model's length limit (finish_reason: length); raise "
                           f"max_tokens under providers: {endpoint}: in config.yaml (or options: in the agent "
                           "file), or the server's own limit",
                           tokens=usage.input_tokens + usage.output_tokens if usage else None)
    if not answered and not calls and unread:
        raise ProviderError(f"the server's stream held no answer in the Chat Completions format "
                            f"(choices[].delta.content); it sent: {excerpt(redact(unread, key))}")

    for index in sorted(calls):
        call = calls[index]
        raw_arguments = "".join(call.arguments)
        yield ToolCallChunk(ToolCall(call.id or f"call_{index}", call.name, decode_model_arguments(raw_arguments)))
    if usage is not None:
        yield UsageChunk(usage)


def _readable(chunk: JSONObject) -> bool:
    """Whether a chunk has the shape of a Chat Completions chunk: choices with deltas, or
    only usage."""
    choices = chunk.get("choices") or []
    if not choices:
        return isinstance(chunk.get("usage"), dict)
    return isinstance(choices, list) and all(isinstance(c, dict) and isinstance(c.get("delta"), dict) for c in choices)


@dataclass
class _CallPieces:
    """One tool call as its pieces arrive (by ``index``): its id and name, and the pieces of
    its arguments' text."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


def _add_piece(calls: dict[int, _CallPieces], position: int, piece: JSON) -> None:
    if not isinstance(piece, dict):
        return
    index = piece.get("index")
    if not isinstance(index, int):
        index = position
    call = calls.setdefault(index, _CallPieces())
    if piece.get("id"):
        call.id = str(piece["id"])
    function = piece.get("function") or {}
    if function.get("name"):
        call.name = str(function["name"])
    if isinstance(function.get("arguments"), str):
        call.arguments.append(function["arguments"])
