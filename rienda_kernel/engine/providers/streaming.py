"""The HTTP side every vendor provider shares.

:class:`HttpProvider` holds what a user configures for any endpoint (see :mod:`.options`:
base URL, the environment variable holding the key, timeouts, retries, request options)
and opens a streamed POST:

- the exchange runs on a daemon thread (:class:`ModelExchange`, over the one client of
  :mod:`..http`, whose transport is injectable); a cancelled token wakes the waiting
  thread at once with :class:`Interrupted`; connections are reused between turns;
- 429, 5xx and connection failures are retried ``max_retries`` times, waiting what the
  server's ``Retry-After`` (or ``retry-after-ms``) says, else an exponential backoff that
  starts at ``backoff`` seconds; no wait exceeds ``max_wait``. Each wait is announced as a
  :class:`NoticeChunk` ("retrying (1/3) in 1 s"). A 5xx whose body says the request is
  invalid is not retried: sending it again cannot help; nor is a refusal for the request's
  length (:mod:`.overflow`), raised as :class:`ContextOverflow`;
- 401/403 says the key was refused, never printing it; other statuses quote the server's
  own error text, short and unescaped;
- every ProviderError names the endpoint's URL (:func:`..secrets.scrub_url`: a key in its
  query string is never shown), before the stream and while it is read
  (:meth:`HttpProvider.read`: a stream that ends without its end marker, a malformed or an
  error event, a broken connection, an answer cut off).

:class:`LineReader` and :class:`EventReader` turn the body into NDJSON lines or server-sent
events, remembering the last lines for error messages ("the last the server sent: ...").
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Generator, Iterator, Mapping
from typing import Any, ClassVar

from .. import http
from ..cancel import CancelToken
from ..errors import ContextOverflow, Interrupted, ProviderError
from ..secrets import scrub_text, scrub_url
from ..common import bounded
from ..common.text import repair
from .base import Chunk, ModelRequest, NoticeChunk, Provider
from .options import CONNECTION_OPTIONS, REQUEST_OPTIONS, Checker, check_options
from .overflow import filled, overflow
from .replies import excerpt, retry_after, says_invalid, server_message
from .window import Window, configured_window, known_window, llama_props

httpx = http.httpx

__all__ = [
    "EventReader",
    "ModelExchange",
    "HttpProvider",
    "LineReader",
    "decode_model_arguments",
    "decode_json",
]

_DEFAULT = object()  # "not configured"


class HttpProvider(Provider):
    """A vendor endpoint reached over HTTP.

    Subclasses set ``api`` (the name in config.yaml's ``api:``), ``key_env`` (the default
    key variable), ``base_url_env`` and ``default_base_url``, ``path`` (appended to the
    base URL) and ``request_options`` (the checkers of the options they accept per request,
    :data:`.options.REQUEST_OPTIONS` and their own). ``key_required`` False sends the key
    only when its variable is set. ``connect_hint`` follows "cannot connect" errors.

    ``name`` is the endpoint's name in config.yaml (``providers: NAME:``), used in
    messages. ``base_url``: None reads ``base_url_env`` at each request. The key: an
    endpoint with a ``base_url`` of its own sends none unless ``api_key_env`` is given;
    otherwise ``api_key_env`` defaults to ``key_env`` (None: no key). ``connect_timeout``
    and ``read_timeout`` (seconds) bound connecting and each wait for data. Other keywords
    are request options (``max_tokens``...), checked here.
    """

    api: ClassVar[str]
    key_env: ClassVar[str | None]
    base_url_env: ClassVar[str]
    default_base_url: ClassVar[str]
    path: ClassVar[str]
    key_required: ClassVar[bool] = True
    connect_hint: ClassVar[str] = ""
    request_options: ClassVar[Mapping[str, Checker]] = REQUEST_OPTIONS

    def __init__(
        self,
        base_url: str | None = None,
        api_key_env: Any = _DEFAULT,
        *,
        name: str | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 120.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_wait: float = 60.0,
        **options: Any,
    ) -> None:
        self.name = name or self.api
        self.base_url = base_url
        if api_key_env is _DEFAULT:
            api_key_env = None if base_url else self.key_env
        self.api_key_env: str | None = api_key_env
        self.connect_timeout = float(connect_timeout)
        self.read_timeout = float(read_timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_wait = float(max_wait)
        self.options = check_options(options, self.request_options, self.where())
        self._windows: dict[str, Window | None] = {}  # what the server said of each model's window

    @classmethod
    def from_options(cls, options: Mapping[str, Any], name: str | None = None) -> HttpProvider:
        """Build from a config.yaml entry; ConfigError naming the entry and the unknown or
        bad option."""
        where = f"config.yaml: providers.{name or cls.api}"
        checked = check_options(options, {**CONNECTION_OPTIONS, **cls.request_options}, where)
        return cls(name=name, **checked)

    def where(self) -> str:
        """Where this endpoint is configured, for messages."""
        return f"config.yaml: providers.{self.name}"

    def url_source(self) -> str:
        """What to check when the server cannot be reached: where its URL was set."""
        if self.base_url:
            return f"check base_url under providers: {self.name}: in config.yaml"
        if os.environ.get(self.base_url_env):
            return f"check ${self.base_url_env}, or set base_url under providers: {self.name}: in config.yaml"
        return f"the default URL; set ${self.base_url_env} or base_url under providers: {self.name}: in config.yaml"

    # -- what subclasses may refine --------------------------------------------------------

    def base(self) -> str:
        """The base URL, without a trailing slash."""
        base = self.base_url or os.environ.get(self.base_url_env) or self.default_base_url
        return base.rstrip("/")

    def url(self) -> str:
        return self.base() + self.path

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    # -- before and during the exchange ------------------------------------------------------

    def preflight(self, model: str, options: Mapping[str, Any], where: str) -> None:
        """The key is there (when one is needed) and the agent's options are known."""
        self.api_key(model)
        check_options(options, self.request_options, f"{where}: options")

    def request_options_for(self, request: ModelRequest) -> dict[str, Any]:
        """The endpoint's request options, overridden by the agent's (``request.options``)."""
        return {**self.options, **check_options(request.options, self.request_options, "the agent's options")}

    def context_window(self, model: str, options: Mapping[str, Any]) -> Window | None:
        """``context_window`` in the agent's options or the endpoint's, else what the server
        says (:meth:`server_window`, asked once per model), else the table's; None when
        unknown. Never raises; the server's answer is awaited at most :data:`.window.PROBE_TIMEOUT`."""
        merged = {**self.options, **options}
        configured = configured_window(merged)
        if configured is not None:
            return configured
        if model not in self._windows:
            self._windows[model] = self.server_window(model)
        return self._windows[model] or known_window(model)

    def server_window(self, model: str) -> Window | None:
        """What the server says of ``model``'s window: an endpoint whose base URL is not the
        vendor's own may be llama.cpp's server, asked at ``/props``."""
        base = self.base()
        if base == self.default_base_url.rstrip("/"):
            return None
        tokens = llama_props(base)
        return Window(tokens, "server") if tokens else None

    def api_key(self, model: str) -> str:
        """The key from ``api_key_env`` ("" when none is configured); ProviderError naming
        the variable to set when a required key is missing, before any request."""
        if not self.api_key_env:
            return ""
        key = os.environ.get(self.api_key_env, "").strip()
        if not key and self.key_required:
            raise ProviderError(f"no API key: set the environment variable {self.api_key_env} "
                                f"(model {self.name}/{model} at {self.url()})")
        return key

    def read(self, exchange: ModelExchange, chunks: Iterator[Chunk], request: ModelRequest) -> Iterator[Chunk]:
        """``chunks`` (the vendor's reading of ``exchange``'s body), the exchange abandoned
        however they end; a ProviderError raised while reading names the endpoint's URL
        (scrubbed), as the errors before the stream do; an answer cut off when it filled
        ``request``'s context window is a :class:`ContextOverflow` (:func:`.overflow.filled`)."""
        try:
            yield from chunks
        except ProviderError as exc:
            raise filled(exc, exchange.shown_url, lambda: self.context_window(request.model, request.options)) from exc
        finally:
            exchange.abandon()

    def open(self, body: dict[str, Any], key: str, cancel: CancelToken,
             headers: Mapping[str, str] | None = None) -> Generator[NoticeChunk, None, ModelExchange]:
        """POST ``body``, retrying 429/5xx/connection failures (a notice before each wait);
        returns the exchange of a 200. Use as ``exchange = yield from self.open(...)``."""
        url = self.url()
        shown = scrub_url(url)
        all_headers = {**(headers or {}), **(self.auth_headers(key) if key else {})}
        cancel.raise_if_cancelled()
        attempt = 0
        while True:
            exchange = ModelExchange(url, all_headers, body, self._timeout(), cancel)
            event = exchange.next()
            if event[0] == "status" and event[1] == 200:
                return exchange
            exchange.abandon()
            what, retryable, wait_hint = self._failure(event, key, shown)
            if not retryable:
                raise ProviderError(f"{shown}: {what}")
            if attempt >= self.max_retries:
                tries = attempt + 1
                hint = f" ({self.connect_hint or self.url_source()})" if event[0] == "connect" else ""
                raise ProviderError(f"{shown}: gave up after {tries} attempt{'s' if tries > 1 else ''}: {what}{hint}")
            delay = min(max(wait_hint if wait_hint is not None else self.backoff * (2 ** attempt), 0.0), self.max_wait)
            attempt += 1
            yield NoticeChunk(f"provider:{self.name}", what,
                              f"retrying ({attempt}/{self.max_retries}) in {round(delay, 2):g} s")
            if cancel.wait(delay):
                raise Interrupted("stopped")

    def _failure(self, event: tuple[Any, ...], key: str, url: str) -> tuple[str, bool, float | None]:
        """What a failed attempt says, whether retrying may help, and the server's wait."""
        if event[0] == "connect":
            return f"cannot connect: {redact(str(event[1]), key)}", True, None
        if event[0] != "status":  # "error": a failure that retrying would not cure (a timeout)
            raise ProviderError(f"{url}: {redact(str(event[1]), key)}")
        status, response_headers, text = event[1], event[2], event[3]
        message = redact(server_message(text), key)
        if status in (401, 403):
            raise ProviderError(f"{url}: {self._refused(status)}: {message}")
        too_long = overflow(text)
        if too_long is not None:  # the same request would be refused again: not retried
            raise ContextOverflow(f"{url}: HTTP {status}: {message}", tokens=too_long[0], window=too_long[1])
        retryable = (status == 429 or status >= 500) and not says_invalid(text)
        return f"HTTP {status}: {message}", retryable, retry_after(response_headers)

    def _refused(self, status: int) -> str:
        if self.api_key_env:
            return f"the API key in {self.api_key_env} was refused (HTTP {status})"
        return f"the server refused the request (HTTP {status}); if it needs a key, set api_key_env"

    def _timeout(self) -> httpx.Timeout:
        return httpx.Timeout(connect=self.connect_timeout, read=self.read_timeout,
                             write=self.read_timeout, pool=self.connect_timeout)


