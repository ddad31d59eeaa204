"""The HTTP side every vendor provider shares.

:class:`HttpProvider` holds what a user configures for any endpoint (see :mod:`.options`:
base URL, the environment variable holding the key, timeouts, retries, request options)
and opens a streamed POST:

- the exchange runs on a daemon thread (:class:`.exchange.ModelExchange`, over the one
  client of :mod:`..http`, whose transport is injectable); a cancelled token wakes the
  waiting thread at once with :class:`Interrupted`; connections are reused between turns;
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

Reading the body (NDJSON lines, server-sent events) is :mod:`.exchange`'s.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import ClassVar, Literal, assert_never

from .. import http
from ..cancel import CancelToken
from ..errors import ConfigError, ContextOverflow, Interrupted, ProviderError
from ..secrets import scrub_url
from ..common.json_value import JSON, JSONObject
from ..http import httpx
from .base import Chunk, ModelRequest, NoticeChunk, Provider
from .exchange import ModelEvent, ModelExchange, StreamFailure, redact
from .options import CONNECTION_OPTIONS, REQUEST_OPTIONS, Checker, check_options
from .overflow import filled, overflow
from .replies import retry_after, says_invalid, server_message
from .window import Window, configured_window, known_window, llama_props

__all__ = ["HttpProvider"]


class _Unset(enum.Enum):
    """``api_key_env`` not configured (None is configured: no key)."""

    UNSET = "unset"


_DEFAULT = _Unset.UNSET


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
        api_key_env: str | None | Literal[_Unset.UNSET] = _DEFAULT,
        *,
        name: str | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 120.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_wait: float = 60.0,
        **options: JSON,
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
        http.warm_http()  # the client its first request needs, made beside the rest of the turn's setup

    @classmethod
    def from_options(cls, options: Mapping[str, JSON], name: str | None = None) -> HttpProvider:
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

    def preflight(self, model: str, options: Mapping[str, JSON], where: str, *, workdir: Path) -> None:
        """The key is there (when one is needed) and fits in an HTTP header, the URL is an
        http(s) URL, and the agent's options are known."""
        key = self.api_key(model)
        odd = next((index for index, char in enumerate(key) if not " " <= char <= "~"), None)
        if odd is not None:  # the character is not shown: it is part of a secret
            raise ProviderError(f"the API key in ${self.api_key_env} holds a character an HTTP header cannot carry "
                                f"(character {odd + 1} of {len(key)}); set the variable again")
        url = self.url()
        try:
            parsed = httpx.URL(url)
        except (httpx.InvalidURL, UnicodeError) as exc:
            raise ConfigError(f"{scrub_url(url)} is not a URL ({exc}); {self.url_source()}") from exc
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ConfigError(f"{scrub_url(url)} is not an http:// or https:// URL; {self.url_source()}")
        check_options(options, self.request_options, f"{where}: options")

    def request_options_for(self, request: ModelRequest) -> JSONObject:
        """The endpoint's request options, overridden by the agent's (``request.options``)."""
        return {**self.options, **check_options(request.options, self.request_options, "the agent's options")}

    def context_window(self, model: str, options: Mapping[str, JSON]) -> Window | None:
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

    def open(self, body: JSONObject, key: str, cancel: CancelToken,
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
            if isinstance(event, http.Status) and event.code == 200:
                return exchange
            exchange.abandon()
            what, retryable, wait_hint = self._failure(event, key, shown)
            if not retryable:
                raise ProviderError(f"{shown}: {what}")
            if attempt >= self.max_retries:
                tries = attempt + 1
                connecting = isinstance(event, StreamFailure) and event.connecting
                hint = f" ({self.connect_hint or self.url_source()})" if connecting else ""
                raise ProviderError(f"{shown}: gave up after {tries} attempt{'s' if tries > 1 else ''}: {what}{hint}")
            delay = min(max(wait_hint if wait_hint is not None else self.backoff * (2 ** attempt), 0.0), self.max_wait)
            attempt += 1
            yield NoticeChunk(f"provider:{self.name}", what,
                              f"retrying ({attempt}/{self.max_retries}) in {round(delay, 2):g} s")
            if cancel.wait(delay):
                raise Interrupted("stopped")

    def _failure(self, event: ModelEvent, key: str, url: str) -> tuple[str, bool, float | None]:
        """What a failed attempt (its first event) says, whether retrying may help, and the
        server's wait."""
        match event:
            case StreamFailure(connecting=True):
                return f"cannot connect: {redact(event.what, key)}", True, None
            case StreamFailure():  # a failure that retrying would not cure (a timeout)
                raise ProviderError(f"{url}: {redact(event.what, key)}")
            case http.Status():
                return self._refusal(event.code, event.headers, event.error_text or "", key, url)
            case http.Piece() | http.Eof():  # never first: a response's status comes before its body
                raise ProviderError(f"{url}: the response had no status")
            case _:
                assert_never(event)

    def _refusal(self, status: int, response_headers: Mapping[str, str], text: str, key: str,
                 url: str) -> tuple[str, bool, float | None]:
        """What a response other than a 200 says (``text``: its body's start), whether
        retrying may help, and the server's wait."""
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
