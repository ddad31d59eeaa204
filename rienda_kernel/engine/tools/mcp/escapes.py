"""JSON string escapes, never cut in half: where a piece of a string may end (``\\n`` is two
characters, ``\\u00e9`` six), for :mod:`.reducer`, which reads a string in pieces."""

from __future__ import annotations

__all__ = ["escapes_here", "unfinished_escape", "whole_escapes"]


def unfinished_escape(piece: str, start: int, end: int) -> int:
    """How many characters at the end of ``piece[start:end]`` are an escape the next piece
    finishes (a backslash alone, or ``\\u`` and fewer than four digits); 0 for none."""
    for size in range(1, min(6, end - start + 1)):
        at = end - size
        if piece[at] == "\\" and escapes_here(piece, start, at):
            unfinished = size == 1 or (piece[at + 1] == "u" and size < 6)
            return size if unfinished else 0
    return 0


def escapes_here(piece: str, start: int, at: int) -> bool:
    """Whether the backslash at ``at`` begins an escape (an even number of backslashes before it)."""
    before = at
    while before > start and piece[before - 1] == "\\":
        before -= 1
    return (at - before) % 2 == 0


def whole_escapes(piece: str, start: int, take: int) -> int:
    """``take``, or less, so that ``piece[start:start + take]`` (whole escapes only) does
    not end inside one."""
    end = start + take
    for size in range(1, min(6, take + 1)):
        at = end - size
        if piece[at] == "\\" and escapes_here(piece, start, at):
            length = 6 if piece[at + 1:at + 2] == "u" else 2
            return take - size if size < length else take
    return take