class ModelExchange:
    """One streamed POST (an :class:`..http.Exchange` reading lines) and its events as a
    provider reads them:

    ``("status", code, headers, error_text)`` first (error_text only when code != 200), then
    ``("line", text)``... and ``("eof",)``; or ``("connect", what)`` (retrying may help) /
    ``("error", what)`` (it would not).
    """

    def __init__(self, url: str, headers: dict[str, str], body: dict[str, Any], timeout: httpx.Timeout,
                 cancel: CancelToken) -> None:
        self.url = url
        self.shown_url = scrub_url(url)  # the URL as messages name it
        self._read_timeout = timeout.read
        self._started = False
        self._exchange = http.Exchange("POST", url, cancel=cancel, timeout=timeout, lines=True,
                                       read_error_body=True, json=body, headers=headers)

    def next(self) -> tuple[Any, ...]:
        """The next event; Interrupted as soon as the token is cancelled."""
        event = self._exchange.next()
        kind = event[0]
        if kind == "cancelled":
            self.abandon()
            raise Interrupted("stopped")
        if kind == "status" and event[1] == 200:
            self._started = True
            return ("status", 200, dict(event[2]), "")
        if kind == "error":
            return self._failure(event[1])
        return event

    def abandon(self) -> None:
        self._exchange.abandon()

    def _failure(self, exc: Exception) -> tuple[str, Any]:
        if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
            return ("connect", exc)
        if isinstance(exc, httpx.RemoteProtocolError):
            return ("error" if self._started else "connect", f"the connection broke: {exc}")
        if isinstance(exc, httpx.TimeoutException):
            return ("error", f"no data from the server within the {self._read_timeout:g} s read timeout")
        if isinstance(exc, http.LineTooLong):
            return ("error", str(exc))
        return ("error", f"{type(exc).__name__}: {exc}")


