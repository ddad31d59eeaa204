"""Sessions: an append-only JSON Lines file per conversation under ``RIENDA_HOME/sessions``.

``<id>.jsonl`` starts with a header line ``{"type": "session", "version": 1, "id", "agent",
"model", "created"}`` (a sub-agent's also ``parent_session_id``, ``parent_call_id``,
``depth``; a gate's ``gate``): :class:`.records.SessionHeader`. Every later line is one JSON
object with a ``"type"``: ``"message"`` lines hold a :class:`.messages.Message` (``{"type":
"message", "time", **message.to_dict()}``); any other type is a record
(:mod:`.records`: a run's end, a pin, a compaction, the hook ledger...; a type this version
does not know is kept as written).

Writing is :mod:`.writer`'s: one writer per session (an OS lock), whole lines,
scrubbed of secrets, and a failed write (a full disk) truncated back so the file always
loads. A crash leaves at most one torn last line; loading reports it as a warning and
keeps everything before it, and resuming terminates it before appending.

Reading tolerates any line: a torn line, a line that is not JSON, or a message line with a
missing or ill-typed field (``usage`` as a string, ``tool_calls`` not a list) becomes a
warning naming ``file:line`` and is skipped; everything else loads. A listing
(:meth:`SessionStore.scan`) names each ``*.jsonl`` file it leaves out and why
(:class:`UnusableSession`): one it cannot read, a folder, a name that is no session id, a
first line that is no session header.
"""

from __future__ import annotations

import builtins
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import SessionBusy, SessionError
from ..common import bounded
from ..common.hints import closest
from ..common.text import repair
from ..common.json_value import JSONObject
from ..secrets import Scrubber
from .reading import LoadedSession, parse_body
from .ids import new_session_id
from .records import SessionHeader
from .writer import SessionWriter, iso_now

__all__ = [
    "SESSION_VERSION",
    "SessionBusy",
    "SessionError",
    "SessionInfo",
    "SessionScan",
    "SessionStore",
    "SessionWriter",
    "UnusableSession",
    "new_session_id",
    "read_session",
]

SESSION_VERSION = 1
TITLE_LENGTH = 60
_ID_RULE = re.compile(r"[A-Za-z0-9_-]{1,128}")
_MESSAGE_PREFIX = b'{"type": "message"'

# ---------------------------------------------------------------- reading


@dataclass(frozen=True)
class SessionInfo:
    """One line of a session listing. ``messages`` counts complete message lines;
    ``title`` is the first line of the first user message, cut to 60 characters;
    ``parent_session_id`` names the session whose run started this one (a sub-agent's);
    ``gate`` the other agent whose calls a gate decided in it (``rienda gate``'s sessions)."""

    id: str
    agent: str
    model: str
    created: str
    messages: int
    title: str
    parent_session_id: str | None = None
    gate: str | None = None  # a gate's session: the agent (claude-code...) whose calls it decided


@dataclass(frozen=True)
class UnusableSession:
    """A ``*.jsonl`` file of the sessions folder that a listing leaves out: ``message`` names
    it and says why (``…/x.jsonl: cannot be read: permission denied``)."""

    path: Path
    message: str


@dataclass(frozen=True)
class SessionScan:
    """The sessions folder as a listing reads it: the usable sessions, oldest first (by
    id), and the files it left out, by name."""

    sessions: list[SessionInfo]
    unusable: list[UnusableSession]


def _check_header(path: Path, line: bytes, empty: bool = False) -> JSONObject:
    """The header parsed from the first line, or :class:`SessionError` naming the file
    (``empty``: the file holds nothing at all)."""
    if empty:
        raise SessionError(f"{path}: empty: not a Rienda session (a session file starts with its header line)")
    try:
        header = bounded.loads(line)
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
    checked: JSONObject = repair(header)
    return checked


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except IsADirectoryError as exc:
        raise SessionError(f"{path} is a folder, not a session file") from exc
    except OSError as exc:
        raise SessionError(f"{path}: cannot be read: {(exc.strerror or str(exc)).lower()}") from exc


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


