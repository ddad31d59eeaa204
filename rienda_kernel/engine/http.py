"""The one HTTP client: every request Rienda makes goes through it.

``ctx.http.fetch``, the built-in ``http`` tool (:mod:`.ctx.http`) and the model providers
(:mod:`.providers.streaming`) share one ``httpx.Client`` per process, so connections and
TLS sessions are kept between calls and turns. Its transport is injectable the httpx way:
:func:`use_transport` swaps in any ``httpx.BaseTransport`` (``httpx.MockTransport`` in a
test, a proxying transport in an application) for every request that follows.

The client follows redirects and keeps no cookies: every request is stateless, so one
extension cannot see or ride on a session another opened.

An :class:`Exchange` is one request read on a daemon thread into a queue of events (the
closed union :data:`ExchangeEvent`), so the caller waits on the queue alone: the run's
cancel token puts an event there too, and the waiter wakes at once (no polling); an
abandoned exchange stops reading at its next piece and closes its response.
"""

from __future__ import annotations

import http.cookiejar
import queue
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Generic, TypeAlias, TypeVar, overload

from .common import imports
from .common.background import warm_up
from .cancel import CancelToken
from .common.json_value import JSON

with imports.without("click"):  # httpx's command-line client: unused here, and slow to import
    import httpx

__all__ = [
    "ERROR_BODY_CAP",
    "LINE_CAP",
    "Cancelled",
    "Eof",
    "Exchange",
    "ExchangeEvent",
    "Failed",
    "LineTooLong",
    "Lines",
    "Piece",
    "Status",
    "TimedOut",
    "chunks",
    "client",
    "httpx",
    "lines",
    "use_transport",
    "warm_http",
]

ERROR_BODY_CAP = 64 * 1024  # what is read of an error body a provider quotes (the rest is not read)
LINE_CAP = 16 * 1024 * 1024  # the longest line a provider's stream may send

_client: httpx.Client | None = None
_transport: httpx.BaseTransport | None = None
_lock = threading.Lock()
_warming = False  # warm_http was called once


def client() -> httpx.Client:
    """The process's client (made on first use, with the transport :func:`use_transport` set)."""
    global _client
    with _lock:
        if _client is None:
            _client = httpx.Client(follow_redirects=True, cookies=_no_cookies(), transport=_transport)
        return _client


def warm_http() -> None:
    """Make the process's client now, on a background thread (the first call only): the
    first request then finds it made instead of waiting for it (httpcore's import, and the
    CA certificates, which load with the GIL released, beside the caller's own work). An
    HTTP model provider calls this when it is made, so a run whose model speaks no HTTP
    (the scripted model) never imports httpx. The process waits for it at exit
    (:mod:`.common.background`)."""
    global _warming
    with _lock:
        if _warming or _client is not None:
            return
        _warming = True
    warm_up(client, name="rienda-http-warm")


def use_transport(transport: httpx.BaseTransport | None) -> None:
    """Send every later request through ``transport`` (None: the network again). The
    client made for the previous transport is closed."""
    global _client, _transport
    with _lock:
        old, _client, _transport = _client, None, transport
    if old is not None:
        old.close()


def _no_cookies() -> http.cookiejar.CookieJar:
    """A cookie jar that refuses to store (and so to send) any cookie."""
    return http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))


class LineTooLong(ValueError):
    """A streamed body sent a line longer than :data:`LINE_CAP` (nothing reads on past it)."""


def _head(response: httpx.Response, cap: int) -> bytes:
    """The first ``cap`` bytes of the body; what follows is never read."""
    kept = bytearray()
    for chunk in response.iter_bytes():
        kept += chunk
        if len(kept) >= cap:
            break
    return bytes(kept[:cap])


def chunks(response: httpx.Response) -> Iterator[bytes]:
    """The body's bytes, in the pieces they arrive in."""
    return response.iter_bytes()


Lines: TypeAlias = tuple[str, ...]  # lines of a body, in order


def lines(response: httpx.Response) -> Iterator[Lines]:
    """The body's lines (split at ``\\n``, ``\\r\\n`` or ``\\r``, as ``iter_lines`` does), in
    order, in batches: those each piece of text received completes (one hand-off to the
    waiting thread per read, not per line). None is longer than :data:`LINE_CAP`: a longer
    one raises :class:`LineTooLong` (after the lines before it) instead of taking the memory
    with it."""
    parts: list[str] = []  # the line being received, in pieces (no piece is scanned twice)
    size, held = 0, ""  # held: a "\\r" that may begin a "\\r\\n" split over two pieces
    for text in response.iter_text():
        text = held + text
        held = "\r" if text.endswith("\r") else ""
        pieces = text[: len(text) - len(held)].replace("\r\n", "\n").replace("\r", "\n").split("\n")
        parts.append(pieces[0])
        size += len(pieces[0])
        if len(pieces) > 1:
            yield ("".join(parts), *pieces[1:-1])
            parts, size = [pieces[-1]], len(pieces[-1])
        if size > LINE_CAP:
            raise LineTooLong(f"the server sent a line longer than {LINE_CAP // (1024 * 1024)} MiB; nothing "
                              "was read past it")
    line = "".join(parts)
    if line or held:
        yield (line,)


# -- what an exchange reports ---------------------------------------------------------------

