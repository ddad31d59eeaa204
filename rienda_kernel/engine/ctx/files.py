"""File access for ``ctx.file`` and the built-in ``read`` and ``write`` tools.

Relative paths resolve against the workspace directory; absolute paths and ``~`` are
honoured as given (extensions are trusted, there is no jail). Failures are Python's
own ``OSError`` subclasses whose message names the path as the caller wrote it and
the path it resolved to, e.g. ``no such file: notes.txt (/tmp/w/notes.txt)``.

With a cancel token every
operation ends at an interrupt, even one blocked in a system call (a FIFO nobody writes,
a file another process holds a lease on, a hung network file system): it runs on a thread
of its own that the interrupt abandons (:func:`..cancel.abandon_on_cancel`).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..cancel import CancelToken, abandon_on_cancel

T = TypeVar("T")

__all__ = ["Workspace"]

_PHRASES: dict[type[OSError], str] = {
    FileNotFoundError: "no such file",
    IsADirectoryError: "is a directory",
    NotADirectoryError: "not a directory",
    PermissionError: "permission denied",
    FileExistsError: "already exists",
}


class Workspace:
    """Reads and writes files on behalf of extensions and tools, relative to ``workdir``;
    with ``cancel``, each operation raises :class:`Interrupted` as soon as it is set."""

    def __init__(self, workdir: str | Path, cancel: CancelToken | None = None) -> None:
        self.workdir: Path = Path(workdir).expanduser().resolve()
        self._cancel = cancel

    def _blocking(self, what: str, work: Callable[[], T]) -> T:
        return work() if self._cancel is None else abandon_on_cancel(work, self._cancel, what)

    def resolve(self, path: str) -> Path:
        """The absolute path for ``path``: ``~`` expanded, relative paths joined to workdir.

        Raises TypeError for a non-string and ValueError for an empty string.
        """
        _require_str("path", path)
        if not path:
            raise ValueError("path must be a non-empty string")
        candidate = Path(path).expanduser()
        return candidate if candidate.is_absolute() else self.workdir / candidate

    def read(self, path: str) -> str:
        """The file's contents decoded as UTF-8 (invalid bytes become U+FFFD)."""
        target = self.resolve(path)
        try:
            data = self._blocking(f"reading {path}", target.read_bytes)
        except OSError as exc:
            raise _described(exc, path, target) from exc
        return data.decode("utf-8", errors="replace")

    def write(self, path: str, text: str) -> None:
        """Replace the file's contents with ``text`` as UTF-8, creating parent directories.

        The text goes to a temporary file in the same directory that is then renamed
        over the target, so readers see the old or the new contents, never a mix. An
        existing file keeps its permissions; writing through a symlink updates the
        file it points to.
        """
        target = self.resolve(path)
        _require_str("text", text)
        data = text.encode("utf-8", errors="replace")

        def write() -> None:
            destination = Path(os.path.realpath(target))
            _make_parents(destination.parent)
            _replace_atomically(destination, data)

        try:
            self._blocking(f"writing {path}", write)
        except OSError as exc:
            raise _described(exc, path, target) from exc

    def exists(self, path: str) -> bool:
        """True if something (file, directory...) exists at ``path``."""
        target = self.resolve(path)
        return self._blocking(f"looking for {path}", target.exists)

    def list(self, dir: str = ".") -> list[str]:
        """Sorted entry names of directory ``dir``; directories end with ``/``."""
        target = self.resolve(dir)

        def scan() -> list[str]:
            with os.scandir(target) as entries:
                return [entry.name + "/" if entry.is_dir() else entry.name for entry in entries]

        try:
            names = self._blocking(f"listing {dir}", scan)
        except OSError as exc:
            raise _described(exc, dir, target, missing="no such directory") from exc
        return sorted(names)


def _require_str(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, not {type(value).__name__}")


def _make_parents(directory: Path) -> None:
    """Create ``directory`` and its parents; a file in the way is NotADirectoryError."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:
        raise NotADirectoryError(errno.ENOTDIR, "a parent is a file") from exc


def _replace_atomically(destination: Path, data: bytes) -> None:
    """Write ``data`` to a sibling temporary file, then rename it over ``destination``."""
    mode = _existing_mode(destination)
    temporary = destination.with_name(f".{destination.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is not None:
            os.chmod(temporary, mode)  # the umask may have narrowed it
        os.replace(temporary, destination)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _existing_mode(path: Path) -> int | None:
    """Permission bits of an existing regular file; None if there is none.

    A directory at ``path`` raises IsADirectoryError rather than being replaced.
    """
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory")
    return stat.S_IMODE(info.st_mode)


def _described(exc: OSError, given: str, resolved: Path, *, missing: str = "no such file") -> OSError:
    """The same kind of error, with a message naming both the given and resolved path."""
    kind = type(exc) if type(exc) in _PHRASES else OSError
    phrase = missing if kind is FileNotFoundError else _PHRASES.get(kind) or (exc.strerror or str(exc)).lower()
    error = kind(f"{phrase}: {given} ({resolved})")
    error.errno = exc.errno
    return error