def _summary(path: Path) -> SessionInfo | UnusableSession:
    """A listing entry for one file, without building Message objects; or why it is unusable.

    Messages are counted as complete lines starting ``{"type": "message"`` (the writer's
    form); only message lines up to the first user message are parsed, for the title.
    """
    if not _ID_RULE.fullmatch(path.stem):
        return UnusableSession(path, f"{path}: its name is not a session id (1 to 128 letters, digits, '_' or '-')")
    try:
        data = _read_bytes(path)
        header = _check_header(path, _first_line(data), empty=not data)
    except SessionError as exc:
        return UnusableSession(path, str(exc))
    complete = data[: data.rfind(b"\n") + 1]
    count = complete.count(b"\n" + _MESSAGE_PREFIX)
    title = ""
    start = complete.find(b"\n" + _MESSAGE_PREFIX)
    while start >= 0:
        end = complete.find(b"\n", start + 1)
        try:
            line = bounded.loads(complete[start + 1 : end])
        except ValueError:
            line = None
        if isinstance(line, dict) and line.get("role") == "user":
            title = _title(repair(str(line.get("text") or "")))
            break
        start = complete.find(b"\n" + _MESSAGE_PREFIX, end)
    return SessionInfo(
        id=path.stem,
        agent=str(header.get("agent", "")),
        model=str(header.get("model", "")),
        created=str(header.get("created", "")),
        messages=count,
        title=title,
        parent_session_id=parent if isinstance(parent := header.get("parent_session_id"), str) else None,
        gate=_gate_agent(header),
    )


def _gate_agent(header: JSONObject) -> str | None:
    gate = header.get("gate")
    agent = gate.get("agent") if isinstance(gate, dict) else None
    return agent if isinstance(agent, str) else None


def read_session(path: Path) -> LoadedSession:
    """Read the session file ``path`` (anywhere; its id is the file name's stem), with
    :meth:`SessionStore.load`'s contract: damaged lines become warnings; a missing file
    or a bad header raises :class:`SessionError` naming the file."""
    path = Path(path)
    session_id = path.stem
    data = _read_bytes(path)
    lines, torn = _split_lines(data)
    header = _check_header(path, lines[0] if lines else b"", empty=not data)
    warnings: list[str] = []
    if header.get("id") != session_id:
        warnings.append(f"{path}:1: the header says id {header.get('id')!r}; using the file name {session_id!r}")
    for key in ("agent", "model", "created", "parent_session_id", "parent_call_id"):
        if key in header and not isinstance(header[key], str):
            warnings.append(f"{path}:1: the header's {key!r} is not a string ({type(header.pop(key)).__name__}); "
                            "ignored")
    session = LoadedSession(_typed_header(session_id, header), path=path, size=len(data), warnings=warnings)
    parse_body(path, data, lines, torn, session)
    return session


