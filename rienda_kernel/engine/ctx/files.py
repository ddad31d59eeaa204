"""File access for ``ctx.file`` and the built-in ``read`` and ``write`` tools.

Relative paths resolve against the workspace directory; absolute paths and ``~`` are
honoured as given (extensions are trusted, there is no jail). Failures are Python's
own ``OSError`` subclasses whose message names the path once, as it resolved (absolute:
the model knows where it looked; a front end shows it as its reader sees it), e.g. ``no
such file: /tmp/w/notes.txt``.

Bounds: :meth:`Workspace.read` reads at most :data:`READ_CAP` bytes (a larger file, or a
FIFO or device that gives more, is an error: no extension could hold it anyway), and
:meth:`Workspace.head` only the first bytes it is asked for, so a 10 GB file or
``/dev/zero`` costs no more memory than what is returned. With a cancel token every
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

__all__ = ["READ_CAP", "Workspace"]

READ_CAP = 4 * 1024 * 1024  # the most one ctx.file.read returns (ctx/host.py's HOST_TEXT_CAP)

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
        """The file's contents decoded as UTF-8 (invalid bytes become U+FFFD); an OSError
        (``EFBIG``) when it holds more than :data:`READ_CAP` bytes."""
        target = self.resolve(path)
        data = self._bytes(path, target, READ_CAP + 1)
        if len(data) > READ_CAP:
            error = OSError(f"file too large: {target} holds more than {READ_CAP // (1024 * 1024)} MiB, "
                            "the most one read returns")
            error.errno = errno.EFBIG
            raise error
        return data.decode("utf-8", errors="replace")

    def head(self, path: str, size: int) -> tuple[str, bool]:
        """The file's first ``size`` bytes decoded as :meth:`read` does, and whether it holds
        more (what follows is never read)."""
        target = self.resolve(path)
        data = self._bytes(path, target, size + 1)
        return data[:size].decode("utf-8", errors="replace"), len(data) > size

    def _bytes(self, given: str, target: Path, most: int) -> bytes:
        """At most ``most`` bytes of ``target``, read as they come (a FIFO, a device...)."""
        def read() -> bytes:
            with open(target, "rb") as handle:
                chunks, left = [], most
                while left > 0 and (chunk := handle.read(min(left, 1024 * 1024))):
                    chunks.append(chunk)
                    left -= len(chunk)
                return b"".join(chunks)

        try:
            return self._blocking(f"reading {given}", read)
        except OSError as exc:
            raise _described(exc, target) from exc

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
            raise _described(exc, target) from exc

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
            raise _described(exc, target, missing="no such directory") from exc
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


def _described(exc: OSError, resolved: Path, *, missing: str = "no such file") -> OSError:
    """The same kind of error, with a message naming the path once, as it resolved (a
    relative path given is plain from it: it is under the workspace)."""
    kind = type(exc) if type(exc) in _PHRASES else OSError
    phrase = missing if kind is FileNotFoundError else _PHRASES.get(kind) or (exc.strerror or str(exc)).lower()
    error = kind(f"{phrase}: {resolved}")
    error.errno = exc.errno
    return error
