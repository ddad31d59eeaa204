"""One long line of JSON a server wrote, reduced as it streams to what a result can use.

:mod:`.long_lines` hands a line past its limit to a :class:`Reducer`, piece by piece; what
the reducer keeps is bounded whatever the line's size, and its work is mostly regular
expressions over the pieces (a 50 MB text item is read in well under a second).

Contracts:
- The JSON keeps its shape and stays valid: each string keeps its first characters within a
  budget of ``keep`` characters (:data:`KEPT_PER_MEMBER`) for each member of the reply's ``result`` or
  ``error`` (``content`` has its own, ``structuredContent`` its own), and one for the rest;
  an escape is never cut in half. Past a budget, strings keep nothing, the rest of an array
  is left out, and an object keeps its first members (a content item stays an item: its
  ``type``, ``mimeType``, ``uri`` and ``name`` are always kept, each within 256 characters,
  as are the reply's ``jsonrpc``, ``id`` and ``method``).
- A content item's ``data`` or ``blob`` (an image, a sound, a file, in base64) keeps nothing
  once it is past the line's limit: its size is noted instead.
- A tool call's reply (``result`` with ``content`` or ``structuredContent``) gets
  ``result._meta["rienda/cut"]``: ``{"characters": the line's length, "cut": the members of
  result whose text was cut, "sizes": {"content.0.data": characters, ...}}`` (what
  :mod:`.results` reads). Any other reply (a ``tools/list`` past the limit) becomes a
  JSON-RPC error for its id, "its reply could not be read: larger than 16 MiB"; a line that
  is not JSON, an error for its id when its id came before the fault, else its first
  characters (which the line reader says it skipped). A notification or a request is reduced.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ...common import bounded
from ...common.json_value import JSONObject
from ..invoke import OUTPUT_CAP
from .escapes import unfinished_escape, whole_escapes

__all__ = ["CUT_KEY", "KEPT_PER_MEMBER", "Reducer"]

KEPT_PER_MEMBER = 2 * OUTPUT_CAP  # characters kept of each member of a reply's result, and of the rest
CUT_KEY = "rienda/cut"  # where result._meta says what was cut
_SHORT = 256  # a key, an id, a type: kept within this many characters, whatever the budget
_TOKEN_CHARS = 64  # a number longer than this becomes 0
_HEAD_CHARS = 200  # what a line that is not JSON shows of itself
_MEMBERS_OVER = 64  # members an object keeps once its budget is spent
_REPLY = frozenset({"jsonrpc", "id", "method", "result", "error", "content", "structuredContent", "isError", "code",
                    "message", "_meta"})  # the members a reply keeps at its top two levels
_SHAPE = frozenset({"type", "mimeType", "uri", "name"})  # what makes a content item an item
_BASE64 = frozenset({"data", "blob"})
_WHITE = frozenset(" \t\r\n")
_WHITE_RUN = re.compile(r"[ \t\r\n]*")
_TOKEN = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null")
_TOKEN_CHAR = frozenset("-+.0123456789eEtruefalsn")
_TOKEN_RUN = re.compile(r"[-+.0-9eEtruefalsn]*")
_BODY = re.compile(r'[^"\\]*+(?:\\.[^"\\]*+)*+')  # a string's characters and whole two-character escapes
_STRING = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
_PLAIN = r'[^"\[\]{}]++'
# What a value left out holds, eaten without looking: all but brackets, whole strings, and
# whole containers holding no container (possessive: an unfinished one is left for the next piece).
_SKIPPABLE = re.compile(rf'(?:{_PLAIN}|{_STRING}|\{{(?:{_PLAIN}|{_STRING})*+\}}|\[(?:{_PLAIN}|{_STRING})*+\])*+')


@dataclass
class _Frame:
    kind: str  # "{" or "["
    key: str = ""  # the member being read (an object's)
    seen: int = 0  # members or elements read
    shown: int = 0  # members or elements written


@dataclass
class _Skip:
    """A value left out (``rest``: the rest of an array): how deep into it, and where."""

    depth: int = 0
    string: bool = False
    token: bool = False
    rest: bool = False


class Reducer:
    """One line's JSON, fed in pieces (:meth:`feed`), reduced to a bounded line (:meth:`close`);
    see the module's contracts. ``keep``: characters of each budget."""

    def __init__(self, keep: int = KEPT_PER_MEMBER) -> None:
        self.keep = keep
        self._out: list[str] = []
        self._spent: dict[str, int] = {}  # characters written, per budget
        self._frames: list[_Frame] = []
        self._state = "value"  # value, after, key, colon, string, token, skip, end, broken
        self._comma = False  # a comma read, written with what follows it (if that is written)
        self._carry = ""  # an escape begun at the end of a piece, read with the next
        self._key: list[str] = []  # the key being read
        self._in_key = False
        self._kept = self._length = self._limit = 0  # of the string being read
        self._dropped = False  # ...and whether some of it was left out
        self._token: list[str] = []
        self._token_length = 0
        self._skip = _Skip()
        self._id: str | None = None  # the reply's id, as JSON
        self._capture = False  # the value being read is the reply's id
        self._captured: list[str] = []
        self._line_length = 0
        self._head: list[str] = []
        self._cut: set[str] = set()  # the budgets whose text was cut
        self._sizes: dict[str, int] = {}  # base64 left out: where, and how many characters
        self._members: set[str] = set()  # the result's members (is it a call's result?)
        self._top: set[str] = set()  # the top-level members
        self._fault = ""

    def feed(self, piece: str) -> None:
        if self._line_length < _HEAD_CHARS:
            self._head.append(piece[:_HEAD_CHARS - self._line_length])
        self._line_length += len(piece)
        piece, self._carry = self._carry + piece, ""
        at = 0
        while at < len(piece) and self._state != "broken":
            at = getattr(self, f"_on_{self._state}")(piece, at)

    # -- values, keys, the structure ----------------------------------------------------------------
    def _on_value(self, piece: str, at: int) -> int:
        char = piece[at]
        if char in _WHITE:
            return _white(piece, at)
        frame = self._frames[-1] if self._frames else None
        if frame is not None and frame.kind == "[":
            if char == "]" and not frame.seen and not self._comma:
                return self._close(piece, at)
            frame.seen += 1
            if self._over():
                self._cut.add(self._budget())
                self._skip, self._state = _Skip(depth=1, rest=True), "skip"  # the rest of the array
                return at
            self._write_comma(frame)
        if char == '"':
            self._begin_string(key=False)
            return at + 1
        if char in "{[":
            self._frames.append(_Frame(char))
            self._write(char)
            self._state = "key" if char == "{" else "value"
            return at + 1
        if char in _TOKEN_CHAR:
            self._token, self._token_length, self._state = [], 0, "token"
            return at
        return self._broken(f"{char!r} where a value was expected")

    def _on_key(self, piece: str, at: int) -> int:
        char = piece[at]
        if char in _WHITE:
            return _white(piece, at)
        frame = self._frames[-1]
        if char == "}" and not frame.seen and not self._comma:
            return self._close(piece, at)
        if char != '"':
            return self._broken(f"{char!r} where a key was expected")
        frame.seen += 1
        self._begin_string(key=True)
        return at + 1

    def _on_colon(self, piece: str, at: int) -> int:
        char = piece[at]
        if char in _WHITE:
            return _white(piece, at)
        if char != ":":
            return self._broken(f"{char!r} where ':' was expected")
        frame, depth = self._frames[-1], len(self._frames)
        key = frame.key
        if depth == 1:
            self._top.add(key)
            self._capture = key == "id"
        if depth == 2 and self._frames[0].key == "result":
            self._members.add(key)
        needed = key in _SHAPE or (depth <= 2 and key in _REPLY)
        if self._over() and not needed and (depth <= 2 or frame.shown >= _MEMBERS_OVER):
            self._cut.add(self._budget())
            self._skip, self._state = _Skip(), "skip"
            return at + 1
        self._write_comma(frame)
        self._write(json.dumps(key) + ":")
        self._state = "value"
        return at + 1

    def _on_after(self, piece: str, at: int) -> int:
        char = piece[at]
        if char in _WHITE:
            return _white(piece, at)
        if not self._frames:
            return self._broken(f"{char!r} after the value")
        frame = self._frames[-1]
        if char == ",":
            self._comma = True
            self._state = "key" if frame.kind == "{" else "value"
            return at + 1
        if char == ("}" if frame.kind == "{" else "]"):
            return self._close(piece, at)
        return self._broken(f"{char!r} where ',' or the end of the {'object' if frame.kind == '{' else 'array'} "
                            "was expected")

    def _on_end(self, piece: str, at: int) -> int:
        return _white(piece, at) if piece[at] in _WHITE else self._broken(f"{piece[at]!r} after the value")

    def _close(self, piece: str, at: int) -> int:
        self._frames.pop()
        self._comma = False
        self._write(piece[at])
        return self._after_value(at + 1)

    def _after_value(self, at: int, written: bool = True) -> int:
        frame = self._frames[-1] if self._frames else None
        if frame is not None and written:
            frame.shown += 1
        self._state = "after" if frame is not None else "end"
        return at

    # -- strings ----------------------------------------------------------------------------------
    def _begin_string(self, key: bool) -> None:
        self._key, self._in_key, self._captured = [], key, []
        self._kept = self._length = 0
        self._dropped = False
        member = self._frames[-1].key if self._frames else ""
        if key or len(self._frames) <= 1 or member in _SHAPE:
            self._limit = _SHORT
        elif member in _BASE64 and len(self._frames) >= 4:
            self._limit = 0
        else:
            self._limit = max(self.keep - self._spent.get(self._budget(), 0), 0)
        if not key:
            self._write('"')
        self._state = "string"

    def _on_string(self, piece: str, at: int) -> int:
        end = _end(_BODY, piece, at)
        closed = end < len(piece) and piece[end] == '"'
        if not closed:  # the string goes on in the next piece (an escape begun here with it)
            end = len(piece) - unfinished_escape(piece, at, len(piece))
            self._carry = piece[end:]
        run = end - at
        take = 0 if self._dropped else whole_escapes(piece, at, min(run, max(self._limit - self._kept, 0)))
        self._dropped = self._dropped or take < run  # once cut, nothing more of it is kept
        if take:
            text = piece[at:at + take]
            self._kept += take
            if self._in_key:
                self._key.append(text)
            else:
                self._write(text)
                if self._capture:
                    self._captured.append(text)
        self._length += run
        return self._end_string(end + 1) if closed else len(piece)

    def _end_string(self, at: int) -> int:
        dropped = self._dropped
        if self._in_key:
            frame = self._frames[-1]
            try:
                frame.key = json.loads('"' + "".join(self._key) + '"')
            except ValueError:  # an escape JSON does not know: not a key of the protocol's
                frame.key = ""
            self._state = "colon"
            return at
        self._write('"')
        if dropped and self._limit == 0 and self._frames and self._frames[-1].key in _BASE64:
            self._sizes[self._path()] = self._length
        elif dropped:
            self._cut.add(self._budget())
        if self._capture:
            self._id, self._capture = '"' + "".join(self._captured) + '"', False
        return self._after_value(at)

    # -- numbers and literals -----------------------------------------------------------------------
    def _on_token(self, piece: str, at: int) -> int:
        end = _end(_TOKEN_RUN, piece, at)
        if self._token_length < _TOKEN_CHARS:
            self._token.append(piece[at:end][:_TOKEN_CHARS - self._token_length])
        self._token_length += end - at
        return end if end == len(piece) else self._token_done(end)

    def _token_done(self, at: int) -> int:
        text = "".join(self._token)
        if self._token_length > _TOKEN_CHARS:
            self._cut.add(self._budget())
            text = "0"
        elif not _TOKEN.fullmatch(text):
            return self._broken(f"{text!r} is not a JSON value")
        self._write(text)
        if self._capture:
            self._id, self._capture = text, False
        return self._after_value(at)

    # -- what is left out ---------------------------------------------------------------------------
    def _on_skip(self, piece: str, at: int) -> int:
        skip = self._skip
        if skip.string:
            end = _end(_BODY, piece, at)
            if end == len(piece) or piece[end] != '"':
                self._carry = piece[len(piece) - unfinished_escape(piece, at, len(piece)):]
                return len(piece)
            skip.string = False
            return self._skipped(end + 1) if skip.depth == 0 else end + 1
        if skip.token:
            end = _end(_TOKEN_RUN, piece, at)
            return self._skipped(end) if end < len(piece) else end
        if skip.depth == 0:
            char = piece[at]
            if char in _WHITE:
                return _white(piece, at)
            skip.string, skip.depth, skip.token = char == '"', 1 if char in "{[" else 0, char not in '"{['
            return at + 1 if not skip.token else at
        end = _end(_SKIPPABLE, piece, at)
        if end == len(piece):
            return end
        char = piece[end]
        if char == '"':
            skip.string = True
        elif char in "{[":
            skip.depth += 1
        elif skip.depth == 1 and skip.rest:  # the array's own end: it closes the array
            self._state = "after"
            return end
        else:
            skip.depth -= 1
            if skip.depth == 0:
                return self._skipped(end + 1)
        return end + 1

    def _skipped(self, at: int) -> int:
        self._capture = False
        return self._after_value(at, written=False)

    # -- budgets ------------------------------------------------------------------------------------
    def _write_comma(self, frame: _Frame) -> None:
        if self._comma and frame.shown:
            self._write(",")
        self._comma = False

    def _write(self, text: str) -> None:
        self._out.append(text)
        budget = self._budget()
        self._spent[budget] = self._spent.get(budget, 0) + len(text)

    def _budget(self) -> str:
        """The budget the current place spends: a member of the reply's result (or error), or the rest."""
        if len(self._frames) >= 2 and self._frames[0].key in ("result", "error") and self._frames[1].kind == "{":
            return self._frames[1].key
        return ""

    def _over(self) -> bool:
        return self._spent.get(self._budget(), 0) >= self.keep or sum(self._spent.values()) >= 4 * self.keep

    def _path(self) -> str:
        """Where the current value is, below the result: ``content.0.data``."""
        return ".".join(frame.key if frame.kind == "{" else str(frame.seen - 1) for frame in self._frames[1:])

    def _broken(self, why: str) -> int:
        self._fault = f"not valid JSON: {why} (at character {self._line_length:,} or before)"
        self._state = "broken"
        return 1 << 62

    # -- the line -----------------------------------------------------------------------------------
    def close(self) -> str:
        """The reduced line (see the module's contracts)."""
        if self._state == "token":  # the line's end ends the value
            self._token_done(0)
        if self._state != "end":
            fault = self._fault or f"not valid JSON: the line ended inside a value (a line of {self._line_length:,} " \
                                   "characters)"
            return "".join(self._head) + "…" if self._id is None else _error_line(self._id, fault)
        line = "".join(self._out)
        if "result" not in self._top or self._id is None:
            return line
        if not self._members & {"content", "structuredContent"}:
            return _error_line(self._id, f"larger than {bounded.MAX_BYTES // 1024 // 1024} MiB")
        reply: JSONObject = json.loads(line)
        result = reply["result"]
        meta = result.get("_meta") if isinstance(result.get("_meta"), dict) else {}
        result["_meta"] = {**meta, CUT_KEY: {"characters": self._line_length, "cut": sorted(self._cut),
                                             "sizes": self._sizes}}
        return json.dumps(reply)


def _white(piece: str, at: int) -> int:
    return _end(_WHITE_RUN, piece, at)


def _error_line(reply_id: str, why: str) -> str:
    """A JSON-RPC error for ``reply_id`` (JSON) saying the reply could not be read."""
    error = {"code": -32700, "message": f"its reply could not be read: {why}"}
    return '{"jsonrpc": "2.0", "id": ' + reply_id + ', "error": ' + json.dumps(error) + "}"


def _end(pattern: re.Pattern[str], piece: str, at: int) -> int:
    """Where ``pattern``'s match at ``at`` ends (each pattern it is given matches the empty
    string at least)."""
    found = pattern.match(piece, at)
    assert found is not None, pattern.pattern
    return found.end()