# -- reading the body ------------------------------------------------------------------------


class LineReader:
    """The body's lines as they arrive, remembering the last few for error messages."""

    def __init__(self, exchange: ModelExchange, key: str) -> None:
        self._exchange = exchange
        self._key = key
        self._seen: deque[str] = deque(maxlen=8)

    def lines(self) -> Iterator[str]:
        """Each line (empty ones included) until the body ends; ProviderError if it breaks
        (:meth:`HttpProvider.read` adds the URL)."""
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
        return excerpt(redact("\n".join(self._seen), self._key), tail=True)


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
    """One JSON object the server sent, its strings made valid Unicode (lone surrogates
    from ``\\ud83d`` escapes replaced); ProviderError quoting it when it is not one (or
    is nested deeper or is larger than :mod:`..common.bounded` allows)."""
    try:
        value = bounded.loads(payload)
    except bounded.Unreadable as exc:
        problem = "that is not JSON" if str(exc).startswith("not valid JSON") else str(exc)
        # from None: the cause quotes the payload before it is redacted
        raise ProviderError(f"the server sent data {problem}: {excerpt(redact(payload, key))}") from None
    if not isinstance(value, dict):
        raise ProviderError(f"the server sent an unexpected event: {excerpt(redact(payload, key))}")
    return repair(value)


def decode_model_arguments(arguments: str) -> Any:
    """Tool-call arguments decoded (valid Unicode); the raw text when they are not JSON, or
    too deep or too large to decode (the tool then gets an error result saying so)."""
    if not arguments.strip():
        return {}
    try:
        return repair(bounded.loads(arguments))
    except bounded.Unreadable:
        return repair(arguments)


def redact(text: str, key: str) -> str:
    """``text`` without ``key`` and without the process's other secrets (:mod:`..secrets`)."""
    return scrub_text(text, also=(key,))
