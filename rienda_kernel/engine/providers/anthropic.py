"""Anthropic's Messages API, streamed over httpx.

``anthropic/<model>`` posts to ``{base_url}/v1/messages`` with ``stream: true``. The key
comes from ``api_key_env`` (``ANTHROPIC_API_KEY``, sent as ``x-api-key``), the base URL from
``base_url`` or else ``ANTHROPIC_BASE_URL`` (default ``https://api.anthropic.com``).

Request options (:mod:`.options`, in config.yaml ``providers: anthropic: {...}`` or a named
endpoint with ``api: anthropic``, and in an agent's ``options:``):

- ``max_tokens`` (default 8192): the vendor requires one. An answer that reaches it ends
  the run with an error saying so (the text so far is saved), rather than passing a cut
  answer off as complete.
- ``stop`` is sent as ``stop_sequences``; ``tool_choice`` becomes ``{type: auto|none|any}``
  (``required`` is ``any``) or ``{type: tool, name}``, sent only with tools; ``extra_body``
  is merged in last. The Messages API takes no ``temperature`` or ``top_p``: a server of
  its own that does gets them through ``extra_body``.
- ``thinking``: sent as is, e.g. ``{type: enabled, budget_tokens: 2048}`` or
  ``{type: adaptive}``; without it the model's default applies.

The stream's events become chunks: ``text_delta`` -> :class:`TextChunk`,
``thinking_delta`` -> :class:`ThinkingChunk`, each ``tool_use`` block (its
``input_json_delta`` pieces joined) -> :class:`ToolCallChunk`, the signed thinking blocks
-> one :class:`VendorStateChunk` (sent back verbatim with that turn later, as the vendor
requires during tool use), and the usage of ``message_start`` and ``message_delta`` ->
:class:`UsageChunk`. The stream must end with ``message_stop``; an ``error`` event ends the
run with the server's message.

Tool results go back as ``tool_result`` blocks paired by ``tool_use_id``; consecutive tool
results (and a user prompt after them) form one user turn, tool results first. A session
begun with another vendor resumes here too: call ids are made to fit the vendor's pattern.
A stream with no answer whose events are of no type this module reads is an error quoting
them.
"""

from __future__ import annotations

import re
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
    VendorStateChunk,
)
from .options import mapping, vendor_options
from .replies import excerpt, server_message
from .streaming import HttpProvider
from .exchange import (
    EventReader,
    decode_model_arguments,
    decode_json,
    redact,
)

__all__ = ["AnthropicProvider", "request_body"]

API_VERSION = "2023-06-01"
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
DEFAULT_MAX_TOKENS = 8192


class AnthropicProvider(HttpProvider):
    """A Messages API endpoint (see the module docstring)."""

    api = "anthropic"
    key_env = "ANTHROPIC_API_KEY"
    base_url_env = "ANTHROPIC_BASE_URL"
    default_base_url = "https://api.anthropic.com"
    path = "/v1/messages"
    request_options = vendor_options("temperature", "top_p", thinking=mapping("{type: adaptive}"))

    @property
    def max_tokens(self) -> int:
        """The endpoint's ``max_tokens`` (an agent's ``options:`` may override it)."""
        return int(self.options.get("max_tokens", DEFAULT_MAX_TOKENS))

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def stream(self, request: ModelRequest, cancel: CancelToken) -> Iterator[Chunk]:
        key = self.api_key(request.model)
        options = self.request_options_for(request)
        body = request_body(request, options)
        headers = {"anthropic-version": API_VERSION, "Accept": "text/event-stream"}
        exchange = yield from self.open(body, key, cancel, headers)
        yield from self.read(exchange, _parse(EventReader(exchange, key), key, body["max_tokens"], self.name), request)


_CHOICES = {"auto": "auto", "none": "none", "required": "any"}


