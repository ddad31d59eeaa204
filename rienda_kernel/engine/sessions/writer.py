"""Appending to a session file: one writer per session, whole lines, no torn writes left.

Contracts:
- **One writer per session.** A :class:`SessionWriter` holds an exclusive ``flock`` on its
  file from the moment it is opened until :meth:`~SessionWriter.close`; the operating system
  drops the lock when the process dies, however it dies. Opening a second writer (in any
  process) raises :class:`SessionBusy` naming the session, its file and, where
  ``/proc/locks`` tells, the pid of the holder, before anything is written.
- **Whole lines.** Each append is one complete line, scrubbed of secrets, written with
  ``os.write`` on an ``O_APPEND`` descriptor (no buffer in between) under a thread lock,
  so appends never interleave.
- **A failed write leaves no torn line.** When the system refuses a write (a full disk, a
  file-size limit), the file is truncated back to its last complete line and
  :class:`SessionWriteError` names the file and the reason: the file keeps every line
  written before and loads. A message that cannot be written always raises; a record
  (hook decision, run end) that cannot be written after an earlier failure is dropped
  without raising, so a run that is ending (``afterRun``) can still end.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from datetime import datetime, timezone
from pathlib import Path

from ..common.json_value import JSONObject
from ..errors import SessionBusy, SessionWriteError
from ..secrets import Scrubber
from .messages import Message
from .records import Record, UnknownRecord, record_json

__all__ = ["SessionWriter", "encode_line", "iso_now"]


def iso_now() -> str:
    """The current time as ISO-8601 UTC with milliseconds, e.g. ``2024-05-01T12:00:00.123Z``."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def encode_line(obj: JSONObject) -> bytes:
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
    """Appends to one session file; made by ``SessionStore.create`` or ``.resume``.

    ``failure`` is the error of the last write that failed, cleared by the next message
    written. Usable as a context manager; appending after :meth:`close` raises
    ``ValueError``.
    """

    def __init__(self, session_id: str, path: Path, fd: int, scrubber: Scrubber) -> None:
        """Take ``fd`` (open for appending) and its lock; :class:`SessionBusy` if taken.
        The descriptor is closed when the lock cannot be had."""
        self.id = session_id
        self.path = path
        self._file = os.fdopen(fd, "rb+", buffering=0)  # closes fd (and the lock) if dropped unclosed
        self._fd = fd
        self._scrubber = scrubber
        self._lock = threading.Lock()
        self._closed = False
        self.failure: SessionWriteError | None = None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            holder = _lock_holder(fd)
            self._file.close()
            by = f" (pid {holder})" if holder else ""
            raise SessionBusy(
                f"session {session_id} is being written by another run{by}: {path}; one run at a time "
                "may write a session (wait for it to end, or start a new session)") from exc
        self.opened_size = os.fstat(fd).st_size

    def append_message(self, message: Message) -> None:
        """Write ``{"type": "message", "time": <ISO UTC>, **message.to_dict()}``;
        :class:`SessionWriteError` if it cannot be written."""
        self._write({"type": "message", "time": iso_now(), **message.to_dict()}, record=False)

    def append_record(self, record: Record) -> None:
        """Write a record (:mod:`.records`), scrubbed. ``ValueError`` for an
        :class:`.records.UnknownRecord` whose type is ``"session"`` or ``"message"``,
        ``TypeError`` if a value is not JSON: nothing is written in either case. A write
        failure raises :class:`SessionWriteError` unless an earlier write failed already."""
        if isinstance(record, UnknownRecord) and record.type in ("session", "message"):
            raise ValueError(f"a record cannot have type {record.type!r}; use append_message for messages")
        self._write(record_json(record), record=True)

    def size(self) -> int:
        """The file's size now, in bytes."""
        return os.fstat(self._fd).st_size

    def write_header(self, header: JSONObject) -> None:
        """Write the header line of a new session file."""
        self._write(header, record=False)

    def terminate_torn_line(self) -> None:
        """End a last line left without its newline (a crash), so new lines start on their own."""
        with self._lock:
            size = os.fstat(self._fd).st_size
            if size and os.pread(self._fd, 1, size - 1) != b"\n":
                self._append(b"\n")

    def _write(self, obj: JSONObject, *, record: bool) -> None:
        line = encode_line(self._scrubber.scrub(obj))
        with self._lock:
            if self._closed:
                raise ValueError(f"session {self.id} is closed ({self.path})")
            failed_before = self.failure is not None
            try:
                self._append(line)
            except SessionWriteError as exc:
                self.failure = exc
                if record and failed_before:
                    return
                raise
            if not record:
                self.failure = None

    def _append(self, data: bytes) -> None:
        """Write all of ``data``, or truncate what got written and raise SessionWriteError."""
        written = 0
        try:
            while written < len(data):
                written += os.write(self._fd, data[written:])
        except OSError as exc:
            if written:
                _truncate(self._fd, written)
            raise SessionWriteError(
                f"cannot write to session file {self.path}: {exc.strerror or exc}; the session keeps "
                "everything written before (free some space and resume it)") from exc

    def close(self) -> None:
        """Close the file and release the session; closing twice is harmless."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._file.close()

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _truncate(fd: int, written: int) -> None:
    """Cut the last ``written`` bytes (a partly written line) off the file, if possible."""
    try:
        os.ftruncate(fd, os.fstat(fd).st_size - written)
    except OSError:
        pass  # the reader reports a torn last line; nothing more can be done here


def _lock_holder(fd: int) -> int | None:
    """The pid holding a flock on ``fd``'s file, from ``/proc/locks`` (None if unknown)."""
    stat = os.fstat(fd)
    file_id = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            for line in locks:
                fields = line.split()
                if "FLOCK" in fields and "->" not in fields and file_id in fields:
                    pid = fields[fields.index(file_id) - 1]
                    return int(pid) if pid.isdigit() else None
    except OSError:
        pass
    return None
