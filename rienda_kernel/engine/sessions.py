"""Sessions: an append-only JSON Lines file per conversation under ``RIENDA_HOME/sessions``.

``<id>.jsonl`` starts with a header line ``{"type": "session", "version": 1, "id", "agent",
"model", "created"}``; every later line is one JSON object with a ``"type"``: ``"message"``
lines hold a :class:`Message` (``{"type": "message", "time", **message.to_dict()}``), any
other type is a record (an event, a note) kept as written.

Each line is written with one ``write()`` of the complete line and flushed, so a crash
leaves at most one torn last line; loading reports it as a warning and keeps everything
before it, and resuming terminates it before appending. Every line passes through a
:class:`Scrubber` first, so secrets from the environment never reach the file.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, BinaryIO

from .config import REDACTED
from .errors import ConfigError
from .messages import Message

__all__ = [
    "SESSION_VERSION",
    "LoadedSession",
    "Scrubber",
    "SessionError",
    "SessionInfo",
    "SessionStore",
    "SessionWriter",
    "new_session_id",
    "read_session",
]

SESSION_VERSION = 1
TITLE_LENGTH = 60
_ID_RULE = re.compile(r"[A-Za-z0-9_-]{1,128}")
_MESSAGE_PREFIX = b'{"type": "message"'
_ONE_MICROSECOND = timedelta(microseconds=1)

_id_lock = threading.Lock()
_last_clock_time: datetime | None = None


class SessionError(ConfigError):
    """A session that does not exist, already exists, or whose file cannot be used.

    The message names the session id and directory, or the file and line at fault.
    """


# ---------------------------------------------------------------- ids and times


def new_session_id(now: datetime | None = None) -> str:
    """A new id ``YYYYMMDD-HHMMSS-ffffff-xxxx`` (UTC time, 4 random hex digits).

    Ids sort as plain strings by creation time. With ``now=None`` the clock is read and
    ids are strictly increasing within the process: a time not after the last one is
    bumped to the last one plus 1 µs. An explicit ``now`` (naive means UTC) is encoded
    as given and does not take part in that ordering.
    """
    stamp = _next_clock_time() if now is None else _as_utc(now)
    return stamp.strftime("%Y%m%d-%H%M%S-%f-") + secrets.token_hex(2)


def _next_clock_time() -> datetime:
    """The current UTC time, strictly after every time this function returned before."""
    global _last_clock_time
    with _id_lock:
        stamp = datetime.now(timezone.utc)
        if _last_clock_time is not None and stamp <= _last_clock_time:
            stamp = _last_clock_time + _ONE_MICROSECOND
        _last_clock_time = stamp
        return stamp


def _as_utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def _iso_now() -> str:
    """The current time as ISO-8601 UTC with milliseconds, e.g. ``2024-05-01T12:00:00.123Z``."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# ---------------------------------------------------------------- secrets


_SECRET_NAME_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "AUTH", "CREDENTIAL")
_SECRET_FIELDS = frozenset({"authorization", "proxyauthorization", "apikey", "xapikey"})
_MIN_SECRET_LENGTH = 8


class Scrubber:
    """Removes secrets from anything about to be written to a session file.

    The secrets are the values of environment variables whose name contains KEY, TOKEN,
    SECRET, PASSWORD, PASSWD, AUTH or CREDENTIAL (any case) and that are at least 8
    characters long. With ``environ`` given they are read from it once; by default they
    are read from ``os.environ`` at every :meth:`scrub`, so a key set later in the process
    (a notebook cell setting ``os.environ["OPENAI_API_KEY"]``) is covered from then on.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._fixed = None if environ is None else _secrets_in(environ)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The secrets now, longest first (a secret that contains another is replaced whole)."""
        return self._fixed if self._fixed is not None else _secrets_in(os.environ)

    def scrub(self, obj: Any) -> Any:
        """A deep copy of ``obj`` (JSON-like: dicts, lists, tuples, scalars) in which each
        secret inside any string (keys included) is replaced by ``[redacted]``, and the
        string value of any key named ``authorization``, ``proxy-authorization``,
        ``api_key`` or ``x-api-key`` (any case, ``-`` or ``_``) is ``[redacted]``.
        """
        return _scrub(obj, self.secrets)


