"""Ollama's chat API, streamed over httpx.

``ollama/<model>`` posts to ``{host}/api/chat`` with ``stream: true``; the host comes from
``base_url`` or else ``OLLAMA_HOST`` (default ``http://127.0.0.1:11434``), read the way the
``ollama`` command reads it (``0.0.0.0``, ``:11435`` and ``example.com/path`` all work).
No key is needed; when ``OLLAMA_API_KEY`` (or the configured ``api_key_env``) is set, it is
sent as a bearer token, as the ``ollama`` package does.

Request options (:mod:`.options`): ``max_tokens``, ``temperature``, ``top_p`` and
``stop`` go into the request's ``options`` (``max_tokens`` as ``num_predict``), over the
model options given as ``options`` (``num_ctx``, ``temperature``...); ``think`` (true/false,
or a level such as ``high``) and ``keep_alive`` are sent as is; ``extra_body`` is merged in
last. Ollama has no ``tool_choice``.

Every request carries an explicit ``options.num_ctx``, the model's window (:mod:`.window`):
``options: {num_ctx: N}`` as given, else ``context_window``, else the Modelfile's
``num_ctx`` (``/api/show``), else the model's trained ``context_length`` up to
:data:`.window.OLLAMA_WINDOW`. Ollama otherwise applies a default of its own and silently
drops the start of a longer prompt, the system prompt first.

Each NDJSON line carries ``message.content`` -> :class:`TextChunk`, ``message.thinking``
-> :class:`ThinkingChunk` and ``message.tool_calls`` (whole, with object arguments) ->
:class:`ToolCallChunk`; the last line has ``done: true`` with ``prompt_eval_count`` /
``eval_count`` -> :class:`UsageChunk`. A line ``{"error": ...}`` ends the run with that
message; a stream whose lines carry no ``message`` at all (e.g. ``/api/generate``'s
``response``) is an error quoting them, not an empty answer. Ollama gives calls no ids,
so they are numbered ``call_<turn>_<n>``; tool results go back as ``role: tool`` messages
naming their tool (``tool_name``), in call order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from urllib.parse import urlsplit

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
from .options import mapping, vendor_options
from .replies import short
from .window import OLLAMA_WINDOW, Window, ollama_show
from .streaming import HttpProvider
from .exchange import (
    LineReader,
    decode_model_arguments,
    decode_json,
    redact,
)

__all__ = ["OllamaProvider", "host_url", "request_body"]

DEFAULT_PORT = 11434


def _think(value: JSON) -> bool | str:
    if isinstance(value, bool) or (isinstance(value, str) and value):
        return value
    raise ValueError(f"must be true, false or a level such as high, got {value!r}")


def _keep_alive(value: JSON) -> str | int:
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return value
    raise ValueError(f"must be a duration such as 5m, or seconds, got {value!r}")


class OllamaProvider(HttpProvider):
    """An Ollama server (see the module docstring)."""

    api = "ollama"
    key_env = "OLLAMA_API_KEY"
    key_required = False
    connect_hint = "is Ollama running? Start it with `ollama serve`, or set OLLAMA_HOST"
    base_url_env = "OLLAMA_HOST"
    default_base_url = f"http://127.0.0.1:{DEFAULT_PORT}"
    path = "/api/chat"
    request_options = vendor_options("tool_choice", think=_think, options=mapping("{num_ctx: 8192}"),
                                     keep_alive=_keep_alive)

    def base(self) -> str:
        return host_url(super().base())

    def context_window(self, model: str, options: Mapping[str, JSON]) -> Window:
        """``options: {num_ctx: N}`` (the agent's, else the endpoint's) when given, else as
        every endpoint (:meth:`server_window` always knows one): what is sent as ``num_ctx``."""
        num_ctx = ({**self.options, **options}.get("options") or {}).get("num_ctx")
        if isinstance(num_ctx, int) and not isinstance(num_ctx, bool) and num_ctx > 0:
            return Window(num_ctx, "config")
        return super().context_window(model, options) or Window(OLLAMA_WINDOW, "default")

    def server_window(self, model: str) -> Window:
        """The Modelfile's ``num_ctx`` (``/api/show``), else the model's trained length up to
        :data:`.window.OLLAMA_WINDOW` (that, when the server does not say)."""
        key = self.api_key(model)
        num_ctx, trained = ollama_show(self.base(), model, self.auth_headers(key) if key else {})
        if num_ctx:
            return Window(num_ctx, "server")
        return Window(min(trained or OLLAMA_WINDOW, OLLAMA_WINDOW), "default")

    def stream(self, request: ModelRequest, cancel: CancelToken) -> Iterator[Chunk]:
        key = self.api_key(request.model)
        options = self.request_options_for(request)
        window = self.context_window(request.model, request.options)
        options["options"] = {**(options.get("options") or {}), "num_ctx": window.tokens}
        body = request_body(request, options)
        exchange = yield from self.open(body, key, cancel, {"Accept": "application/x-ndjson"})
        yield from self.read(exchange, _parse(LineReader(exchange, key), key, _turn_number(request.messages),
                                                 self.name), request)


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


_MODEL_OPTIONS = {"max_tokens": "num_predict", "temperature": "temperature", "top_p": "top_p", "stop": "stop"}


def request_body(request: ModelRequest, options: Mapping[str, JSON] | None = None) -> JSONObject:
    """The /api/chat request for ``request`` (streamed), with the request ``options``
    (checked by :mod:`.options`)."""
    options = options or {}
    messages: list[JSONObject] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages += [_wire_message(message) for message in request.messages]
    body: JSONObject = {"model": request.model, "messages": messages, "stream": True}
    if request.tools:
        body["tools"] = [tool.as_function() for tool in request.tools]
    model_options = {**(options.get("options") or {}),
                     **{wire: options[name] for name, wire in _MODEL_OPTIONS.items() if name in options}}
    if model_options:
        body["options"] = model_options
    body.update({name: options[name] for name in ("think", "keep_alive") if name in options})
    body.update(options.get("extra_body") or {})
    return body


def _wire_message(message: Message) -> JSONObject:
    if message.role == "tool":
        return {"role": "tool", "content": message.text, "tool_name": message.name or ""}
    if message.role == "user":
        return {"role": "user", "content": message.text}
    if message.role == "assistant":
        wire: JSONObject = {"role": "assistant", "content": message.text}
        if message.thinking:
            wire["thinking"] = message.thinking
        if message.tool_calls:
            wire["tool_calls"] = [{"function": {"name": call.name, "arguments": _arguments(call)}}
                                  for call in message.tool_calls]
        return wire
    raise ProviderError(f"cannot send a message with role {message.role!r} to an Ollama model")


def _arguments(call: ToolCall) -> JSONObject:
    return dict(call.arguments) if isinstance(call.arguments, dict) else {}


def _turn_number(messages: list[Message]) -> int:
    """How many assistant turns came before: call ids stay unique across the session."""
    return sum(1 for message in messages if message.role == "assistant")


# -- the stream ----------------------------------------------------------------------------


def _parse(reader: LineReader, key: str, turn: int, endpoint: str) -> Iterator[Chunk]:
    """Chunks from the NDJSON lines, until the one with ``done: true``."""
    calls = 0
    read = False  # whether any line had a message
    for line in reader.lines():
        if not line.strip():
            continue
        part = decode_json(line, key)
        if part.get("error"):
            raise ProviderError(f"the server reported an error mid-stream: {redact(short(str(part['error'])), key)}")
        read = read or isinstance(part.get("message"), dict)
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
        raise AnswerCutOff("the answer was cut off at the model's length limit (done_reason: length); raise "
                           f"max_tokens (Ollama's num_predict) or options: {{num_ctx: ...}} under providers: {endpoint}: "
                           "in config.yaml (or options: in the agent file)",
                           tokens=int(part.get("prompt_eval_count") or 0) + int(part.get("eval_count") or 0) or None)
    if not read:
        raise ProviderError("the server's stream held no answer in the /api/chat format (message.content); "
                            f"the last it sent: {reader.tail()}")
    yield UsageChunk(Usage(int(part.get("prompt_eval_count") or 0), int(part.get("eval_count") or 0)))


def _call(raw: JSON, fallback_id: str) -> ToolCall:
    function = (raw or {}).get("function") or {}
    arguments = function.get("arguments")
    if isinstance(arguments, str):  # some models' templates give the arguments as text
        arguments = decode_model_arguments(arguments)
    elif arguments is None:
        arguments = {}
    call_id = (raw or {}).get("id") or fallback_id
    return ToolCall(str(call_id), str(function.get("name") or ""), arguments)

