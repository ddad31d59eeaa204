"""A session file's lines 2.., read tolerantly and fast: each becomes a message, a record
(:mod:`.records`) or a warning naming the file and the line of a :class:`LoadedSession`
(:func:`parse_body`, for :mod:`.store`), which also answers what the records say: the
approvals, the pins, the compaction view requests are made from.

The hot path hands each line to json's C scanner, as ``json.loads`` does in the end,
without its per-call work; every line it does not take whole goes through
:func:`.bounded.loads` and its bounds.
"""

from __future__ import annotations

import contextlib
import gc
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from ..common import bounded
from ..common.json_value import JSON, JSONObject
from ..common.text import repair
from .compaction.view import Compacted
from .messages import Message
from .records import ApprovalRecord, CompactionRecord, PinRecord, Record, SessionHeader, parse_record

__all__ = ["ESCAPED_SURROGATE", "LoadedSession", "parse_body"]

_Kind = TypeVar("_Kind")

ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # a lone surrogate escaped in JSON
# The C scanner json.loads ends in, without its wrappers.
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in JSONDecoder.__init__; typeshed leaves it out


@dataclass
class LoadedSession:
    """A session as read back: the header, the messages in order, every other line
    (``records``) in order, and warnings about lines that were skipped, from the file at
    ``path``. ``message_lines[i]`` is the line number of ``messages[i]``, ``record_lines[i]``
    that of ``records[i]``; :attr:`entries` merges both kinds in file order."""

    header: SessionHeader
    messages: list[Message] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    message_lines: list[int] = field(default_factory=list)
    record_lines: list[int] = field(default_factory=list)
    path: Path | None = None
    size: int = 0  # bytes read: a writer opened later sees whether the file grew since

    @property
    def entries(self) -> list[tuple[int, Message | Record]]:
        """Messages and records in file order, each with its line number (built on each
        call: resuming, which needs only the messages, does not pay for it)."""
        both: list[tuple[int, Message | Record]] = [*zip(self.message_lines, self.messages),
                                                    *zip(self.record_lines, self.records)]
        return sorted(both, key=_line_number)

    def records_of(self, kind: type[_Kind]) -> list[_Kind]:
        """The records of one kind (a :mod:`.records` type), in file order."""
        return [record for record in self.records if isinstance(record, kind)]

    def approvals(self) -> set[tuple[str, str]]:
        """The confirms a person allowed for the rest of the session (title, body)."""
        return {(record.title, record.body) for record in self.records_of(ApprovalRecord)}

    def pins(self) -> set[int]:
        """The message numbers the ``pin`` records name (prompts only; any other is passed over)."""
        return {record.message for record in self.records_of(PinRecord)
                if record.message < len(self.messages) and self.messages[record.message].role == "user"}

    def compaction_view(self, warnings: list[str]) -> Compacted | None:
        """The view of the last usable ``compacted`` record (None: never compacted); a record
        naming messages the session does not hold is passed over with a warning in
        ``warnings`` naming its file and line, and the one before it is used."""
        for number, record in reversed(list(zip(self.record_lines, self.records))):
            if not isinstance(record, CompactionRecord) or record.view is None:
                continue
            if record.view.upto > len(self.messages):
                warnings.append(f"{self.path}:{number}: a compaction record was skipped (it covers "
                                f"{record.view.upto} messages and the session holds {len(self.messages)}); the "
                                "view before it is used")
                continue
            return record.view
        return None