_PieceT = TypeVar("_PieceT", bytes, Lines)


@dataclass(frozen=True, slots=True)
class Status:
    """The response's status and headers arrived (always the first event of a response).

    ``error_text``: with ``read_error_body``, the text of the first :data:`ERROR_BODY_CAP`
    bytes of a response that is not a 200 (what providers quote); nothing follows it.
    Otherwise None, and the body's :class:`Piece` events follow."""

    code: int
    headers: httpx.Headers
    response: httpx.Response
    error_text: str | None = None


@dataclass(frozen=True, slots=True)
class Piece(Generic[_PieceT]):
    """The next piece of the body: bytes as they came (:func:`chunks`), or the lines they
    completed (:func:`lines`)."""

    data: _PieceT


@dataclass(frozen=True, slots=True)
class Eof:
    """The body ended; nothing follows."""


@dataclass(frozen=True, slots=True)
class Failed:
    """No complete response arrived: ``error`` is why (httpx's error, or :class:`LineTooLong`)."""

    error: Exception


@dataclass(frozen=True, slots=True)
class Cancelled:
    """The cancel token was set: the waiter stops waiting at once."""


@dataclass(frozen=True, slots=True)
class TimedOut:
    """The ``timeout`` given to :meth:`Exchange.next` passed with no event."""


# What :meth:`Exchange.next` returns (without a timeout: never :class:`TimedOut`).
ExchangeEvent: TypeAlias = Status | Piece[_PieceT] | Eof | Failed | Cancelled


class Exchange(Generic[_PieceT]):
    """One request, read on a daemon thread into a queue of events:

    :class:`Status` first, then a :class:`Piece` of the body as ``pieces`` reads it
    (:func:`chunks` or :func:`lines`)... and :class:`Eof`; or :class:`Failed` when no complete
    response arrives. :meth:`next` returns :class:`Cancelled` once ``cancel`` is set, at
    once. ``read_error_body``: of a response that is not a 200 the first
    :data:`ERROR_BODY_CAP` bytes are read and their text is the status's ``error_text``
    (what providers quote), and nothing follows. With :func:`lines`, a line longer than
    :data:`LINE_CAP` ends the exchange with :class:`Failed` (a :class:`LineTooLong`): memory
    stays bounded whatever a server sends. ``headers``, ``json`` (a body sent as JSON) and
    ``content`` (a body sent as text) go to ``httpx.Client.stream`` as they are.
    """

    def __init__(self, method: str, url: str, *, cancel: CancelToken, timeout: httpx.Timeout,
                 pieces: Callable[[httpx.Response], Iterator[_PieceT]], read_error_body: bool = False,
                 headers: Mapping[str, str] | None = None, json: JSON = None, content: str | None = None) -> None:
        self.url = url
        self._events: queue.Queue[ExchangeEvent[_PieceT]] = queue.Queue()
        self._stop = threading.Event()
        self._response: httpx.Response | None = None
        self._unregister = cancel.on_cancel(self._on_cancel)
        self._cancel = cancel
        request = _Request(method.upper(), url, timeout, headers, json, content)
        threading.Thread(target=self._run, args=(request, pieces, read_error_body), name="rienda-http",
                         daemon=True).start()

    @overload
    def next(self) -> ExchangeEvent[_PieceT]: ...
    @overload
    def next(self, timeout: float | None) -> ExchangeEvent[_PieceT] | TimedOut: ...
    def next(self, timeout: float | None = None) -> ExchangeEvent[_PieceT] | TimedOut:
        """The next event; :class:`Cancelled` once the token is set; :class:`TimedOut` when
        ``timeout`` seconds pass first."""
        if self._cancel.cancelled:
            return Cancelled()
        try:
            return self._events.get(timeout=timeout)
        except queue.Empty:
            return TimedOut()

    def abandon(self) -> None:
        """Nobody waits any more: stop reading and close the response."""
        self._stop.set()
        self._unregister()
        self._close_response()

    def _on_cancel(self) -> None:
        self._close_response()
        self._events.put(Cancelled())

    def _close_response(self) -> None:
        self._stop.set()
        response = self._response
        if response is not None:
            try:
                response.close()
            except Exception:  # noqa: BLE001 - closing from another thread is best effort
                pass

    def _run(self, request: _Request, pieces: Callable[[httpx.Response], Iterator[_PieceT]],
             read_error_body: bool) -> None:
        put = self._events.put
        try:
            with client().stream(request.method, request.url, timeout=request.timeout, headers=request.headers,
                                 json=request.json, content=request.content) as response:
                self._response = response
                if read_error_body and response.status_code != 200:
                    text = _head(response, ERROR_BODY_CAP).decode("utf-8", errors="replace")
                    put(Status(response.status_code, response.headers, response, text))
                    return
                put(Status(response.status_code, response.headers, response))
                for piece in pieces(response):
                    if self._stop.is_set():
                        return
                    put(Piece(piece))
                put(Eof())
        except Exception as exc:  # noqa: BLE001 - any failure reaches the waiter as an event
            if not self._stop.is_set():
                put(Failed(exc))
        finally:
            self._unregister()


@dataclass(frozen=True)
class _Request:
    """What one exchange sends."""

    method: str
    url: str
    timeout: httpx.Timeout
    headers: Mapping[str, str] | None
    json: JSON
    content: str | None