def _secrets_in(environ: Mapping[str, str]) -> tuple[str, ...]:
    found = {
        value
        for name, value in environ.items()
        if isinstance(value, str)
        and len(value) >= _MIN_SECRET_LENGTH
        and any(word in name.upper() for word in _SECRET_NAME_WORDS)
    }
    return tuple(sorted(found, key=len, reverse=True))


def _scrub(obj: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(obj, str):
        return _scrub_text(obj, secrets)
    if isinstance(obj, dict):
        return {(_scrub_text(key, secrets) if isinstance(key, str) else key):
                (REDACTED if isinstance(value, str) and isinstance(key, str) and _is_secret_field(key)
                 else _scrub(value, secrets))
                for key, value in obj.items()}
    if isinstance(obj, list):
        return [_scrub(item, secrets) for item in obj]
    if isinstance(obj, tuple):
        return tuple(_scrub(item, secrets) for item in obj)
    return obj


def _scrub_text(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def _is_secret_field(key: str) -> bool:
    return key.lower().replace("-", "").replace("_", "") in _SECRET_FIELDS


# ---------------------------------------------------------------- writing


def _encode_line(obj: dict[str, Any]) -> bytes:
    """``obj`` as one UTF-8 JSON line ending in ``\\n``.

    Non-ASCII text is kept readable; a string holding a lone surrogate (which UTF-8
    cannot encode) makes the whole line fall back to ``\\u`` escapes. Raises
    ``TypeError`` for values JSON cannot represent.
    """
    try:
        return (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(obj) + "\n").encode("ascii")


class SessionWriter:
    """Appends to one session file; made by :meth:`SessionStore.create` or ``.resume``.

    Every append is one ``write()`` of a complete line followed by ``flush()`` (not
    fsync), under a lock, so appends from several threads never interleave. Usable as a
    context manager; appending after :meth:`close` raises ``ValueError``.
    """

    def __init__(self, session_id: str, path: Path, file: BinaryIO, scrubber: Scrubber) -> None:
        self.id = session_id
        self.path = path
        self._file = file
        self._scrubber = scrubber
        self._lock = threading.Lock()
        self._closed = False

    def append_message(self, message: Message) -> None:
        """Write ``{"type": "message", "time": <ISO UTC>, **message.to_dict()}``."""
        self._write({"type": "message", "time": _iso_now(), **message.to_dict()})

    def append_record(self, record: dict[str, Any]) -> None:
        """Write any other JSON object, e.g. an event's ``to_dict()``, as given (scrubbed).

        ``ValueError`` if it is not a dict with a string ``"type"``, or its type is
        ``"session"`` or ``"message"`` (use :meth:`append_message`); ``TypeError`` if a
        value is not JSON. Nothing is written in either case.
        """
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            raise ValueError(f"a session record must be a dict with a string 'type', got {record!r:.200}")
        if record["type"] in ("session", "message"):
            raise ValueError(
                f"a record cannot have type {record['type']!r}; use append_message for messages")
        self._write({"type": record["type"], **record})

    def _write(self, obj: dict[str, Any]) -> None:
        line = _encode_line(self._scrubber.scrub(obj))
        with self._lock:
            if self._closed:
                raise ValueError(f"session {self.id} is closed ({self.path})")
            self._file.write(line)
            self._file.flush()

    def _terminate_torn_line(self) -> None:
        """End a last line left without its newline, so new lines start on their own."""
        with open(self.path, "rb") as reader:
            if reader.seek(0, os.SEEK_END) == 0:
                return
            reader.seek(-1, os.SEEK_END)
            torn = reader.read(1) != b"\n"
        if torn:
            with self._lock:
                self._file.write(b"\n")
                self._file.flush()

    def close(self) -> None:
        """Close the file; closing twice is harmless."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._file.close()

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# ---------------------------------------------------------------- reading


@dataclass
class LoadedSession:
    """A session as read back: the header, the messages in order, every other line
    (``records``) in order, and warnings about lines that were skipped. ``entries`` holds
    both kinds in file order with their line numbers, in the file at ``path``."""

    header: dict[str, Any]
    messages: list[Message] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    entries: list[tuple[int, Message | dict[str, Any]]] = field(default_factory=list)
    path: Path | None = None


@dataclass(frozen=True)
class SessionInfo:
    """One line of a session listing. ``messages`` counts complete message lines;
    ``title`` is the first line of the first user message, cut to 60 characters."""

    id: str
    agent: str
    model: str
    created: str
    messages: int
    title: str


def _check_header(path: Path, line: bytes) -> dict[str, Any]:
    """The header parsed from the first line, or :class:`SessionError` naming the file."""
    try:
        header = json.loads(line)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("type") != "session":
        raise SessionError(
            f"{path}:1: not a Rienda session: the first line must be the session header "
            '{"type": "session", "version": 1, ...}')
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise SessionError(f"{path}:1: the session header has no valid version (got {version!r})")
    if version > SESSION_VERSION:
        raise SessionError(
            f"{path}:1: session format version {version} is newer than this Rienda supports "
            f"(up to {SESSION_VERSION}); upgrade Rienda to open it")
    return header


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SessionError(f"{path}: cannot be read: {exc.strerror or exc}") from exc


def _parse_body(path: Path, lines: list[bytes], torn: bool, session: LoadedSession) -> None:
    """Sort lines 2.. into messages and records; skipped lines become warnings."""
    last = len(lines)
    for number in range(2, last + 1):
        raw = lines[number - 1]
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            if torn and number == last:
                session.warnings.append(
                    f"{path}:{number}: the last line is incomplete "
                    "(the session was interrupted while writing); ignored")
            else:
                session.warnings.append(f"{path}:{number}: not valid JSON; skipped")
            continue
        kind = obj.get("type") if isinstance(obj, dict) else None
        if kind == "message":
            try:
                session.messages.append(Message.from_dict(obj))
                session.entries.append((number, session.messages[-1]))
            except (KeyError, TypeError, ValueError) as exc:
                session.warnings.append(f"{path}:{number}: not a valid message ({exc!r}); skipped")
        elif not isinstance(kind, str):
            session.warnings.append(f"{path}:{number}: not a JSON object with a string 'type'; skipped")
        elif kind == "session":
            session.warnings.append(f"{path}:{number}: a second session header; skipped")
        else:
            session.records.append(obj)
            session.entries.append((number, obj))


def _split_lines(data: bytes) -> tuple[list[bytes], bool]:
    """The file's lines without their newlines, and whether the last one is torn."""
    torn = bool(data) and not data.endswith(b"\n")
    lines = data.split(b"\n")
    if not torn:
        lines.pop()  # the empty piece after the final newline
    return lines, torn


def _first_line(data: bytes) -> bytes:
    end = data.find(b"\n")
    return data if end < 0 else data[:end]


def _title(text: str) -> str:
    stripped = text.strip()
    return stripped.split("\n", 1)[0].strip()[:TITLE_LENGTH]


def _summary(path: Path) -> SessionInfo | None:
    """A listing entry for one file, without building Message objects; None if unusable.

    Messages are counted as complete lines starting ``{"type": "message"`` (the writer's
    form); only message lines up to the first user message are parsed, for the title.
    """
    try:
        data = path.read_bytes()
        header = _check_header(path, _first_line(data))
    except (OSError, SessionError):
        return None
    complete = data[: data.rfind(b"\n") + 1]
    count = complete.count(b"\n" + _MESSAGE_PREFIX)
    title = ""
    start = complete.find(b"\n" + _MESSAGE_PREFIX)
    while start >= 0:
        end = complete.find(b"\n", start + 1)
        try:
            line = json.loads(complete[start + 1 : end])
        except ValueError:
            line = None
        if isinstance(line, dict) and line.get("role") == "user":
            title = _title(str(line.get("text") or ""))
            break
        start = complete.find(b"\n" + _MESSAGE_PREFIX, end)
    return SessionInfo(
        id=path.stem,
        agent=str(header.get("agent", "")),
        model=str(header.get("model", "")),
        created=str(header.get("created", "")),
        messages=count,
        title=title,
    )


def read_session(path: Path) -> LoadedSession:
    """Read the session file ``path`` (anywhere; its id is the file name's stem), with
    :meth:`SessionStore.load`'s contract: damaged lines become warnings; a missing file
    or a bad header raises :class:`SessionError` naming the file."""
    path = Path(path)
    session_id = path.stem
    lines, torn = _split_lines(_read_bytes(path))
    header = _check_header(path, lines[0] if lines else b"")
    session = LoadedSession(header, path=path)
    if header.get("id") != session_id:
        session.warnings.append(
            f"{path}:1: the header says id {header.get('id')!r}; using the file name {session_id!r}")
    _parse_body(path, lines, torn, session)
    return session


# ---------------------------------------------------------------- the store


class SessionStore:
    """The sessions under one Rienda home: ``home/sessions/<id>.jsonl``.

    The directory is created on the first :meth:`create`. ``scrubber`` cleans every line
    written; by default a :class:`Scrubber` of ``os.environ`` as it is at each write.
    """

    def __init__(self, home: Path, *, scrubber: Scrubber | None = None) -> None:
        self.home = Path(home)
        self.directory = self.home / "sessions"
        self.scrubber = scrubber if scrubber is not None else Scrubber()

    def create(self, agent: str, model: str, *, session_id: str | None = None) -> SessionWriter:
        """Start a new session file and write its header.

        ``session_id`` defaults to :func:`new_session_id`; :class:`SessionError` if it is
        not 1-128 letters, digits, ``_`` or ``-``, or the session already exists.
        """
        session_id = new_session_id() if session_id is None else self._checked_id(session_id)
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self._path(session_id)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        except FileExistsError:
            raise SessionError(f"session {session_id!r} already exists: {path}") from None
        writer = SessionWriter(session_id, path, os.fdopen(fd, "ab"), self.scrubber)
        writer._write({
            "type": "session",
            "version": SESSION_VERSION,
            "id": session_id,
            "agent": agent,
            "model": model,
            "created": _iso_now(),
        })
        return writer

    def resume(self, session_id: str) -> SessionWriter:
        """A writer appending to an existing session, after checking its header.

        A torn last line (no trailing newline) is terminated first, so it stays one bad
        line instead of swallowing the next one. :class:`SessionError` if the session
        does not exist or its header is missing, wrong or from a newer version.
        """
        path = self._existing(session_id)
        with open(path, "rb") as reader:
            _check_header(path, reader.readline().rstrip(b"\n"))
        writer = SessionWriter(session_id, path, open(path, "ab"), self.scrubber)
        writer._terminate_torn_line()
        return writer

    def load(self, session_id: str) -> LoadedSession:
        """Read a whole session back.

        Damaged lines never raise: a torn last line or a garbled, non-object or invalid
        message line becomes a warning naming its line and is skipped; the rest is kept.
        :class:`SessionError` if the session does not exist or its header is missing,
        wrong or from a newer version.
        """
        return read_session(self._existing(session_id))

    def list(self) -> list[SessionInfo]:
        """Every readable session, oldest first (sorted by id). Files that cannot be read
        or have a bad header are left out silently (:meth:`load` reports them)."""
        if not self.directory.is_dir():
            return []
        found = (_summary(path) for path in self.directory.glob("*.jsonl") if _ID_RULE.fullmatch(path.stem))
        return sorted((info for info in found if info is not None), key=lambda info: info.id)

    def _ids(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        return sorted(path.stem for path in self.directory.glob("*.jsonl"))

    def _path(self, session_id: str) -> Path:
        return self.directory / f"{session_id}.jsonl"

    def _checked_id(self, session_id: str) -> str:
        if not isinstance(session_id, str) or not _ID_RULE.fullmatch(session_id):
            raise SessionError(
                f"{session_id!r} is not a valid session id (1 to 128 letters, digits, '_' or '-')")
        return session_id

    def _existing(self, session_id: str) -> Path:
        """The file of an existing session, or :class:`SessionError` naming the id, the
        directory and the closest existing ids."""
        path = self._path(self._checked_id(session_id))
        if path.is_file():
            return path
        ids = self._ids()
        if not ids:
            hint = "there are no sessions yet"
        else:
            close = difflib.get_close_matches(session_id, ids, n=3, cutoff=0.6)
            hint = ("closest: " + ", ".join(close)) if close else f"{len(ids)} other sessions, none with a similar id"
        raise SessionError(f"no session {session_id!r} in {self.directory} ({hint})")
