"""OpenAI's Chat Completions API (and servers that speak it), streamed over httpx.

``openai/<model>`` posts to ``{base_url}/chat/completions`` with ``stream: true`` and turns
the server-sent events back into chunks: ``delta.content`` -> :class:`TextChunk`,
``delta.reasoning_content`` -> :class:`ThinkingChunk`, tool calls (their ``arguments``
assembled from pieces, by ``index``) -> one :class:`ToolCallChunk` each at the end, and
the final ``usage`` -> :class:`UsageChunk`.

The key comes from the environment variable ``api_key_env`` (``OPENAI_API_KEY``), the base
URL from ``base_url`` or else ``OPENAI_BASE_URL`` (default ``https://api.openai.com/v1``).
429, 5xx and connection failures are retried ``max_retries`` times, waiting what the
server's ``Retry-After`` says or else an exponential backoff. The HTTP exchange runs on a
worker thread; the calling thread waits on it in short steps, so a cancelled token stops the
stream at once with :class:`Interrupted`.
"""

from __future__ import annotations

import json
import os
import queue
import re
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from ..cancel import CancelToken
from ..errors import ConfigError, Interrupted, ProviderError
from ..messages import Message, ToolCall, Usage
from .base import Chunk, ModelRequest, Provider, TextChunk, ThinkingChunk, ToolCallChunk, UsageChunk

