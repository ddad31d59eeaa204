"""A stdio server's stdout as whole lines, each bounded: a line past :data:`LINE_LIMIT` is
reduced as it streams.

The SDK's stdout reader (``mcp.client.stdio``) joins a line's pieces into one string
(``buffer + chunk`` at every piece), so a 50 MB reply was held whole, copied at each of its
pieces, and then refused (:mod:`.server_lines`: "larger than 16 MiB"): a call any other tool
would have answered with its first 256 KiB failed. :class:`BoundedTextStream` takes the place
of the SDK's ``TextReceiveStream`` there (:func:`.server_lines.install_line_reader`) and hands
the SDK whole lines only: one up to :data:`LINE_LIMIT` characters as it came (what was
readable before reads the same), a longer one reduced by :class:`.reducer.Reducer` while it
streams, so that the engine holds at most about :data:`LINE_LIMIT` characters of it. A line
the server never ends is dropped at the end of its output, as the SDK drops it.
"""

from __future__ import annotations

from ...common import bounded
from .reducer import KEPT_PER_MEMBER, Reducer

__all__ = ["LINE_LIMIT", "BoundedTextStream", "StdoutLines"]

LINE_LIMIT = bounded.MAX_BYTES  # characters: past them, a line is reduced as it streams


class StdoutLines:
    """A server's stdout, fed in pieces: whole lines out (see the module's docstring)."""

    def __init__(self, limit: int = LINE_LIMIT, keep: int = KEPT_PER_MEMBER) -> None:
        self._limit, self._keep = limit, keep
        self._parts: list[str] = []
        self._size = 0
        self._reducer: Reducer | None = None

    def feed(self, chunk: str) -> str:
        """The lines ``chunk`` ends (each with its newline); "" when it ends none."""
        lines: list[str] = []
        at = 0
        while (end := chunk.find("\n", at)) >= 0:
            self._add(chunk[at:end])
            lines.append(self._line() + "\n")
            at = end + 1
        self._add(chunk[at:])
        return "".join(lines)

    def _add(self, piece: str) -> None:
        if not piece:
            return
        if self._reducer is not None:
            self._reducer.feed(piece)
            return
        self._parts.append(piece)
        self._size += len(piece)
        if self._size > self._limit:  # from here on the line is reduced as it comes
            self._reducer = Reducer(self._keep)
            for part in self._parts:
                self._reducer.feed(part)
            self._parts, self._size = [], 0

    def _line(self) -> str:
        if self._reducer is not None:
            line, self._reducer = self._reducer.close(), None
            return line
        line, self._parts, self._size = "".join(self._parts), [], 0
        return line


class BoundedTextStream:
    """What the SDK's stdout reader iterates in place of ``TextReceiveStream``: ``stream``'s
    text, decoded as that decodes it, handed on as whole lines (:class:`StdoutLines`)."""

    def __init__(self, stream: object, encoding: str = "utf-8", errors: str = "strict") -> None:
        from anyio.abc import ByteReceiveStream
        from anyio.streams.text import TextReceiveStream

        assert isinstance(stream, ByteReceiveStream)  # the process's stdout, as the SDK hands it
        self._text = TextReceiveStream(stream, encoding=encoding, errors=errors)
        self._lines = StdoutLines()

    def __aiter__(self) -> BoundedTextStream:
        return self

    async def __anext__(self) -> str:
        while True:
            lines = self._lines.feed(await self._text.__anext__())  # StopAsyncIteration at the end
            if lines:
                return lines
