"""What every front end (the ``rienda`` command, the Rienda kernel, the ``%rienda`` magics,
the pytest plugin) shares on its way out: what a reader is shown, and one line per error.

- :class:`Reader`: every byte a front end prints or displays passes :meth:`Reader.text`
  (or :meth:`Reader.value`, for a message's JSON): the engine's one scrubber (no secret,
  see :mod:`rienda_kernel.engine.secrets`), lone surrogates replaced (a terminal or a
  notebook cannot encode them), and paths written for the reader: relative to the folder
  the front end started in (the notebook's), else ``~/``, where they are under it. A front
  end does not call it path by path: it puts it where all output passes (:class:`OutputStream`
  around ``sys.stdout``/``sys.stderr``; the kernel's message session; a cell's target).
- :class:`OutputStream`: a text stream in front of another that passes each write through a
  reader and never raises: a closed pipe (``rienda ... | head -1``) marks it
  :attr:`~OutputStream.closed_early`, calls ``on_closed`` once (a run stops), and the rest of the
  output is dropped.
- :func:`error_line`: any exception as one line: Rienda's own message, a system error
  naming the path and the reason, else the exception and "an internal error".
- :func:`check_folder`, :func:`check_output_file`: a path a command is given, checked
  before any work starts, with one line naming it.
"""

from __future__ import annotations

import errno
import io
import os
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import IO

from ..engine import JSON, RiendaError, scrub

__all__ = ["OutputStream", "Reader", "check_folder", "check_output_file", "error_line", "is_internal", "os_error_text"]

_SURROGATE = re.compile("[\ud800-\udfff]")
_PATH_CHAR = r"[\w.~/-]"


class Reader:
    """What a person reading this front end's output is shown (see the module docstring).
    ``folder`` is where the front end started (default: the current directory)."""

    def __init__(self, folder: str | os.PathLike[str] | None = None, paths: bool = True) -> None:
        self.folder = str(folder) if folder is not None else _current_folder()
        home = os.path.expanduser("~")
        places: list[tuple[str, str | None]] = []  # (the absolute form, what the reader sees instead; None: relative)
        if paths and self.folder not in ("", home):
            places += [(folder, None) for folder in _spellings(self.folder)]
        if paths:
            places += [(folder, "~") for folder in _spellings(home)]
        self._places = [(re.compile(rf"(?<!{_PATH_CHAR}){re.escape(where)}(/|(?![\w.-]))"), instead)
                        for where, instead in places if where not in ("", "/")]
        self._whole: list[str] = []  # folders whose paths are never made relative

    def keep_whole(self, folder: str | os.PathLike[str]) -> None:
        """Show every path inside ``folder`` whole (``~/`` at most), never relative to the
        current folder: for a command line a reader may copy and run from anywhere (the
        demo's ``rienda --home ~/.local/share/rienda/demo/home show last``)."""
        self._whole += _spellings(os.fspath(folder))

    def text(self, text: str) -> str:
        """``text`` as the reader sees it: scrubbed, encodable, paths shortened."""
        text = scrub(text)
        if _SURROGATE.search(text):
            text = _SURROGATE.sub("\ufffd", text)
        for pattern, instead in self._places:
            if pattern.search(text):
                text = pattern.sub(partial(_shortened, instead=instead, whole=self._whole), text)
        return text

    def value(self, value: JSON) -> JSON:
        """``value`` (JSON-like: a message's content) with :meth:`text` applied to each
        string in it, keys included; the credential fields the scrubber knows replaced."""
        value = scrub(value)
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.value(item) for item in value)
        return value


def _current_folder() -> str:
    """The current directory; "" when it has been deleted (no path is then shortened)."""
    try:
        return os.getcwd()
    except OSError:
        return ""


def _spellings(folder: str) -> list[str]:
    """``folder`` and its resolved form (a symlinked temporary folder), longest first, as
    :meth:`Reader.text` has them once their bytes that are not UTF-8 are U+FFFD."""
    spelled = {_SURROGATE.sub("\ufffd", os.path.normpath(folder)), _SURROGATE.sub("\ufffd", os.path.realpath(folder))}
    return sorted(spelled, key=len, reverse=True)


_PATH = re.compile(rf"{_PATH_CHAR}+")


def _shortened(match: re.Match[str], instead: str | None, whole: list[str]) -> str:
    slash = match.group(1)
    if instead is None and whole:  # made relative, unless the whole path is inside a folder kept whole
        path = _PATH.match(match.string, match.start())
        if path and any(path.group() == folder or path.group().startswith(folder + "/") for folder in whole):
            return match.group()
    if instead is None:
        return "" if slash else "."
    return instead + slash


