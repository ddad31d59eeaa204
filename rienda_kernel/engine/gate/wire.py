"""The warm gate's wire, shared by the lean client and the server: where a home's server
listens, and what goes over its Unix socket. It imports nothing a plain ``python -c pass``
has not loaded but ``_socket`` (no ``re``, ``json``, ``typing``, ``pathlib``,
``hashlib``...), because ``rienda-gate`` pays for every import on every tool call.

Contracts:
- :func:`socket_path` is the server's socket of a home (its resolved path):
  ``$TMPDIR/rienda-gate-<uid>/<digest>.sock``; the folder must be this user's own
  (:func:`own_folder`: mode 0700, not a symbolic link). The digest is short, not secret: a
  request names its home and a server answers only for its own.
- Everything on the wire is netstrings (``<length>:<bytes>,``). A request is
  :data:`VERSION` then its fields (:class:`Request`); the server's answer is first, as
  soon as it knows it, ``until <seconds>`` (how long the decision may still take), then
  ``reply`` with the exit code, the bytes for stdout and the bytes for stderr.
- :func:`read_event_input` reads the hook event from stdin: at most ``limit`` bytes, and never
  past ``deadline`` (a terminal is waited for: a person types it, and is told what to give).
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # not typing's: importing typing costs the lean client milliseconds; mypy reads the name
if TYPE_CHECKING:
    import _socket
    from collections.abc import Iterator

__all__ = ["VERSION", "Request", "Served", "Unanswered", "ask_server", "decode_request", "encode_request", "netstring",
           "netstrings", "own_folder", "read_event_input", "socket_path"]

VERSION = b"rienda-gate/2"
_FIELDS = ("target", "home", "agent", "timeout", "confirm", "spent", "cwd", "env", "event")


def socket_path(home: str) -> str:
    """Where the server of ``home`` (a resolved path) listens; the folder may not exist yet."""
    digest = 0xCBF29CE484222325  # FNV-1a, 64 bits: no hashlib import for a file name
    for byte in os.fsencode(home):
        digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return os.path.join(_temp_folder(), f"rienda-gate-{os.getuid()}", f"{digest:016x}.sock")


def _temp_folder() -> str:
    """``tempfile.gettempdir()``'s first choice, without importing tempfile: ``$TMPDIR``
    (``$TEMP``, ``$TMP``) when it is a folder, else ``/tmp``."""
    for name in ("TMPDIR", "TEMP", "TMP"):
        folder = os.environ.get(name)
        if folder and os.path.isdir(folder):
            return os.path.abspath(folder)
    return "/tmp"


def own_folder(folder: str, make: bool) -> bool:
    """Whether ``folder`` is this user's own (a folder, 0700, not a symbolic link); made
    so first if ``make``."""
    if make:
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return False
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return (info.st_mode & 0o170000) == 0o040000 and info.st_uid == os.getuid() and not info.st_mode & 0o077


def netstring(data: bytes) -> bytes:
    return b"%d:%s," % (len(data), data)


def netstrings(buffer: bytes) -> Iterator[bytes]:
    """The complete netstrings at the start of ``buffer`` (ValueError for one that is not)."""
    at = 0
    while at < len(buffer):
        colon = buffer.find(b":", at, at + 12)
        if colon < 0:
            if len(buffer) - at < 12 and buffer[at:].isdigit():
                return  # a length still coming
            raise ValueError("not a netstring")
        size = int(buffer[at:colon])
        end = colon + 1 + size
        if end >= len(buffer):
            return
        if buffer[end:end + 1] != b",":
            raise ValueError("not a netstring")
        yield buffer[colon + 1:end]
        at = end + 1


class Request:
    """One event for the server: ``target`` (the agent that sent it), the ``home`` the
    client means, the options as given (``""``: not given), ``spent`` seconds the client
    already used of the gate's time, its ``cwd`` and environment (``env``: ``NAME=value``
    joined by NUL bytes), and the ``event`` as read."""

    __slots__ = _FIELDS

    def __init__(self, target: str, home: str, agent: str, timeout: str, confirm: str, spent: float, cwd: str,
                 env: bytes, event: bytes) -> None:
        self.target, self.home, self.agent, self.timeout, self.confirm = target, home, agent, timeout, confirm
        self.spent, self.cwd, self.env, self.event = spent, cwd, env, event

    def environment(self) -> dict[str, str]:
        """``env`` as a mapping."""
        pairs = (os.fsdecode(item).partition("=") for item in self.env.split(b"\0") if item)
        return {name: value for name, _, value in pairs if name}


def encode_request(request: Request) -> bytes:
    parts = [VERSION, request.target.encode(), os.fsencode(request.home), request.agent.encode("utf-8", "replace"),
             request.timeout.encode("utf-8", "replace"), request.confirm.encode("utf-8", "replace"),
             repr(request.spent).encode(), os.fsencode(request.cwd), request.env, request.event]
    return b"".join(netstring(part) for part in parts)


def decode_request(data: bytes) -> Request:
    """The request ``data`` holds (ValueError when it is not one)."""
    parts = list(netstrings(data))
    if len(parts) != len(_FIELDS) + 1 or parts[0] != VERSION:
        raise ValueError("not a rienda-gate request of this version")
    target, home, agent, timeout, confirm, spent, cwd, env, event = parts[1:]
    return Request(target.decode(), os.fsdecode(home), agent.decode(), timeout.decode(), confirm.decode(),
                   float(spent), os.fsdecode(cwd), env, event)


def read_event_input(limit: int, deadline: float | None) -> tuple[bytes, bool]:
    """The hook event on stdin (up to ``limit`` bytes, till its end) and whether it ended in
    time: reading stops at ``deadline`` (``time.monotonic``; None: no bound). A terminal is
    told on stderr what to give, and is waited for without a bound."""
    stdin = sys.stdin
    if stdin is None:
        return b"", True
    fd = stdin.fileno()
    if os.isatty(fd):
        print("rienda gate: reading one hook event (a JSON object) from stdin; end it with Ctrl-D", file=sys.stderr,
              flush=True)
        deadline = None
    import select  # a C module: cheap, and only a reader of stdin needs it

    chunks: list[bytes] = []
    size = 0
    while size < limit:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return b"".join(chunks), False
        chunk = os.read(fd, min(65536, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), True


# ---------------------------------------------------------------- asking the server (the client's side)

_CONNECT_WAIT = 0.5
_HELLO_WAIT = 0.5  # a server that does not even say how long it will take is stuck: the client decides
_LATE_SLACK = 0.25  # past the server's own deadline: its answer is not coming
_MAX_REPLY = 4 * 1024 * 1024


class Served:
    """The server's reply: the exit code and what to print on stdout and stderr."""

    __slots__ = ("code", "out", "err")

    def __init__(self, code: int, out: bytes, err: bytes) -> None:
        self.code, self.out, self.err = code, out, err


