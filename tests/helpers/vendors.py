"""Each vendor's wire format as a :class:`~.wire.ReplayServer`: its path, framing and the
official package's types that check every request body and every event.

- OpenAI: ``CompletionCreateParamsStreaming`` for requests, ``ChatCompletionChunk`` for
  each ``data:`` line, then ``data: [DONE]``.
- Anthropic: ``MessageCreateParamsStreaming`` for requests, ``RawMessageStreamEvent`` for
  each ``event:``/``data:`` pair (``ErrorResponse`` for ``error``, ``{"type": "ping"}``).
- For both, pydantic's TypedDict validation ignores keys the type lacks, where the real
  APIs reject them: :func:`unknown_keys` walks the request against the TypedDicts and
  rejects any key they do not declare, at any depth (``max_tokenz``, a typo in a message).
- Ollama: ``ChatRequest``, ``Message`` and ``Tool`` for requests, with no field those types
  lack; ``ChatResponse`` for each NDJSON line (``{"error": "..."}`` for error lines).
- The conversation's shape, as each API enforces it beyond its types (:class:`Rejected`: the
  server answers HTTP 400 with the vendor's own error, as the real one does): OpenAI wants
  every ``tool_calls`` answered by ``tool`` messages right after it, and no ``tool`` message
  that answers nothing; Anthropic every ``tool_use`` answered by a ``tool_result`` in the next
  turn (results first), no result for a call the previous turn did not make, unique ids and
  no empty turn. Ollama's server itself checks none of this, but the model's chat template
  pairs results with calls by position, so its fake holds requests to the same pairing.

With ``upstream``, the server relays to another server (fakellm) and checks both ways.
"""

from __future__ import annotations

import json
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Union

import ollama
import typing_extensions as te  # the vendors' TypedDicts are typing_extensions' own
from anthropic.types import ErrorResponse, RawMessageStreamEvent, message_create_params
from ollama._types import ChatRequest, ShowRequest
from openai.types.chat import ChatCompletionChunk, completion_create_params
from pydantic import TypeAdapter

from .vendor_wire import ReplayServer, materialize

_OPENAI_REQUEST = TypeAdapter(completion_create_params.CompletionCreateParamsStreaming)
_ANTHROPIC_REQUEST = TypeAdapter(message_create_params.MessageCreateParamsStreaming)
_ANTHROPIC_EVENT = TypeAdapter(RawMessageStreamEvent)


def unknown_keys(value: Any, annotation: Any, where: str = "request") -> list[str]:
    """Each key in ``value`` (at any depth) that the TypedDict ``annotation`` describing it
    does not declare, as ``"request.messages[2].bogus"``. In a union, the value must fit
    one member (a ``type`` or ``role`` literal picks it)."""
    annotation = _bare(annotation)
    origin = te.get_origin(annotation)
    if origin in (Union, types.UnionType):
        members = [m for m in te.get_args(annotation) if _could_be(value, _bare(m))]
        found = [unknown_keys(value, member, where) for member in members]
        return min(found, key=len) if found else ([] if not isinstance(value, dict) else [f"{where}: fits no {annotation}"])
    if te.is_typeddict(annotation) and isinstance(value, dict):
        hints = _hints(annotation)
        problems = [f"{where}.{key}" for key in value if key not in hints]
        for key, item in value.items():
            if key in hints:
                problems += unknown_keys(item, hints[key], f"{where}.{key}")
        return problems
    if origin in (list, Iterable, Sequence):
        (item_type,) = te.get_args(annotation) or (Any,)
        if isinstance(value, list):
            return [problem for index, item in enumerate(value) for problem in unknown_keys(item, item_type, f"{where}[{index}]")]
    return []


_HINTS: dict[Any, dict[str, Any]] = {}


def _hints(typeddict: Any) -> dict[str, Any]:
    """``get_type_hints`` of a vendor's TypedDict, worked out once per class: it evaluates
    every forward reference on each call, which was most of the time a request check took."""
    hints = _HINTS.get(typeddict)
    if hints is None:
        hints = _HINTS.setdefault(typeddict, te.get_type_hints(typeddict, include_extras=True))
    return hints


