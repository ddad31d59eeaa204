"""Ollama's chat API, streamed over httpx.

``ollama/<model>`` posts to ``{host}/api/chat`` with ``stream: true``; the host comes from
``base_url`` or else ``OLLAMA_HOST`` (default ``http://127.0.0.1:11434``), read the way the
``ollama`` command reads it (``0.0.0.0``, ``:11435`` and ``example.com/path`` all work).
No key is needed; when ``OLLAMA_API_KEY`` (or the configured ``api_key_env``) is set, it is
sent as a bearer token, as the ``ollama`` package does.

Options, besides :class:`~.streaming.HttpProvider`'s: ``think`` (true/false, or a level
such as ``high``, sent as is), ``options`` (model options such as ``num_ctx``,
``temperature``) and ``keep_alive``.

Each NDJSON line carries ``message.content`` -> :class:`TextChunk`, ``message.thinking``
-> :class:`ThinkingChunk` and ``message.tool_calls`` (whole, with object arguments) ->
:class:`ToolCallChunk`; the last line has ``done: true`` with ``prompt_eval_count`` /
``eval_count`` -> :class:`UsageChunk`. A line ``{"error": ...}`` ends the run with that
message. Ollama gives calls no ids, so they are numbered ``call_<turn>_<n>``; tool results
go back as ``role: tool`` messages naming their tool (``tool_name``), in call order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

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
    HttpProvider,
    LineReader,
    decode_arguments,
    decode_json,
    excerpt,
    redact,
)

__all__ = ["OllamaProvider", "host_url", "request_body"]

DEFAULT_PORT = 11434


class OllamaProvider(HttpProvider):
    """An Ollama server (see the module docstring)."""

    api = "ollama"
    key_env = "OLLAMA_API_KEY"
    key_required = False
    connect_hint = "is Ollama running? Start it with `ollama serve`, or set OLLAMA_HOST"
    base_url_env = "OLLAMA_HOST"
    default_base_url = f"http://127.0.0.1:{DEFAULT_PORT}"
    path = "/api/chat"
    extra_options = frozenset({"think", "options", "keep_alive"})

    def __init__(self, *args: Any, think: bool | str | None = None, options: dict[str, Any] | None = None,
                 keep_alive: str | int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if options is not None and not isinstance(options, dict):
            raise ValueError(f"options must be a mapping such as {{num_ctx: 8192}}, not {options!r}")
        self.extra = {name: value for name, value in
                      (("think", think), ("options", options), ("keep_alive", keep_alive)) if value is not None}

    def base(self) -> str:
        return host_url(super().base())

    def stream(self, request: ModelRequest, cancel: CancelToken) -> Iterator[Chunk]:
        key = self.api_key(request.model)
        exchange = self.open({**request_body(request), **self.extra}, key, cancel, {"Accept": "application/x-ndjson"})
        try:
            yield from _parse(LineReader(exchange, key), key, _turn_number(request.messages))
        finally:
            exchange.abandon()


def host_url(host: str) -> str:
    """``OLLAMA_HOST`` as a URL, as the ``ollama`` package reads it: without a scheme,
    ``http`` and port 11434; with one, that scheme's usual port unless given."""
    host = host.strip() or f"127.0.0.1:{DEFAULT_PORT}"
    scheme_given = "://" in host
    parts = urlsplit(host if scheme_given else "http://" + host)
    hostname = parts.hostname or "127.0.0.1"
    if ":" in hostname:
        hostname = f"[{hostname}]"  # an IPv6 address
    port = parts.port or ({"https": 443}.get(parts.scheme, 80) if scheme_given else DEFAULT_PORT)
    return f"{parts.scheme}://{hostname}:{port}{parts.path.rstrip('/')}"


def request_body(request: ModelRequest) -> dict[str, Any]:
    """The /api/chat request for ``request`` (streamed)."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages += [_wire_message(message) for message in request.messages]
    body: dict[str, Any] = {"model": request.model, "messages": messages, "stream": True}
    if request.tools:
        body["tools"] = [tool.as_function() for tool in request.tools]
    return body


def _wire_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "content": message.text, "tool_name": message.name or ""}
    if message.role == "user":
        return {"role": "user", "content": message.text}
    if message.role == "assistant":
        wire: dict[str, Any] = {"role": "assistant", "content": message.text}
        if message.thinking:
            wire["thinking"] = message.thinking
        if message.tool_calls:
            wire["tool_calls"] = [{"function": {"name": call.name, "arguments": _arguments(call)}}
                                  for call in message.tool_calls]
        return wire
    raise ProviderError(f"cannot send a message with role {message.role!r} to an Ollama model")


def _arguments(call: ToolCall) -> dict[str, Any]:
    return dict(call.arguments) if isinstance(call.arguments, dict) else {}


def _turn_number(messages: list[Message]) -> int:
    """How many assistant turns came before: call ids stay unique across the session."""
    return sum(1 for message in messages if message.role == "assistant")


# -- the stream ----------------------------------------------------------------------------


def _parse(reader: LineReader, key: str, turn: int) -> Iterator[Chunk]:
    """Chunks from the NDJSON lines, until the one with ``done: true``."""
    calls = 0
    for line in reader.lines():
        if not line.strip():
            continue
        part = decode_json(line, key)
        if part.get("error"):
            raise ProviderError(f"the server reported an error mid-stream: {excerpt(redact(str(part['error']), key))}")
        message = part.get("message") or {}
        if isinstance(message.get("thinking"), str) and message["thinking"]:
            yield ThinkingChunk(message["thinking"])
        if isinstance(message.get("content"), str) and message["content"]:
            yield TextChunk(message["content"])
        for raw in message.get("tool_calls") or ():
            yield ToolCallChunk(_call(raw, f"call_{turn}_{calls}"))
            calls += 1
        if part.get("done"):
            break
    else:
        raise ProviderError(f"the stream ended before the line with done: true; "
                            f"the last the server sent: {reader.tail()}")
    if part.get("done_reason") == "length":
        raise ProviderError("the answer was cut off at the model's length limit (done_reason: length); "
                            "raise num_predict or num_ctx under providers: ollama: options: in config.yaml")
    yield UsageChunk(Usage(int(part.get("prompt_eval_count") or 0), int(part.get("eval_count") or 0)))


def _call(raw: Any, fallback_id: str) -> ToolCall:
    function = (raw or {}).get("function") or {}
    arguments = function.get("arguments")
    if isinstance(arguments, str):  # some models' templates give the arguments as text
        arguments = decode_arguments(arguments)
    elif arguments is None:
        arguments = {}
    call_id = (raw or {}).get("id") or fallback_id
    return ToolCall(str(call_id), str(function.get("name") or ""), arguments)