class Unanswered:
    """No reply, and why: ``none`` (no server, or none could be reached: the client decides
    and may start one), ``failed`` (the server closed or garbled its reply, or did not say
    how long it would take within half a second: the client decides, with the time left),
    ``late`` (the server said how long it would take and did not answer within that: the
    gate's time is spent, so the client denies)."""

    __slots__ = ("why", "detail")

    def __init__(self, why: str, detail: str = "") -> None:
        self.why, self.detail = why, detail


def ask_server(home: str, request: Request, deadline: float | None) -> Served | Unanswered:
    """The reply of the server of ``home`` to ``request``; never raises (see
    :class:`Unanswered`). ``deadline`` (``time.monotonic``): the client's own bound, when it
    knows the gate's timeout (None: the server's word is waited for)."""
    path = socket_path(home)
    if not os.path.exists(path) or not own_folder(os.path.dirname(path), make=False):
        return Unanswered("none")
    import _socket

    client = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        try:
            client.settimeout(_CONNECT_WAIT)
            client.connect(path)
        except OSError:
            return Unanswered("none", "no server answers at its socket")
        client.sendall(encode_request(request))
        client.shutdown(_socket.SHUT_WR)
        return _reply(client, deadline)
    except TimeoutError:
        return Unanswered("failed", "the gate server did not say in time how long it would take")
    except (OSError, ValueError) as exc:
        return Unanswered("failed", f"the gate server failed ({type(exc).__name__})")
    finally:
        client.close()


def _reply(client: _socket.socket, deadline: float | None) -> Served | Unanswered:
    """Read frames until the reply: ``until`` first moves the bound to the server's own."""
    buffer = b""
    now = time.monotonic()
    bound = now + (_HELLO_WAIT if deadline is None else max(0.05, min(_HELLO_WAIT, (deadline - now) / 4)))
    promised: float | None = None
    while True:
        left = bound - time.monotonic()
        if left <= 0:
            if promised is None:
                return Unanswered("failed", "the gate server did not say in time how long it would take")
            return Unanswered("late", f"the gate server did not answer within the {promised:g} s it had left")
        client.settimeout(left)
        try:
            chunk = client.recv(65536)
        except TimeoutError:
            continue
        if not chunk:
            return Unanswered("failed", "the gate server closed the connection without an answer")
        buffer += chunk
        if len(buffer) > _MAX_REPLY:
            raise ValueError("the reply is too large")
        frames = list(netstrings(buffer))
        if frames and frames[0].startswith(b"until ") and promised is None:
            promised = max(0.0, float(frames[0][6:]))
            bound = time.monotonic() + promised + _LATE_SLACK
        body = frames[1:] if frames and frames[0].startswith(b"until ") else frames
        if len(body) >= 4 and body[0] == b"reply":
            return Served(int(body[1]), body[2], body[3])