def _bare(annotation: Any) -> Any:
    """Without Required/NotRequired/Annotated wrappers."""
    while te.get_origin(annotation) in (te.Required, te.NotRequired, te.Annotated):
        annotation = te.get_args(annotation)[0]
    return annotation


def _could_be(value: Any, member: Any) -> bool:
    """Whether ``value`` may be the union member ``member`` (a dict goes to a TypedDict
    whose ``type``/``role`` literal matches it; other values to non-TypedDict members)."""
    if not te.is_typeddict(member):
        if isinstance(value, dict):
            return te.get_origin(member) in (dict, Mapping) or member in (dict, object)
        if isinstance(value, list):
            return te.get_origin(member) in (list, Iterable, Sequence)
        return True
    if not isinstance(value, dict):
        return False
    hints = _hints(member)
    for tag in ("type", "role"):
        if tag in value and tag in hints:
            literal = _bare(hints[tag])
            if te.get_origin(literal) is te.Literal and value[tag] not in te.get_args(literal):
                return False
    return True


class Rejected(Exception):
    """A request the vendor's API refuses with HTTP 400; ``body`` is the vendor's error body."""

    def __init__(self, message: str, body: dict[str, Any]) -> None:
        super().__init__(message)
        self.body = body


def _strict(adapter: TypeAdapter, annotation: Any, conversation: Any) -> Any:
    """A request validator: the vendor's types, no key they lack, and the conversation's shape."""
    def validate(body: dict[str, Any]) -> None:
        materialize(adapter.validate_python(body))
        unknown = unknown_keys(body, annotation)
        assert not unknown, f"fields the vendor's API does not take: {', '.join(unknown)}"
        conversation(body["messages"])
    return validate


def _openai_rejects(message: str, param: str) -> Rejected:
    return Rejected(message, {"error": {"message": message, "type": "invalid_request_error", "param": param,
                                        "code": None}})


