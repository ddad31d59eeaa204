"""The HTTP side every vendor provider shares.

:class:`HttpProvider` holds what a user configures for any endpoint (base URL, the
environment variable holding the key, timeouts, retries) and opens a streamed POST:

- the exchange runs on a daemon thread (:class:`Exchange`); the calling thread waits on it
  in short steps, so a cancelled token stops at once with :class:`Interrupted`; one
  ``httpx.Client`` serves every provider, so connections are reused between turns;
- 429, 5xx and connection failures are retried ``max_retries`` times, waiting what the
  server's ``Retry-After`` (or ``retry-after-ms``) says, else an exponential backoff that
  starts at ``backoff`` seconds; no wait exceeds ``max_wait``;
- 401/403 says the key was refused, never printing it; other statuses quote the server's
  ``error.message`` (or an excerpt of what it sent).

:class:`LineReader` and :class:`EventReader` turn the body into NDJSON lines or server-sent
events, remembering the last lines for error messages ("the last the server sent: ...").
"""

from __future__ import annotations

import json
import os
import queue
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import httpx

from ..cancel import CancelToken
from ..errors import ConfigError, Interrupted, ProviderError
from ..secrets import scrub_text
from .base import Provider

__all__ = [
    "EventReader",
    "Exchange",
    "HttpProvider",
    "LineReader",
    "decode_arguments",
    "decode_json",
    "excerpt",
]

_EXCERPT = 300
_POLL = 0.05
_COMMON_OPTIONS = frozenset({"base_url", "api_key_env", "connect_timeout", "read_timeout",
                             "max_retries", "backoff", "max_wait"})
_DEFAULT = object()  # "the class's own key variable"


class HttpProvider(Provider):
    """A vendor endpoint reached over HTTP.

    Subclasses set ``api`` (the name in config.yaml's ``api:``), ``key_env`` (the default
    key variable, None when the server wants no key), ``base_url_env`` and
    ``default_base_url``, ``path`` (appended to the base URL) and ``extra_options`` (their
    own config keys, accepted by ``__init__`` as keywords). ``key_required`` False sends the
    key only when its variable is set. ``connect_hint`` follows "cannot connect" errors.

    ``base_url``: None reads ``base_url_env`` at each request. ``connect_timeout`` and
    ``read_timeout`` (seconds) bound connecting and each wait for data.
    """

    api: ClassVar[str]
    key_env: ClassVar[str | None]
    base_url_env: ClassVar[str]
    default_base_url: ClassVar[str]
    path: ClassVar[str]
    key_required: ClassVar[bool] = True
    connect_hint: ClassVar[str] = ""
    extra_options: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self,
        base_url: str | None = None,
        api_key_env: Any = _DEFAULT,
        *,
        connect_timeout: float = 10.0,
        read_timeout: float = 120.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_wait: float = 60.0,
    ) -> None:
        self.base_url = base_url
        self.api_key_env: str | None = self.key_env if api_key_env is _DEFAULT else api_key_env
        self.connect_timeout = float(connect_timeout)
        self.read_timeout = float(read_timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_wait = float(max_wait)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> HttpProvider:
        """Build from a config mapping; ConfigError naming an unknown or bad option."""
        known = _COMMON_OPTIONS | cls.extra_options
        unknown = sorted(set(options) - known)
        if unknown:
            raise ConfigError(f"{cls.api} provider: unknown option(s) {', '.join(unknown)}; "
                              f"known: {', '.join(sorted(known))}")
        try:
            return cls(**dict(options))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{cls.api} provider: bad option: {exc}") from exc

    # -- what subclasses may refine --------------------------------------------------------

    def base(self) -> str:
        """The base URL, without a trailing slash."""
        base = self.base_url or os.environ.get(self.base_url_env) or self.default_base_url
        return base.rstrip("/")

    def url(self) -> str:
        return self.base() + self.path

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    # -- the exchange ------------------------------------------------------------------------

    def api_key(self, model: str) -> str:
        """The key from ``api_key_env`` ("" when none is configured); ProviderError naming
        the variable to set when a required key is missing, before any request."""
        if not self.api_key_env:
            return ""
        key = os.environ.get(self.api_key_env, "").strip()
        if not key and self.key_required:
            raise ProviderError(f"no API key: set the environment variable {self.api_key_env} "
                                f"(model {model} at {self.url()})")
        return key

    def open(self, body: dict[str, Any], key: str, cancel: CancelToken,
             headers: Mapping[str, str] | None = None) -> Exchange:
        """POST ``body``, retrying 429/5xx/connection failures; the exchange of a 200."""
        url = self.url()
        all_headers = {**(headers or {}), **(self.auth_headers(key) if key else {})}
        cancel.raise_if_cancelled()
        attempt = 0
        while True:
            exchange = Exchange(url, all_headers, body, self._timeout(), cancel)
            event = exchange.next()
            if event[0] == "status" and event[1] == 200:
                return exchange
            exchange.abandon()
            if event[0] == "status":
                status, response_headers, text = event[1], event[2], event[3]
                message = redact(server_message(text), key)
                if status in (401, 403):
                    raise ProviderError(f"{url}: {self._refused(status)}: {message}")
                retryable = status == 429 or status >= 500
                what = f"HTTP {status}: {message}"
                wait_hint = retry_after(response_headers)
            elif event[0] == "connect":
                retryable, what, wait_hint = True, f"cannot connect: {event[1]}", None
            else:  # "error": a failure that retrying would not cure (e.g. a timeout)
                raise ProviderError(f"{url}: {redact(str(event[1]), key)}")
            if not retryable:
                raise ProviderError(f"{url}: {what}")
            if attempt >= self.max_retries:
                tries = attempt + 1
                hint = f" ({self.connect_hint})" if event[0] == "connect" and self.connect_hint else ""
                raise ProviderError(f"{url}: gave up after {tries} attempt{'s' if tries > 1 else ''}: {what}{hint}")
            delay = wait_hint if wait_hint is not None else self.backoff * (2 ** attempt)
            if cancel.wait(min(max(delay, 0.0), self.max_wait)):
                raise Interrupted("stopped")
            attempt += 1

    def _refused(self, status: int) -> str:
        if self.api_key_env:
            return f"the API key in {self.api_key_env} was refused (HTTP {status})"
        return f"the server refused the request (HTTP {status}); if it needs a key, set api_key_env"

    def _timeout(self) -> httpx.Timeout:
        return httpx.Timeout(connect=self.connect_timeout, read=self.read_timeout,
                             write=self.read_timeout, pool=self.connect_timeout)


class Exchange:
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
                                        name="rienda-provider", daemon=True)
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
            with _client().stream("POST", url, json=body, headers=headers, timeout=timeout) as response:
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