def _line_number(entry: tuple[int, Message | Record]) -> int:
    return entry[0]


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    """No cyclic garbage collection in the block (the process's collector, restored after
    if it was on). Reading a session makes objects that all stay alive, so the collections
    their number triggers find nothing (~70 of them for 10,000 messages: ~15% of a resume's
    time); anything another thread leaves meanwhile is collected after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def parse_body(path: Path, data: bytes, lines: list[bytes], torn: bool, session: LoadedSession) -> None:
    """:func:`_parse_body` with the collector paused (see :func:`_collection_paused`)."""
    with _collection_paused():
        _parse_body(path, data, lines, torn, session)


def _parse_body(path: Path, data: bytes, lines: list[bytes], torn: bool, session: LoadedSession) -> None:
    """Sort lines 2.. of ``data`` (split into ``lines``) into messages and records;
    skipped lines become warnings.

    The hot path: each line is decoded and handed to json's scanner, as ``json.loads``
    does in the end, without its per-call work (encoding detection, two whitespace
    matches). A line the scanner does not take whole (not UTF-8, whitespace around it, not
    JSON), or that might be too long or nested too deep (more brackets than
    :data:`bounded.MAX_DEPTH`) goes through :func:`bounded.loads`, which reports it as
    before. Brackets and escaped surrogates are looked for once in the whole file, not
    line by line.
    """
    brackets = data.translate(None, _NOT_BRACKETS).split(b"\n")  # aligned with lines: one piece a line
    escaping = _lines_escaping_surrogates(data)
    last = len(lines)
    for number in range(2, last + 1):
        raw = lines[number - 1]
        obj = _scanned(raw) if len(brackets[number - 1]) <= bounded.MAX_DEPTH else _NOT_TAKEN
        if obj is _NOT_TAKEN:
            _read_slowly(path, number, raw, torn and number == last, session)
            continue
        if number in escaping:  # written by an older Rienda, or by hand
            obj = repair(obj)
        _sort(path, number, obj, session)


_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[{\n")))  # what translate deletes to leave "[", "{", newlines


def _lines_escaping_surrogates(data: bytes) -> set[int]:
    """The numbers of the lines of ``data`` holding a ``\\uD800``-``\\uDFFF`` escape."""
    found: set[int] = set()
    number, at = 1, 0
    for match in ESCAPED_SURROGATE.finditer(data):
        number += data.count(b"\n", at, match.start())
        at = match.start()
        found.add(number)
    return found


_NOT_TAKEN = object()


def _scanned(raw: bytes) -> JSON:
    """The value of ``raw`` when json's scanner takes it whole and it is at most
    :data:`bounded.MAX_BYTES` long, else :data:`_NOT_TAKEN`."""
    if len(raw) > bounded.MAX_BYTES:
        return _NOT_TAKEN
    try:
        text = raw.decode("utf-8")
        obj, end = _SCAN(text, 0)
    except (UnicodeDecodeError, StopIteration, ValueError, RecursionError):
        return _NOT_TAKEN
    return obj if end == len(text) else _NOT_TAKEN


def _read_slowly(path: Path, number: int, raw: bytes, torn: bool, session: LoadedSession) -> None:
    """Line ``number``, which the fast path did not take, through :func:`bounded.loads`:
    blank lines are skipped, a bad one becomes a warning (``torn``: the file's torn last
    line)."""
    if not raw.strip():
        return
    try:
        obj = bounded.loads(raw)
    except bounded.Unreadable as exc:
        if torn:
            session.warnings.append(
                f"{path}:{number}: the last line is incomplete "
                "(the session was interrupted while writing); ignored")
        else:
            problem = "not valid JSON" if str(exc).startswith("not valid JSON") else str(exc)
            session.warnings.append(f"{path}:{number}: {problem}; skipped")
        return
    if ESCAPED_SURROGATE.search(raw):  # written by an older Rienda, or by hand
        obj = repair(obj)
    _sort(path, number, obj, session)


def _sort(path: Path, number: int, obj: JSON, session: LoadedSession) -> None:
    """Line ``number``'s value: a message, a record, or a warning."""
    kind = obj.get("type") if isinstance(obj, dict) else None
    if kind == "message":
        try:
            session.messages.append(Message.from_dict(obj))
            session.message_lines.append(number)
        except ValueError as exc:
            session.warnings.append(f"{path}:{number}: not a valid message ({exc}); skipped")
    elif not isinstance(kind, str):
        session.warnings.append(f"{path}:{number}: not a JSON object with a string 'type'; skipped")
    elif kind == "session":
        session.warnings.append(f"{path}:{number}: a second session header; skipped")
    else:
        _sort_record(path, number, obj, session)


def _sort_record(path: Path, number: int, obj: JSONObject, session: LoadedSession) -> None:
    try:
        record = parse_record(obj)
    except ValueError as exc:
        session.warnings.append(f"{path}:{number}: a {obj['type']!r} record this version cannot read; left out "
                                f"({exc})")
        return
    session.records.append(record)
    session.record_lines.append(number)