def request_body(request: ModelRequest, options: Mapping[str, JSON] | None = None) -> JSONObject:
    """The Messages API request for ``request`` (streamed), with the request ``options``
    (checked by :mod:`.options`)."""
    options = options or {}
    body: JSONObject = {
        "model": request.model,
        "max_tokens": options.get("max_tokens", DEFAULT_MAX_TOKENS),
        "stream": True,
        "messages": _wire_messages(request.messages),
    }
    if request.system:
        body["system"] = request.system
    if "stop" in options:
        body["stop_sequences"] = list(options["stop"])
    if request.tools:
        body["tools"] = [{"name": tool.name, "description": tool.description,
                          "input_schema": dict(tool.parameters)} for tool in request.tools]
        choice = options.get("tool_choice")
        if choice is not None:
            body["tool_choice"] = {"type": _CHOICES[choice]} if choice in _CHOICES else {"type": "tool", "name": choice}
    if options.get("thinking") is not None:
        body["thinking"] = dict(options["thinking"])
    body.update(options.get("extra_body") or {})
    return body


def _wire_messages(messages: list[Message]) -> list[JSONObject]:
    """The conversation as alternating user/assistant turns of content blocks."""
    turns: list[JSONObject] = []
    for message in messages:
        role, blocks = _blocks(message)
        if not blocks:
            continue  # the vendor rejects empty turns (e.g. an answer stopped before any text)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _blocks(message: Message) -> tuple[str, list[JSONObject]]:
    if message.role == "tool":
        block: JSONObject = {"type": "tool_result", "tool_use_id": _tool_id(message.tool_call_id)}
        if message.text:
            block["content"] = message.text
        if message.is_error:
            block["is_error"] = True
        return "user", [block]
    if message.role == "user":
        return "user", [{"type": "text", "text": message.text}] if message.text else []
    if message.role == "assistant":
        signed = ((message.meta.vendor or {}).get("anthropic") or {}).get("thinking") or []
        blocks = [dict(b) for b in signed]  # unsigned thinking cannot be sent back; it is left out
        if message.text:
            blocks.append({"type": "text", "text": message.text})
        blocks += [{"type": "tool_use", "id": _tool_id(call.id), "name": call.name, "input": _input(call)}
                   for call in message.tool_calls]
        return "assistant", blocks
    raise ProviderError(f"cannot send a message with role {message.role!r} to an Anthropic model")


def _tool_id(call_id: str | None) -> str:
    """A call id as the vendor accepts it (letters, digits, ``_`` and ``-``): ids from
    another vendor's session are rewritten the same way on both sides of the pair."""
    return _ID_UNSAFE.sub("_", call_id or "") or "toolu_unnamed"


def _input(call: ToolCall) -> JSONObject:
    """A call's arguments as the object the vendor requires (``{}`` when the model sent
    something that was not a JSON object; the tool result already says so)."""
    return dict(call.arguments) if isinstance(call.arguments, dict) else {}


# -- the stream ----------------------------------------------------------------------------


@dataclass
class _Block:
    """One content block of the answer being streamed: its fields as ``content_block_start``
    gave them, and the pieces its deltas add."""

    kind: JSON  # its "type": text, thinking, redacted_thinking, tool_use...
    id: JSON = None
    name: JSON = None
    input: JSON = None
    data: JSON = None
    signature: JSON = ""
    text: list[str] = field(default_factory=list)  # a text or thinking block's pieces
    json: list[str] = field(default_factory=list)  # a tool_use block's input, in pieces


class _Turn:
    """The content blocks of the answer being streamed, by index."""

    def __init__(self) -> None:
        self.blocks: dict[int, _Block] = {}
        self.input_tokens = 0
        self.output_tokens = 0
        self.stop_reason: str | None = None

    def usage(self) -> Usage:
        return Usage(self.input_tokens, self.output_tokens)

    def signed_thinking(self) -> list[JSONObject]:
        """The thinking blocks the vendor wants back, in order, as it sent them."""
        kept: list[JSONObject] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if block.kind == "thinking" and block.signature:
                kept.append({"type": "thinking", "thinking": "".join(block.text), "signature": block.signature})
            elif block.kind == "redacted_thinking":
                kept.append({"type": "redacted_thinking", "data": block.data})
        return kept


_KNOWN_EVENTS = frozenset({"message_start", "content_block_start", "content_block_delta", "content_block_stop",
                           "message_delta", "ping"})