def _typed_header(session_id: str, header: JSONObject) -> SessionHeader:
    """The header's fields as a :class:`SessionHeader` (each string field checked by the
    caller; a depth or gate of the wrong type is left out)."""
    depth, gate = header.get("depth"), header.get("gate")
    return SessionHeader(
        id=session_id, agent=header.get("agent", ""), model=header.get("model", ""),
        created=header.get("created", ""), version=header["version"],
        parent_session_id=header.get("parent_session_id"), parent_call_id=header.get("parent_call_id"),
        depth=depth if isinstance(depth, int) and not isinstance(depth, bool) else None,
        gate=gate if isinstance(gate, dict) else None)


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

    def create(self, agent: str, model: str, *, session_id: str | None = None,
               parent: JSONObject | None = None) -> SessionWriter:
        """Start a new session file, take its lock and write its header (with ``parent``'s
        keys, for a sub-agent's session).

        ``session_id`` defaults to :func:`new_session_id`; :class:`SessionError` if it is
        not 1-128 letters, digits, ``_`` or ``-``, or the session already exists;
        :class:`SessionWriteError` (and no file) if the header cannot be written.
        """
        session_id = new_session_id() if session_id is None else self._checked_id(session_id)
        path = self._path(session_id)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        except FileExistsError as exc:
            raise SessionError(f"session {session_id!r} already exists: {path}") from exc
        except OSError as exc:
            raise SessionError(f"cannot create the session file {path}: {exc.strerror or exc}") from exc
        writer = SessionWriter(session_id, path, fd, self.scrubber)
        header = {"type": "session", "version": SESSION_VERSION, "id": session_id, "agent": agent,
                  "model": model, "created": iso_now(), **(parent or {})}
        try:
            writer.write_header(header)
        except Exception:
            writer.close()
            path.unlink(missing_ok=True)
            raise
        return writer

    def resume(self, session_id: str) -> SessionWriter:
        """A writer appending to an existing session, holding its lock, after checking its
        header.

        :class:`SessionBusy` if another writer holds the session (nothing is written);
        :class:`SessionError` if the session does not exist or its header is missing,
        wrong or from a newer version. A torn last line (no trailing newline) is terminated
        first, so it stays one bad line instead of swallowing the next one.
        """
        path = self._existing(session_id)
        writer = SessionWriter(session_id, path, os.open(path, os.O_RDWR | os.O_APPEND), self.scrubber)
        try:
            with open(path, "rb") as reader:
                _check_header(path, reader.readline().rstrip(b"\n"))
            writer.terminate_torn_line()
        except Exception:
            writer.close()
            raise
        return writer

    def header(self, session_id: str) -> SessionHeader:
        """The header of session ``session_id``, reading its first line alone;
        :class:`SessionError` as :meth:`load` raises it."""
        path = self._existing(session_id)
        try:
            with open(path, "rb") as reader:
                line = reader.readline(1024 * 1024).rstrip(b"\n")
        except OSError as exc:
            raise SessionError(f"{path}: cannot be read: {exc.strerror or exc}") from exc
        header = _check_header(path, line)
        for key in ("agent", "model", "created", "parent_session_id", "parent_call_id"):
            if key in header and not isinstance(header[key], str):
                header.pop(key)
        return _typed_header(session_id, header)

    def load(self, session_id: str) -> LoadedSession:
        """Read a whole session back.

        Damaged lines never raise: a torn last line, a line that is not a JSON object, or a
        message line with a missing or ill-typed field becomes a warning naming its line and
        is skipped; the rest is kept. :class:`SessionError` if the session does not exist or
        its header is missing, wrong or from a newer version.
        """
        return read_session(self._existing(session_id))

    def remove(self, session_id: str) -> Path:
        """Delete session ``session_id``'s file, holding its lock while it does: its path.
        :class:`SessionBusy` while a run writes it (nothing is deleted); :class:`SessionError`
        if it does not exist; OSError if the folder does not let it go."""
        path = self._existing(session_id)
        writer = SessionWriter(session_id, path, os.open(path, os.O_RDWR | os.O_APPEND), self.scrubber)
        try:
            path.unlink()
        finally:
            writer.close()
        return path

    def list(self) -> list[SessionInfo]:
        """Every usable session, oldest first (sorted by id); :meth:`scan` also names the
        files left out."""
        return self.scan().sessions

    def scan(self) -> SessionScan:
        """Every ``*.jsonl`` file of the folder: the usable sessions, oldest first, and the
        files left out, each with why (see :class:`UnusableSession`). SessionError when the
        folder cannot be listed or is a file (its sessions are not "none")."""
        if not self._readable():
            return SessionScan([], [])
        found = [_summary(path) for path in sorted(self.directory.glob("*.jsonl"))]
        return SessionScan(sorted((info for info in found if isinstance(info, SessionInfo)), key=lambda info: info.id),
                           [info for info in found if isinstance(info, UnusableSession)])

    def _ids(self) -> builtins.list[str]:
        if not self._readable():
            return []
        return sorted(path.stem for path in self.directory.glob("*.jsonl"))

    def _readable(self) -> bool:
        """Whether the sessions folder exists; SessionError when it does but cannot be
        listed, or is a file (its sessions are not "none")."""
        if not os.access(self.directory, os.F_OK):
            return False
        if not self.directory.is_dir():
            raise SessionError(f"{self.directory} is a file, not a folder: it cannot hold the sessions")
        if not os.access(self.directory, os.R_OK | os.X_OK):
            raise SessionError(f"{self.directory}: cannot be read: permission denied")
        return True

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
        if os.path.lexists(path):  # a folder, a dangling link...
            raise SessionError(f"{path} is {'a folder' if path.is_dir() else 'no regular file'}, not a session file")
        ids = self._ids()
        if not ids:
            hint = "there are no sessions yet"
        else:
            close = closest(session_id, ids, n=3)
            hint = ("closest: " + ", ".join(close)) if close else f"{len(ids)} other sessions, none with a similar id"
        raise SessionError(f"no session {session_id!r} in {self.directory} ({hint})")
