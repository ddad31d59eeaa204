"""Each vendor's wire format as a :class:`~.wire.ReplayServer`: its path, framing and the
official package's types that check every request body and every event.

- OpenAI: ``CompletionCreateParamsStreaming`` for requests, ``ChatCompletionChunk`` for
  each ``data:`` line, then ``data: [DONE]``.
- Anthropic: ``MessageCreateParamsStreaming`` for requests, ``RawMessageStreamEvent`` for
  each ``event:``/``data:`` pair (``ErrorResponse`` for ``error``, ``{"type": "ping"}``).
- Ollama: ``ChatRequest``, ``Message`` and ``Tool`` for requests, with no field those types
  lack; ``ChatResponse`` for each NDJSON line (``{"error": "..."}`` for error lines).

With ``upstream``, the server relays to another server (fakellm) and checks both ways.
"""

from __future__ import annotations

import json
from typing import Any

import ollama
from anthropic.types import ErrorResponse, RawMessageStreamEvent, message_create_params
from ollama._types import ChatRequest
from openai.types.chat import ChatCompletionChunk, completion_create_params
from pydantic import TypeAdapter

from .wire import ReplayServer, materialize

_OPENAI_REQUEST = TypeAdapter(completion_create_params.CompletionCreateParamsStreaming)
_ANTHROPIC_REQUEST = TypeAdapter(message_create_params.MessageCreateParamsStreaming)
_ANTHROPIC_EVENT = TypeAdapter(RawMessageStreamEvent)


def fake_openai(upstream: str | None = None) -> ReplayServer:
    """Chat Completions at /v1/chat/completions; ``url`` is the base URL (``.../v1``)."""
    server = ReplayServer("/v1/chat/completions", "text/event-stream",
                          encode=lambda event: f"data: {json.dumps(event)}\n\n",
                          encode_raw=lambda raw: f"data: {raw}\n\n",
                          validate_request=lambda body: materialize(_OPENAI_REQUEST.validate_python(body)),
                          validate_event=ChatCompletionChunk.model_validate,
                          trailer="data: [DONE]\n\n", upstream=upstream)
    server.url = server.origin + "/v1"
    return server


def validate_anthropic_event(event: dict[str, Any]) -> None:
    if event["type"] == "ping":
        assert event == {"type": "ping"}
    elif event["type"] == "error":
        ErrorResponse.model_validate(event)
    else:
        _ANTHROPIC_EVENT.validate_python(event)


def fake_anthropic(upstream: str | None = None) -> ReplayServer:
    """The Messages API at /v1/messages; ``url`` is the base URL (the origin)."""
    server = ReplayServer("/v1/messages", "text/event-stream",
                          encode=lambda event: f"event: {event['type']}\ndata: {json.dumps(event)}\n\n",
                          encode_raw=lambda raw: f"event: content_block_delta\ndata: {raw}\n\n",
                          validate_request=lambda body: materialize(_ANTHROPIC_REQUEST.validate_python(body)),
                          validate_event=validate_anthropic_event, upstream=upstream)
    server.url = server.origin
    return server


def _fields(model: type) -> set[str]:
    return {info.alias or name for name, info in model.model_fields.items()}


def validate_ollama_request(body: dict[str, Any]) -> None:
    ChatRequest.model_validate(body)
    assert set(body) <= _fields(ChatRequest), f"fields ollama does not know: {set(body) - _fields(ChatRequest)}"
    for message in body["messages"]:
        ollama.Message.model_validate(message)
        assert set(message) <= _fields(ollama.Message), f"unknown message fields in {message}"
        for call in message.get("tool_calls") or ():
            assert set(call) == {"function"} and set(call["function"]) == {"name", "arguments"}
    for tool in body.get("tools") or ():
        ollama.Tool.model_validate(tool)
        assert set(tool) == {"type", "function"} and set(tool["function"]) == {"name", "description", "parameters"}


def validate_ollama_line(line: dict[str, Any]) -> None:
    if "error" in line:
        assert set(line) == {"error"} and isinstance(line["error"], str)
    else:
        ollama.ChatResponse.model_validate(line)


def fake_ollama() -> ReplayServer:
    """Ollama's /api/chat; ``url`` is the host URL (the origin)."""
    server = ReplayServer("/api/chat", "application/x-ndjson",
                          encode=lambda line: json.dumps(line) + "\n", encode_raw=lambda raw: raw + "\n",
                          validate_request=validate_ollama_request, validate_event=validate_ollama_line)
    server.url = server.origin
    return server