def _parse(reader: EventReader, key: str, max_tokens: int, endpoint: str) -> Iterator[Chunk]:
    """Chunks from the server-sent events, until ``message_stop``."""
    turn = _Turn()
    unread = ""  # the first event of a type we do not read
    for name, payload in reader.events():
        event = decode_json(payload, key)
        kind = event.get("type") or name
        if kind == "message_stop":
            break
        if kind == "error":
            raise ProviderError(f"the server reported an error mid-stream: {redact(server_message(payload), key)}")
        if kind not in _KNOWN_EVENTS and not unread:
            unread = payload
        yield from _on_event(turn, kind, event)
    else:
        raise ProviderError(f"the stream ended before message_stop; the last the server sent: {reader.tail()}")
    if turn.stop_reason == "max_tokens":
        raise AnswerCutOff(f"the answer was cut off at max_tokens ({max_tokens}); raise max_tokens "
                           f"under providers: {endpoint}: in config.yaml (or options: in the agent file)",
                           tokens=turn.input_tokens + turn.output_tokens or None)
    if not turn.blocks and unread:
        raise ProviderError("the server's stream held no answer in the Messages format (content_block_* events); "
                            f"it sent: {excerpt(redact(unread, key))}")
    if turn.stop_reason == "refusal":
        raise ProviderError("the model declined to answer (stop_reason: refusal)")
    signed = turn.signed_thinking()
    if signed:
        yield VendorStateChunk({"anthropic": {"thinking": signed}})
    yield UsageChunk(turn.usage())


def _on_event(turn: _Turn, kind: str, event: JSONObject) -> Iterator[Chunk]:
    if kind == "message_start":
        usage = (event.get("message") or {}).get("usage") or {}
        turn.input_tokens = _input_tokens(usage)
        turn.output_tokens = int(usage.get("output_tokens") or 0)
    elif kind == "content_block_start":
        yield from _start_block(turn, event)
    elif kind == "content_block_delta":
        yield from _delta(turn, event)
    elif kind == "content_block_stop":
        block = turn.blocks.get(event.get("index", -1))
        if block is not None and block.kind == "tool_use":
            yield ToolCallChunk(_call(block))
    elif kind == "message_delta":
        turn.stop_reason = (event.get("delta") or {}).get("stop_reason") or turn.stop_reason
        usage = event.get("usage") or {}
        if usage.get("output_tokens") is not None:
            turn.output_tokens = int(usage["output_tokens"])
        if usage.get("input_tokens") is not None:
            turn.input_tokens = _input_tokens(usage)
    # ping, and event types added later, carry nothing we use


def _start_block(turn: _Turn, event: JSONObject) -> Iterator[Chunk]:
    raw = event.get("content_block") or {}
    block = _Block(raw.get("type"), raw.get("id"), raw.get("name"), raw.get("input"), raw.get("data"),
                   raw.get("signature") or "")
    turn.blocks[event.get("index", len(turn.blocks))] = block
    if block.kind == "text" and raw.get("text"):
        block.text.append(raw["text"])
        yield TextChunk(raw["text"])
    elif block.kind == "thinking" and raw.get("thinking"):
        block.text.append(raw["thinking"])
        yield ThinkingChunk(raw["thinking"])


def _delta(turn: _Turn, event: JSONObject) -> Iterator[Chunk]:
    block = turn.blocks.get(event.get("index", -1))
    delta = event.get("delta") or {}
    if block is None:
        raise ProviderError(f"the server sent a delta for content block {event.get('index')!r}, "
                            "which it never started")
    kind = delta.get("type")
    if kind == "text_delta" and delta.get("text"):
        block.text.append(delta["text"])
        yield TextChunk(delta["text"])
    elif kind == "thinking_delta" and delta.get("thinking"):
        block.text.append(delta["thinking"])
        yield ThinkingChunk(delta["thinking"])
    elif kind == "signature_delta":
        block.signature += delta.get("signature") or ""
    elif kind == "input_json_delta":
        block.json.append(delta.get("partial_json") or "")


def _call(block: _Block) -> ToolCall:
    pieces = "".join(block.json)
    arguments = decode_model_arguments(pieces) if pieces else (block.input if block.input is not None else {})
    return ToolCall(str(block.id or ""), str(block.name or ""), arguments)


def _input_tokens(usage: JSONObject) -> int:
    """Input tokens including those read from or written to the prompt cache."""
    return sum(int(usage.get(name) or 0)
               for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
