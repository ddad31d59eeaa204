"""One streamed POST to a model's server, as a provider reads it.

:class:`ModelExchange` is an :class:`..http.Exchange` reading lines, whose events
(:data:`ModelEvent`) say what a provider needs: the status (with the start of an error
body), the lines, the end, or a :class:`StreamFailure` saying whether trying again may
help. :class:`LineReader` and :class:`EventReader` turn the body into NDJSON lines or
server-sent events, remembering the last lines for error messages ("the last the server
sent: ..."); :func:`decode_json` and :func:`decode_model_arguments` read what the lines hold.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeAlias, assert_never

from ..cancel import CancelToken
from ..common import bounded
from ..common.json_value import JSON, JSONObject
from ..common.text import repair
from ..errors import Interrupted, ProviderError
from ..http import Cancelled, Eof, Exchange, Failed, LineTooLong, Lines, Piece, Status, httpx
from ..http import lines as body_lines
from ..secrets import scrub_text, scrub_url
from .replies import excerpt

__all__ = [
    "EventReader",
    "LineReader",
    "ModelEvent",
    "ModelExchange",
    "StreamFailure",
    "decode_json",
    "decode_model_arguments",
    "redact",
]


@dataclass(frozen=True)
class StreamFailure:
    """A streamed POST that failed: ``what`` says how, for a person; ``connecting``: before
    any response began (the server could not be reached, or the connection broke first),
    so trying again may help."""

    what: str
    connecting: bool = False


# What :meth:`ModelExchange.next` returns: the status first (a 200's ``error_text`` is None,
# another status's is its body's start), then the body's lines and its end; or a failure.
ModelEvent: TypeAlias = Status | Piece[Lines] | Eof | StreamFailure


class ModelExchange:
    """One streamed POST (an :class:`..http.Exchange` reading lines) and its events as a
    provider reads them (:data:`ModelEvent`)."""

    def __init__(self, url: str, headers: dict[str, str], body: JSONObject, timeout: httpx.Timeout,
                 cancel: CancelToken) -> None:
        self.url = url
        self.shown_url = scrub_url(url)  # the URL as messages name it
        self._read_timeout = timeout.read
        self._started = False
        self._exchange = Exchange("POST", url, cancel=cancel, timeout=timeout, pieces=body_lines,
                                       read_error_body=True, json=body, headers=headers)

    def next(self) -> ModelEvent:
        """The next event; Interrupted as soon as the token is cancelled."""
        event = self._exchange.next()
        # isinstance, not match: every line of every answer passes here (a class pattern costs twice as much)
        if isinstance(event, (Piece, Eof)):
            return event
        if isinstance(event, Status):
            if event.code == 200:
                self._started = True
            return event
        if isinstance(event, Failed):
            return self._failure(event.error)
        if isinstance(event, Cancelled):
            self.abandon()
            raise Interrupted("stopped")
        assert_never(event)

    def abandon(self) -> None:
        self._exchange.abandon()

    def _failure(self, exc: Exception) -> StreamFailure:
        if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
            return StreamFailure(str(exc), connecting=True)
        if isinstance(exc, httpx.RemoteProtocolError):
            return StreamFailure(f"the connection broke: {exc}", connecting=not self._started)
        if isinstance(exc, httpx.TimeoutException):
            return StreamFailure(f"no data from the server within the {self._read_timeout:g} s read timeout")
        if isinstance(exc, LineTooLong):
            return StreamFailure(str(exc))
        return StreamFailure(f"{type(exc).__name__}: {exc}")


# -- reading the body ------------------------------------------------------------------------


class LineReader:
    """The body's lines as they arrive, remembering the last few for error messages."""

    def __init__(self, exchange: ModelExchange, key: str) -> None:
        self._exchange = exchange
        self._key = key
        self._seen: deque[str] = deque(maxlen=8)

    def lines(self) -> Iterator[str]:
        """Each line (empty ones included) until the body ends; ProviderError if it breaks
        (:meth:`.streaming.HttpProvider.read` adds the URL)."""
        while True:
            event = self._exchange.next()
            if isinstance(event, Piece):  # isinstance, not match: as in ModelExchange.next
                for line in event.data:
                    if line:
                        self._seen.append(line)
                    yield line
            elif isinstance(event, Eof):
                return
            elif isinstance(event, StreamFailure):
                raise ProviderError(f"the stream failed: {redact(event.what, self._key)}")
            elif isinstance(event, Status):  # only ever the first event, which HttpProvider.open read
                raise ProviderError(f"the stream failed: a second status (HTTP {event.code})")
            else:
                assert_never(event)

    def tail(self) -> str:
        """An excerpt of the last lines the server sent ("nothing" if none)."""
        if not self._seen:
            return "nothing"
        return excerpt(redact("\n".join(self._seen), self._key), tail=True)


class EventReader(LineReader):
    """Server-sent events: ``(event name, data)`` pairs (the name is "" when not given)."""

    def events(self) -> Iterator[tuple[str, str]]:
        name = ""
        data: list[str] = []
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


def decode_json(payload: str, key: str = "") -> JSONObject:
    """One JSON object the server sent, its strings made valid Unicode (lone surrogates
    from ``\\ud83d`` escapes replaced); ProviderError quoting it when it is not one (or
    is nested deeper or is larger than :mod:`..common.bounded` allows)."""
    try:
        value = repair(bounded.loads(payload))
    except bounded.Unreadable as exc:
        problem = "that is not JSON" if str(exc).startswith("not valid JSON") else str(exc)
        # from None: the cause quotes the payload before it is redacted
        raise ProviderError(f"the server sent data {problem}: {excerpt(redact(payload, key))}") from None
    if not isinstance(value, dict):
        raise ProviderError(f"the server sent an unexpected event: {excerpt(redact(payload, key))}")
    return value


def decode_model_arguments(arguments: str) -> JSON:
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