class OutputStream(io.TextIOBase):
    """A text stream in front of ``stream``: each write is :meth:`Reader.text`'s, and
    nothing it does raises. Once the reader of a pipe has gone (EPIPE), :attr:`closed_early`
    is set, ``on_closed`` is called once, writes are dropped and, for a process's own
    standard stream (``own_fd``), its file descriptor is pointed at /dev/null, so that no
    later flush (at exit) fails either."""

    def __init__(self, stream: IO[str], reader: Reader, on_closed: Callable[[], None] | None = None,
                 own_fd: bool = False) -> None:
        super().__init__()
        self.stream = stream
        self.reader = reader
        self.on_closed = on_closed
        self.own_fd = own_fd
        self.closed_early = False

    def write(self, text: str) -> int:
        if not self.closed_early:
            shown = self.reader.text(text)
            try:
                self._call(lambda: self.stream.write(shown))
            except UnicodeEncodeError:  # a terminal that cannot show a character: shown as ?
                encoding = getattr(self.stream, "encoding", None) or "ascii"
                self._call(lambda: self.stream.write(shown.encode(encoding, "replace").decode(encoding)))
        return len(text)

    def flush(self) -> None:
        if not self.closed_early:
            self._call(self.stream.flush)

    def _call(self, action: Callable[[], object]) -> None:
        try:
            action()
        except UnicodeEncodeError:
            raise
        except (BrokenPipeError, ValueError):  # ValueError: the stream was closed under us
            self._gone()
        except OSError as exc:
            if exc.errno in (errno.EPIPE, errno.EBADF):
                self._gone()

    def _gone(self) -> None:
        if self.closed_early:
            return
        self.closed_early = True
        if self.own_fd:
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self.stream.fileno())
                os.close(devnull)
            except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
                pass
        if self.on_closed is not None:
            self.on_closed()

    # What code that inspects a stream asks of it (TerminalUI, argparse, IPython).
    def isatty(self) -> bool:
        try:
            return not self.closed_early and self.stream.isatty()
        except (ValueError, AttributeError):
            return False

    def fileno(self) -> int:
        return self.stream.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]  # typeshed: an attribute; io's is a read-only property
        return getattr(self.stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]  # typeshed: an attribute; io's is a read-only property
        return getattr(self.stream, "errors", None)

    def __getattr__(self, name: str) -> object:  # ipykernel's OutStream: set_parent, session...
        return getattr(self.stream, name)


# -- one line per error ------------------------------------------------------------------------


def is_internal(exc: BaseException) -> bool:
    """Whether ``exc`` is a bug of Rienda's rather than something the user can act on."""
    return not isinstance(exc, (RiendaError, OSError, RecursionError, KeyboardInterrupt))


def error_line(exc: BaseException, doing: str | None = None, traceback_in: str | None = None) -> str:
    """``exc`` as one line for a person; ``doing`` (``%rienda home``, ``--workdir``) first
    where it is not Rienda's own message (which says what failed already); for a bug,
    ``traceback_in`` says where its traceback went (``the kernel's log``)."""
    if isinstance(exc, RiendaError):
        return _one(str(exc))
    if isinstance(exc, OSError):
        text = os_error_text(exc)
    elif isinstance(exc, RecursionError):
        text = "the input is nested too deeply to be handled"
    else:
        detail = str(exc)
        where = f": {traceback_in} has its traceback" if traceback_in else ""
        text = f"{type(exc).__name__}{': ' + detail if detail else ''} (an internal error of Rienda{where})"
    return _one(f"{doing}: {text}" if doing else text)


def _one(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " ".join(lines) if len(lines) <= 3 else " ".join(lines[:3]) + " …"


_REASONS = {
    errno.ENOENT: "does not exist",
    errno.EISDIR: "is a folder, not a file",
    errno.ENOTDIR: "is not a folder (a part of that path is a file)",
    errno.EEXIST: "already exists",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOSPC: "no space left on the device",
    errno.EROFS: "is on a read-only file system",
    errno.ENAMETOOLONG: "the name is too long",
    errno.ELOOP: "too many levels of symbolic links",
}


def os_error_text(exc: OSError) -> str:
    """A system error as a person reads it: the path, then the reason."""
    reason = _REASONS.get(exc.errno or 0) or (exc.strerror or str(exc)).lower()
    if exc.filename is None:
        return reason
    path = os.fsdecode(exc.filename)
    if exc.errno == errno.EEXIST and Path(path).exists() and not Path(path).is_dir():
        return f"{path} is a file, not a folder"
    if reason.startswith(("is ", "does ", "already ")):
        return f"{path} {reason}"
    return f"{path}: {reason}"


# -- paths given to a command, checked before the work -------------------------------------------


def check_folder(path: str | os.PathLike[str], what: str) -> Path:
    """``path`` resolved, when it is a folder this process can list and enter; else
    RiendaError naming ``what`` (``--workdir``) and the path."""
    folder = Path(path).expanduser()
    if not folder.exists():
        raise RiendaError(f"{what} {folder} does not exist")
    if not folder.is_dir():
        raise RiendaError(f"{what} {folder} is a file, not a folder")
    if not os.access(folder, os.R_OK | os.X_OK):
        raise RiendaError(f"{what} {folder} cannot be read: permission denied")
    try:
        return folder.resolve()
    except OSError as exc:  # the current directory, deleted while we are in it
        raise RiendaError(f"{what} {folder} no longer exists (it was deleted)") from exc


def check_output_file(path: str | os.PathLike[str], what: str) -> Path:
    """``path``, when a file can be written there (its folder exists and is writable, and
    it is not a folder itself); else RiendaError naming ``what`` (``-o``) and the path."""
    target = Path(path).expanduser()
    folder = target.parent
    if target.is_dir():
        raise RiendaError(f"{what} {target} is a folder, not a file")
    if not folder.exists():
        raise RiendaError(f"{what} {target}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise RiendaError(f"{what} {target}: {folder} is a file, not a folder")
    if target.exists() and not os.access(target, os.W_OK):
        raise RiendaError(f"{what} {target} cannot be written: permission denied")
    if not target.exists() and not os.access(folder, os.W_OK | os.X_OK):
        raise RiendaError(f"{what} {target} cannot be written: the folder {folder} is not writable")
    return target