def openai_conversation(messages: list[dict[str, Any]]) -> None:
    """Chat Completions' pairing rules (the API's own words when it refuses)."""
    waiting: list[str] = []  # the ids of the last tool_calls not answered yet
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in waiting:
                raise _openai_rejects("Invalid parameter: messages with role 'tool' must be a response to a "
                                      "preceeding message with 'tool_calls'.", f"messages.[{index}].role")
            waiting.remove(message["tool_call_id"])
            continue
        if waiting:
            raise _openai_rejects("An assistant message with 'tool_calls' must be followed by tool messages "
                                  "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                                  f"response messages: {', '.join(waiting)}", f"messages.[{index}].role")
        waiting = [call["id"] for call in message.get("tool_calls") or ()] if role == "assistant" else []
    if waiting:
        raise _openai_rejects("An assistant message with 'tool_calls' must be followed by tool messages responding "
                              f"to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                              f"{', '.join(waiting)}", "messages")


def _anthropic_rejects(message: str) -> Rejected:
    return Rejected(message, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})


def anthropic_conversation(messages: list[dict[str, Any]]) -> None:
    """The Messages API's pairing rules (the API's own words when it refuses)."""
    seen: set[str] = set()
    for index, message in enumerate(messages):
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        last = index == len(messages) - 1
        if not blocks or (any(b.get("type") == "text" and not b.get("text") for b in blocks)
                          and not (last and message.get("role") == "assistant")):
            raise _anthropic_rejects(f"messages.{index}: all messages must have non-empty content except for "
                                     "the optional final assistant message")
        uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        for position, use in enumerate(uses):
            if use in seen:
                raise _anthropic_rejects(f"messages.{index}.content.{position}: `tool_use` ids must be unique")
            seen.add(use)
        before = messages[index - 1] if index else None
        made = [b["id"] for b in before["content"] if isinstance(before.get("content"), list)
                and b.get("type") == "tool_use"] if before and before.get("role") == "assistant" else []
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        for position, result in enumerate(results):
            if result not in made:
                raise _anthropic_rejects(f"messages.{index}.content.{position}: unexpected `tool_use_id` found in "
                                         f"`tool_result` blocks: {result}. Each `tool_result` block must have a "
                                         "corresponding `tool_use` block in the previous message.")
        if uses:
            after = messages[index + 1] if index + 1 < len(messages) else None
            answered = {b.get("tool_use_id") for b in after["content"] if isinstance(b, dict)} \
                if after and isinstance(after.get("content"), list) else set()
            missing = [use for use in uses if use not in answered]
            if missing:
                raise _anthropic_rejects(f"messages.{index + 1}: `tool_use` ids were found without `tool_result` "
                                         f"blocks immediately after: {', '.join(missing)}. Each `tool_use` block "
                                         "must have a corresponding `tool_result` block in the next message.")
            kinds = [b.get("type") for b in after["content"]]
            if any(kind != "tool_result" for kind in kinds[:kinds.count("tool_result")]):
                raise _anthropic_rejects(f"messages.{index + 1}: tool_result blocks must come first in the content")


def ollama_conversation(messages: list[dict[str, Any]]) -> None:
    """Results right after their calls, one each, in call order, named as the call."""
    waiting: list[str] = []
    for message in messages:
        if message.get("role") == "tool":
            if not waiting or message.get("tool_name") != waiting[0]:
                raise Rejected("a tool message answers no pending tool call", {"error": "tool message out of place"})
            waiting.pop(0)
            continue
        if waiting:
            raise Rejected(f"tool calls without results: {', '.join(waiting)}", {"error": "missing tool results"})
        waiting = [c["function"]["name"] for c in message.get("tool_calls") or ()] \
            if message.get("role") == "assistant" else []
    if waiting:
        raise Rejected(f"tool calls without results: {', '.join(waiting)}", {"error": "missing tool results"})


def fake_openai(upstream: str | None = None) -> ReplayServer:
    """Chat Completions at /v1/chat/completions; ``url`` is the base URL (``.../v1``)."""
    server = ReplayServer("/v1/chat/completions", "text/event-stream",
                          encode=lambda event: f"data: {json.dumps(event)}\n\n",
                          encode_raw=lambda raw: f"data: {raw}\n\n",
                          validate_request=_strict(_OPENAI_REQUEST, completion_create_params.CompletionCreateParamsStreaming,
                                                   openai_conversation),
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
                          validate_request=_strict(_ANTHROPIC_REQUEST, message_create_params.MessageCreateParamsStreaming,
                                                   anthropic_conversation),
                          validate_event=validate_anthropic_event, upstream=upstream)
    server.url = server.origin
    return server


def _fields(model: type) -> set[str]:
    return {info.alias or name for name, info in model.model_fields.items()}


def validate_ollama_request(body: dict[str, Any]) -> None:
    ChatRequest.model_validate(body)
    ollama_conversation(body["messages"])
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


def ollama_show(context_length: int = 40960, parameters: str = 'stop "<|im_start|>"'):
    """An answer to Ollama's ``POST /api/show``, for a model trained for ``context_length``
    tokens whose Modelfile sets ``parameters``; the request and the answer pass the
    ``ollama`` package's ``ShowRequest`` and ``ShowResponse``."""
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        ShowRequest.model_validate(body)
        assert set(body) == {"model"}, f"fields /api/show does not take: {set(body) - {'model'}}"
        shown = {"modelfile": f"FROM {body['model']}\n", "parameters": parameters,
                 "template": "{{ .Prompt }}", "details": {"format": "gguf", "family": "qwen3"},
                 "model_info": {"general.architecture": "qwen3", "qwen3.context_length": context_length},
                 "capabilities": ["completion", "tools"]}
        ollama.ShowResponse.model_validate(shown)
        return shown
    return answer


def fake_ollama() -> ReplayServer:
    """Ollama's /api/chat, and /api/show (:func:`ollama_show`'s answer); ``url`` is the host
    URL (the origin)."""
    server = ReplayServer("/api/chat", "application/x-ndjson",
                          encode=lambda line: json.dumps(line) + "\n", encode_raw=lambda raw: raw + "\n",
                          validate_request=validate_ollama_request, validate_event=validate_ollama_line)
    server.posts["/api/show"] = ollama_show()
    server.url = server.origin
    return server