__all__ = ["OpenAIProvider", "request_body"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_EXCERPT = 300
_POLL = 0.05
_SECRET_LIKE = re.compile(r"\bsk-[A-Za-z0-9_\-*.]{4,}")
_OPTIONS = {"base_url", "api_key_env", "connect_timeout", "read_timeout", "max_retries", "backoff", "max_wait"}


class OpenAIProvider(Provider):
    """A Chat Completions endpoint.

    ``base_url``: None reads ``OPENAI_BASE_URL`` at each request. ``connect_timeout`` and
    ``read_timeout`` (seconds) bound connecting and each wait for data. ``max_retries``
    retries after the first attempt; ``backoff`` is the first wait when the server gives no
    ``Retry-After`` (doubling each time); no wait exceeds ``max_wait``.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        *,
        connect_timeout: float = 10.0,
        read_timeout: float = 120.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_wait: float = 60.0,
    ) -> None:
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.connect_timeout = float(connect_timeout)
        self.read_timeout = float(read_timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_wait = float(max_wait)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> OpenAIProvider:
        """Build from a config mapping (``base_url``, ``api_key_env``, timeouts...)."""
        unknown = sorted(set(options) - _OPTIONS)
        if unknown:
            raise ConfigError(f"openai provider: unknown option(s) {', '.join(unknown)}; "
                              f"known: {', '.join(sorted(_OPTIONS))}")
        try:
            return cls(**dict(options))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"openai provider: bad option: {exc}") from exc

    # -- the request ---------------------------------------------------------------------

    def _url(self) -> str:
        base = self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        return base.rstrip("/") + "/chat/completions"

    def stream(self, request: ModelRequest, cancel: CancelToken) -> Iterator[Chunk]:
        headers = {"Accept": "text/event-stream"}
        key = ""
        if self.api_key_env:  # None: a local server that wants no key
            key = os.environ.get(self.api_key_env, "").strip()
            if not key:
                raise ProviderError(f"no API key: set the environment variable {self.api_key_env} "
                                    f"(model {request.model} at {self._url()})")
            headers["Authorization"] = f"Bearer {key}"
        url = self._url()
        body = request_body(request)
        cancel.raise_if_cancelled()
        exchange = self._open(url, headers, body, key, cancel)
        try:
            yield from _parse(exchange, key)
        finally:
            exchange.abandon()

    def _open(self, url: str, headers: dict[str, str], body: dict[str, Any], key: str,
              cancel: CancelToken) -> _Exchange:
        """Start the exchange, retrying 429/5xx/connection failures; the 200 response."""
        attempt = 0
        while True:
            exchange = _Exchange(url, headers, body, self._timeout(), cancel)
            event = exchange.next()
            if event[0] == "status" and event[1] == 200:
                return exchange
            exchange.abandon()
            if event[0] == "status":
                status, response_headers, text = event[1], event[2], event[3]
                message = _redact(_server_message(text), key)
                if status in (401, 403):
                    raise ProviderError(f"{url}: the API key in {self.api_key_env} was refused "
                                        f"(HTTP {status}): {message}")
                retryable = status == 429 or status >= 500
                what = f"HTTP {status}: {message}"
                wait_hint = _retry_after(response_headers)
            elif event[0] == "connect":
                retryable, what, wait_hint = True, f"cannot connect: {event[1]}", None
            else:  # "error": a failure that retrying would not cure (e.g. a timeout)
                raise ProviderError(f"{url}: {_redact(str(event[1]), key)}")
            if not retryable:
                raise ProviderError(f"{url}: {what}")
            if attempt >= self.max_retries:
                tries = attempt + 1
                raise ProviderError(f"{url}: gave up after {tries} attempt{'s' if tries > 1 else ''}: {what}")
            delay = wait_hint if wait_hint is not None else self.backoff * (2 ** attempt)
            if cancel.wait(min(max(delay, 0.0), self.max_wait)):
                raise Interrupted("stopped")
            attempt += 1

    def _timeout(self) -> httpx.Timeout:
        return httpx.Timeout(connect=self.connect_timeout, read=self.read_timeout,
                             write=self.read_timeout, pool=self.connect_timeout)


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
        body["tools"] = [
            {"type": "function",
             "function": {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)}}
            for tool in request.tools
        ]
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


# -- the HTTP exchange, on a worker thread -------------------------------------------------


class _Exchange:
    """One POST, read on a daemon thread into a queue of events:

    ``("status", code, headers, error_text)`` first (error_text only when code != 200), then
    ``("line", text)``... and ``("eof",)``; or ``("connect", exc)`` / ``("error", exc)``.
    """

    def __init__(self, url: str, headers: dict[str, str], body: dict[str, Any], timeout: httpx.Timeout,
                 cancel: CancelToken) -> None:
        self._events: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self._stop = threading.Event()
        self._response: httpx.Response | None = None
        self._cancel = cancel
        self._unregister = cancel.on_cancel(self._close_response)
        self._thread = threading.Thread(target=self._run, args=(url, headers, body, timeout),
                                        name="rienda-openai", daemon=True)
        self._thread.start()

    def next(self) -> tuple[Any, ...]:
        """The next event; Interrupted as soon as the token is cancelled."""
        while True:
            if self._cancel.cancelled:
                self.abandon()
                raise Interrupted("stopped")
            try:
                return self._events.get(timeout=_POLL)
            except queue.Empty:
                continue

    def abandon(self) -> None:
        self._stop.set()
        self._unregister()
        self._close_response()

    def _close_response(self) -> None:
        self._stop.set()
        response = self._response
        if response is not None:
            try:
                response.close()
            except Exception:  # closing from another thread is best effort
                pass

    def _run(self, url: str, headers: dict[str, str], body: dict[str, Any], timeout: httpx.Timeout) -> None:
        put = self._events.put
        started = False
        try:
            with httpx.Client(timeout=timeout) as client:
                with client.stream("POST", url, json=body, headers=headers) as response:
                    self._response = response
                    if response.status_code != 200:
                        text = response.read().decode("utf-8", errors="replace")
                        put(("status", response.status_code, dict(response.headers), text))
                        return
                    put(("status", 200, dict(response.headers), ""))
                    started = True
                    for line in response.iter_lines():
                        if self._stop.is_set():
                            return
                        put(("line", line))
                    put(("eof",))
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            put(("connect", exc))
        except httpx.RemoteProtocolError as exc:
            put(("error" if started else "connect", f"the connection broke: {exc}"))
        except httpx.TimeoutException:
            put(("error", f"no data from the server within the {timeout.read:g} s read timeout"))
        except Exception as exc:  # noqa: BLE001 - any failure reaches the caller as an event
            if not self._stop.is_set():
                put(("error", f"{type(exc).__name__}: {exc}"))


# -- the stream ----------------------------------------------------------------------------


def _parse(exchange: _Exchange, key: str) -> Iterator[Chunk]:
    """Chunks from the server-sent events, until ``data: [DONE]``."""
    calls: dict[int, dict[str, Any]] = {}
    usage: Usage | None = None
    data: list[str] = []
    seen: deque[str] = deque(maxlen=8)  # the last lines the server sent, for error messages

    def note(line: str) -> None:
        if line:
            seen.append(line)

    while True:
        event = exchange.next()
        if event[0] == "line":
            line = event[1]
            note(line)
            if line == "":
                if not data:
                    continue
                payload, data = "\n".join(data), []
            elif line.startswith("data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(" ") else value)
                continue
            else:
                continue  # comments (":"), event:, id:, retry: lines
        elif event[0] == "eof":
            if not data:
                sent = _tail("\n".join(seen)) if seen else "nothing"
                raise ProviderError(f"the stream ended before data: [DONE]; the last the server sent: {sent}")
            payload, data = "\n".join(data), []
        else:
            raise ProviderError(f"the stream failed: {_redact(str(event[1]), key)}")

        if payload.strip() == "[DONE]":
            break
        try:
            chunk = json.loads(payload)
        except json.JSONDecodeError:
            raise ProviderError(f"the server sent data that is not JSON: {_excerpt(payload)}") from None
        if not isinstance(chunk, dict):
            raise ProviderError(f"the server sent an unexpected event: {_excerpt(payload)}")
        if chunk.get("error"):
            raise ProviderError(f"the server reported an error mid-stream: "
                                f"{_redact(_server_message(payload), key)}")
        if isinstance(chunk.get("usage"), dict):
            raw = chunk["usage"]
            usage = Usage(input_tokens=int(raw.get("prompt_tokens") or 0),
                          output_tokens=int(raw.get("completion_tokens") or 0))
        for choice in chunk.get("choices") or ():
            delta = (choice or {}).get("delta") or {}
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

    for index in sorted(calls):
        call = calls[index]
        raw_arguments = "".join(call["arguments"])
        yield ToolCallChunk(ToolCall(call["id"] or f"call_{index}", call["name"], _decode(raw_arguments)))
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


def _decode(arguments: str) -> Any:
    """The decoded arguments; the raw text when they are not JSON (the tool gets an error)."""
    if not arguments.strip():
        return {}
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return arguments


def _server_message(text: str) -> str:
    """The ``error.message`` of an OpenAI error body, else an excerpt of the text."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return _excerpt(text) if text.strip() else "(empty response)"
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return _excerpt(str(error["message"]))
    if isinstance(error, str):
        return _excerpt(error)
    return _excerpt(text)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds); None if absent."""
    lowered = {k.lower(): v for k, v in headers.items()}
    try:
        if "retry-after-ms" in lowered:
            return float(lowered["retry-after-ms"]) / 1000
        if "retry-after" in lowered:
            return float(lowered["retry-after"])
    except ValueError:
        return None  # an HTTP date: fall back to the backoff
    return None


def _excerpt(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= _EXCERPT else text[:_EXCERPT] + "...")


def _tail(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= _EXCERPT else "..." + text[-_EXCERPT:])


def _redact(text: str, key: str) -> str:
    if key:
        text = text.replace(key, "***")
    return _SECRET_LIKE.sub("sk-***", text)
