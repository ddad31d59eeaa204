"""HTTP requests for ``ctx.http.fetch`` and the built-in ``http`` tool, over the one
client (:mod:`..http`).

Each request is an :class:`~..http.Exchange` read on a daemon thread, so the caller stops
waiting the moment its :class:`CancelToken` is cancelled or the overall timeout passes;
an abandoned exchange stops reading at the next body chunk and closes its response.

A credential header sent (``Authorization``, ``X-Api-Key``...) is remembered as a secret
(:func:`..secrets.remember`), so a server that echoes it back cannot carry it into any output.
"""

from __future__ import annotations

import codecs
import socket
import time
from dataclasses import dataclass
from typing import assert_never

from ..cancel import CancelToken
from ..errors import Interrupted
from ..http import Cancelled, Eof, Exchange, Failed, Piece, Status, TimedOut, chunks, httpx
from ..secrets import is_credential_field, remember

__all__ = ["FetchError", "HttpResponse", "fetch"]

_DEFAULT_CONNECT_TIMEOUT_S = 30.0


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
    truncated: bool = False  # the body holds only the first ``keep`` bytes the server sent

    def to_js(self) -> dict[str, object]:
        """The object ``ctx.http.fetch`` resolves to (``truncated`` only when true)."""
        result: dict[str, object] = {"status": self.status, "headers": dict(self.headers), "body": self.body}
        if self.truncated:
            result["truncated"] = True
        return result


def fetch(
    url: str,
    *,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: str | None = None,
    timeout_ms: int | None = None,
    cancel: CancelToken | None = None,
    keep: int | None = None,
) -> HttpResponse:
    """Send one request and read the whole response, or with ``keep`` its first ``keep``
    bytes: the rest is never read (the connection is closed) and the response says
    ``truncated``, so memory stays bounded whatever the server sends.

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
    exchange = Exchange(method, url, cancel=cancel or CancelToken(), timeout=_timeout(timeout_ms), pieces=chunks,
                        headers=headers, content=body)
    deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
    try:
        return _read(exchange, url, deadline, timeout_ms, keep)
    finally:
        exchange.abandon()


def _read(exchange: Exchange[bytes], url: str, deadline: float | None, timeout_ms: int | None,
          keep: int | None) -> HttpResponse:
    """The whole response (its first ``keep`` bytes), within ``deadline`` (a monotonic
    time, or None)."""
    body = bytearray()  # one buffer, cut in place: no copy of a large body is made
    status: Status | None = None
    while True:
        event = exchange.next(None if deadline is None else max(0.0, deadline - time.monotonic()))
        match event:
            case Cancelled():
                raise Interrupted(f"fetch {url} interrupted")
            case TimedOut():
                raise FetchError(f"fetch {url} failed: timed out after {timeout_ms} ms")
            case Failed(error=error):
                if isinstance(error, (httpx.HTTPError, httpx.InvalidURL)):
                    raise FetchError(f"fetch {url} failed: {_cause(error, timeout_ms)}") from error
                raise error
            case Status():
                status = event
            case Piece(data=data):
                assert status is not None  # a response's pieces follow its status
                body += data
                if keep is not None and len(body) > keep:
                    del body[keep:]
                    text = _text(status.response, body, final=False)
                    return HttpResponse(status.code, _headers(status.headers), text, truncated=True)
            case Eof():
                assert status is not None  # a response's end follows its status
                return HttpResponse(status.code, _headers(status.headers), _text(status.response, body))
            case _:
                assert_never(event)


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


def _headers(headers: httpx.Headers) -> dict[str, str]:
    """Lower-cased names; repeated headers joined with ", "."""
    joined: dict[str, str] = {}
    for name, value in headers.multi_items():
        key = name.lower()
        joined[key] = f"{joined[key]}, {value}" if key in joined else value
    return joined


def _text(response: httpx.Response, content: bytes | bytearray, final: bool = True) -> str:
    """Decode as httpx's ``response.text`` does: the charset of Content-Type, else UTF-8;
    not ``final``: a character cut at the end is left out."""
    encoding = response.charset_encoding or "utf-8"
    try:
        codecs.lookup(encoding)
    except LookupError:
        encoding = "utf-8"
    return codecs.getincrementaldecoder(encoding)(errors="replace").decode(content, final=final)


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