_CLIENT: httpx.Client | None = None
_CLIENT_LOCK = threading.Lock()


def _client() -> httpx.Client:
    """One client for every provider in the process: its connections (and their TLS
    sessions) are kept between model turns and runs, instead of a new handshake each time."""
    global _CLIENT
    with _CLIENT_LOCK:
        if _CLIENT is None:
            _CLIENT = httpx.Client()
        return _CLIENT


# -- reading the body ------------------------------------------------------------------------


class LineReader:
    """The body's lines as they arrive, remembering the last few for error messages."""

    def __init__(self, exchange: Exchange, key: str) -> None:
        self._exchange = exchange
        self._key = key
        self._seen: deque[str] = deque(maxlen=8)

    def lines(self) -> Iterator[str]:
        """Each line (empty ones included) until the body ends; ProviderError if it breaks."""
        while True:
            event = self._exchange.next()
            if event[0] == "eof":
                return
            if event[0] != "line":
                raise ProviderError(f"the stream failed: {redact(str(event[1]), self._key)}")
            if event[1]:
                self._seen.append(event[1])
            yield event[1]

    def tail(self) -> str:
        """An excerpt of the last lines the server sent ("nothing" if none)."""
        if not self._seen:
            return "nothing"
        text = redact("\n".join(self._seen), self._key).strip()
        return repr(text if len(text) <= _EXCERPT else "..." + text[-_EXCERPT:])


class EventReader(LineReader):
    """Server-sent events: ``(event name, data)`` pairs (the name is "" when not given)."""

    def events(self) -> Iterator[tuple[str, str]]:
        name, data = "", []
        for line in self.lines():
            if line == "":
                if data:
                    yield name, "\n".join(data)
                name, data = "", []
            elif line.startswith("data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(" ") else value)
            elif line.startswith("event:"):
                name = line[6:].strip()
            # comments (":"), id: and retry: lines carry nothing for us
        if data:  # the body ended without the blank line after the last event
            yield name, "\n".join(data)


# -- helpers ----------------------------------------------------------------------------------


def decode_json(payload: str, key: str = "") -> dict[str, Any]:
    """One JSON object the server sent; ProviderError quoting it when it is not one."""
    try:
        value = json.loads(payload)
    except json.JSONDecodeError:
        raise ProviderError(f"the server sent data that is not JSON: {excerpt(redact(payload, key))}") from None
    if not isinstance(value, dict):
        raise ProviderError(f"the server sent an unexpected event: {excerpt(redact(payload, key))}")
    return value


def decode_arguments(arguments: str) -> Any:
    """Tool-call arguments decoded; the raw text when they are not JSON (the tool then gets
    an error result saying so)."""
    if not arguments.strip():
        return {}
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return arguments


def server_message(text: str) -> str:
    """The ``error.message`` (or string ``error``) of an error body, else an excerpt."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return excerpt(text) if text.strip() else "(empty response)"
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return excerpt(str(error["message"]))
    if isinstance(error, str):
        return excerpt(error)
    return excerpt(text)


def retry_after(headers: Mapping[str, str]) -> float | None:
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


def excerpt(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= _EXCERPT else text[:_EXCERPT] + "...")


def redact(text: str, key: str) -> str:
    """``text`` without ``key`` and without the process's other secrets (:mod:`..secrets`)."""
    return scrub_text(text, also=(key,))
