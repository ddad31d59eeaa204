"""HTTP requests for ``ctx.http.fetch`` and the built-in ``http`` tool.

Every request runs on a small worker thread so that the caller can stop waiting the
moment its :class:`CancelToken` is cancelled or the overall timeout passes; an
abandoned worker stops reading at the next body chunk and closes its response.

A credential header sent (``Authorization``, ``X-Api-Key``...) is remembered as a secret
(:func:`secrets.remember`), so a server that echoes it back cannot carry it into any output.
"""

from __future__ import annotations

import codecs
import http.cookiejar
import socket
import threading
from dataclasses import dataclass

from .. import imports
from ..cancel import CancelToken
from ..errors import Interrupted
from ..secrets import is_credential_field, remember

with imports.without("click"):  # httpx's command-line client: unused here, and slow to import
    import httpx

__all__ = ["FetchError", "HttpResponse", "fetch", "shared_client"]

_DEFAULT_CONNECT_TIMEOUT_S = 30.0

_client: httpx.Client | None = None
_client_lock = threading.Lock()


class FetchError(ConnectionError):
    """A request got no HTTP response; the message names the URL and the cause."""


@dataclass(frozen=True)
class HttpResponse:
    """A complete HTTP response; any status, 4xx and 5xx included.

    ``headers`` has lower-cased names; repeated headers are joined with ``", "``.
    """

    status: int
    headers: dict[str, str]
    body: str

    def to_js(self) -> dict[str, object]:
        """The object ``ctx.http.fetch`` resolves to."""
        return {"status": self.status, "headers": dict(self.headers), "body": self.body}


def shared_client() -> httpx.Client:
    """The process-wide client, created on first use.

    It follows redirects and keeps no cookies: every fetch is stateless, so one
    extension cannot see or ride on a session another one opened.
    """
    global _client
    with _client_lock:
        if _client is None:
            _client = httpx.Client(follow_redirects=True, cookies=_no_cookies())
        return _client


def _no_cookies() -> http.cookiejar.CookieJar:
    """A cookie jar that refuses to store (and so to send) any cookie."""
    return http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))


def fetch(
    url: str,
    *,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: str | None = None,
    timeout_ms: int | None = None,
    cancel: CancelToken | None = None,
    client: httpx.Client | None = None,
) -> HttpResponse:
    """Send one request and read the whole response.

    ``timeout_ms`` bounds each network operation and the request as a whole; None
    means 30 s to connect and no limit after that. Raises :class:`FetchError` when no
    response arrives (invalid URL, unsupported scheme, DNS, connection or timeout
    failure) and :class:`Interrupted` as soon as ``cancel`` is cancelled.
    """
    if cancel is not None and cancel.cancelled:
        raise Interrupted(f"fetch {url} interrupted before it started")
    _check_url(url)
    for name, value in (headers or {}).items():
        if is_credential_field(name):
            remember(value)
    request = _Request(client or shared_client(), method, url, headers, body, _timeout(timeout_ms))
    unregister = cancel.on_cancel(request.done.set) if cancel is not None else (lambda: None)
    try:
        request.start()
        finished = request.done.wait(None if timeout_ms is None else timeout_ms / 1000)
    finally:
        unregister()
    if cancel is not None and cancel.cancelled:
        request.abandon()
        raise Interrupted(f"fetch {url} interrupted")
    if not finished:
        request.abandon()
        raise FetchError(f"fetch {url} failed: timed out after {timeout_ms} ms")
    return request.outcome(timeout_ms)


def _check_url(url: str) -> None:
    """Raise FetchError unless ``url`` is an absolute http(s) URL."""
    try:
        scheme = httpx.URL(url).scheme
    except (httpx.InvalidURL, TypeError) as exc:
        raise FetchError(f"fetch {url} failed: invalid URL: {exc}") from exc
    if scheme not in ("http", "https"):
        problem = f"unsupported scheme {scheme!r}" if scheme else "no http:// or https:// scheme"
        raise FetchError(f"fetch {url} failed: {problem}")


def _timeout(timeout_ms: int | None) -> httpx.Timeout:
    if timeout_ms is None:
        return httpx.Timeout(None, connect=_DEFAULT_CONNECT_TIMEOUT_S)
    return httpx.Timeout(timeout_ms / 1000)


class _Request:
    """One request performed on a daemon thread; ``done`` is set when it ends."""

    def __init__(self, client: httpx.Client, method: str, url: str, headers, body, timeout: httpx.Timeout):
        self._client = client
        self._args = (method.upper(), url)
        self._kwargs = {"headers": headers, "content": body, "timeout": timeout}
        self._abandoned = threading.Event()
        self._response: HttpResponse | None = None
        self._error: Exception | None = None
        self.done = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._run, name=f"rienda-fetch {self._args[1]}", daemon=True).start()

    def abandon(self) -> None:
        """Nobody waits any more: stop reading at the next chunk."""
        self._abandoned.set()

    def outcome(self, timeout_ms: int | None) -> HttpResponse:
        """The response, or the failure mapped to :class:`FetchError`."""
        if self._error is None:
            assert self._response is not None
            return self._response
        url = self._args[1]
        if isinstance(self._error, (httpx.HTTPError, httpx.InvalidURL)):
            raise FetchError(f"fetch {url} failed: {_cause(self._error, timeout_ms)}") from self._error
        raise self._error

    def _run(self) -> None:
        try:
            self._response = self._perform()
        except Exception as exc:  # handed to the waiting thread
            self._error = exc
        finally:
            self.done.set()

    def _perform(self) -> HttpResponse | None:
        with self._client.stream(*self._args, **self._kwargs) as response:
            chunks = []
            for chunk in response.iter_bytes():
                if self._abandoned.is_set():
                    return None
                chunks.append(chunk)
            return HttpResponse(response.status_code, _headers(response.headers), _text(response, b"".join(chunks)))


def _headers(headers: httpx.Headers) -> dict[str, str]:
    """Lower-cased names; repeated headers joined with ", "."""
    joined: dict[str, str] = {}
    for name, value in headers.multi_items():
        key = name.lower()
        joined[key] = f"{joined[key]}, {value}" if key in joined else value
    return joined


def _text(response: httpx.Response, content: bytes) -> str:
    """Decode as httpx's ``response.text`` does: the charset of Content-Type, else UTF-8."""
    encoding = response.charset_encoding or "utf-8"
    try:
        codecs.lookup(encoding)
    except LookupError:
        encoding = "utf-8"
    return content.decode(encoding, errors="replace")


def _cause(exc: Exception, timeout_ms: int | None) -> str:
    """A short, lower-case description of why no response arrived."""
    if isinstance(exc, httpx.TimeoutException):
        if timeout_ms is None:
            return f"timed out connecting (after {_DEFAULT_CONNECT_TIMEOUT_S:g} s)"
        return f"timed out after {timeout_ms} ms"
    if isinstance(exc, httpx.UnsupportedProtocol):
        return f"unsupported URL: {exc}"
    if isinstance(exc, httpx.InvalidURL):
        return f"invalid URL: {exc}"
    root = _root_cause(exc)
    if isinstance(root, ConnectionRefusedError):
        return "connection refused"
    if isinstance(root, socket.gaierror):
        return f"could not resolve host ({root.strerror or root})"
    return str(exc) or type(exc).__name__


def _root_cause(exc: BaseException) -> BaseException:
    seen = {id(exc)}
    while (nxt := exc.__cause__ or exc.__context__) is not None and id(nxt) not in seen:
        seen.add(id(nxt))
        exc = nxt
    return exc
