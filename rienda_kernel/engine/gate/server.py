"""A warm gate: one per-user server per Rienda home, so a decision skips the cold start.

``rienda-gate AGENT`` (and ``rienda gate AGENT --warm``) first asks the server of its home
over a Unix socket (:func:`.wire.ask_server`); with none there it decides itself, then
starts one (:func:`start_gate_server`) for the next calls. The server (``rienda
gate-server``, :func:`serve_gate`) answers each request with
:func:`.answering.answer_hook_event` in its own process (V8 worker, imports and catalog
warm), with the asking process's working folder and environment (``ctx.env``, and the
secrets scrubbed from what it saves and answers), and ends after ``idle`` seconds
without a request.

Contracts:
- The socket lives in ``$TMPDIR/rienda-gate-<uid>/`` (:func:`.wire.socket_path`), a folder
  that must be this user's own, mode 0700, not a symbolic link: a folder another user
  could write is never used (the gate decides itself), so no one else can answer for the
  server. A request for another home is not answered.
- One server per home: it holds a lock file beside its socket for its whole life; a second
  one started meanwhile exits at once.
- A request's decision keeps to the asking process's time: the server says first how long
  it may take (``until``), then answers within the gate's timeout of when the asking
  process started.
"""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from .wire import decode_request, netstring, netstrings, own_folder, socket_path

__all__ = ["DEFAULT_IDLE", "gate_socket", "serve_gate", "server_running", "start_gate_server"]

DEFAULT_IDLE = 600.0  # seconds without a request after which a server ends
_MAX_MESSAGE = 4 * 1024 * 1024  # a request holds at most a 1 MiB event and an environment
_READ_WAIT = 2.0  # a client writes its request at once: one that takes longer is not waited for
_FINISH_WAIT = 5.0  # a stopping server finishes the requests in flight within this


def gate_socket(home: Path) -> Path:
    """Where the server of ``home`` (resolved) listens (the folder may not exist yet)."""
    return Path(socket_path(str(home)))


def server_running(home: Path) -> int | None:
    """The process id of the server of ``home`` when one runs (it holds its lock), else None."""
    lock_path = gate_socket(home).with_suffix(".lock")
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        written = os.read(fd, 32).decode("ascii", "replace").strip()
        return int(written) if written.isdigit() else 0
    finally:
        os.close(fd)
    return None


def start_gate_server(home: Path, idle: float = DEFAULT_IDLE) -> None:
    """Start the server of ``home`` in the background (a session of its own, no terminal),
    unless the socket folder is not this user's own. Never raises."""
    if not own_folder(str(gate_socket(home).parent), make=True):
        return
    command = [sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), "gate-server", "--idle", f"{idle:g}"]
    try:
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True, cwd="/")
    except OSError:
        pass


def serve_gate(home: Path, idle: float, log: TextIO | None = None) -> int:
    """Serve the gate of ``home`` until ``idle`` seconds pass without a request; 0, or 1
    when the socket folder is not this user's own or the socket cannot be made there.
    Another server of the home: 0 at once.
    ``log`` (a text stream) gets one line per request. A server that stops (idle, or
    SIGTERM) takes no new request and finishes those in flight first, for up to
    :data:`_FINISH_WAIT` seconds."""
    from . import answering  # noqa: F401 - imported before the socket is there: its first call is as warm as the rest

    path = gate_socket(home)
    if not own_folder(str(path.parent), make=True):
        return 1
    lock = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock)
        return 0
    os.ftruncate(lock, 0)
    os.write(lock, str(os.getpid()).encode())  # who holds it, for rienda gate status
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))  # a path past what a Unix socket holds (108 bytes) cannot be bound
    except OSError as exc:
        listener.close()
        os.close(lock)
        if log is not None:
            print(f"cannot listen at {path}: {exc.strerror or exc}", file=log, flush=True)
        return 1
    listener.listen(16)
    listener.settimeout(0.5)
    busy = [0]
    last = [time.monotonic()]
    guard = threading.Lock()

    def handle(connection: socket.socket) -> None:
        try:
            _answer(home, connection, log)
        except Exception as exc:  # noqa: BLE001 - the client hears nothing and decides itself
            if log is not None:
                print(f"failed: {type(exc).__name__}: {exc}", file=log, flush=True)
        finally:
            connection.close()
            with guard:
                busy[0] -= 1
                last[0] = time.monotonic()

    try:
        while True:
            try:
                connection, _ = listener.accept()
            except socket.timeout:
                with guard:
                    if not busy[0] and time.monotonic() - last[0] > idle:
                        return 0
                continue
            with guard:
                busy[0] += 1
                last[0] = time.monotonic()
            threading.Thread(target=handle, args=(connection,), name="rienda-gate-serve", daemon=True).start()
    finally:
        path.unlink(missing_ok=True)
        listener.close()
        _finish(busy, guard)
        os.close(lock)


def _finish(busy: list[int], guard: threading.Lock) -> None:
    """Wait, up to :data:`_FINISH_WAIT` seconds, for the requests in flight (answered and
    logged on their own threads) when the server stops, by SIGTERM or idle."""
    deadline = time.monotonic() + _FINISH_WAIT
    while time.monotonic() < deadline:
        with guard:
            if not busy[0]:
                return
        time.sleep(0.01)


def _answer(home: Path, connection: socket.socket, log: TextIO | None) -> None:
    """One request: read, decided, answered (``until`` as soon as the deadline is known)."""
    from ..secrets import Scrubber
    from .answering import GateOptions, answer_hook_event

    received = time.monotonic()
    request = decode_request(_read_all(connection, received + _READ_WAIT))
    if os.path.realpath(request.home) != str(home):
        raise ValueError(f"a request for the home {request.home}, not this server's")
    env = request.environment()

    def announce(deadline: float) -> bool:
        try:
            connection.sendall(netstring(b"until %r" % max(0.0, deadline - time.monotonic())))
        except OSError:
            return False  # the client went away: it decides itself, and records it
        return True

    options = GateOptions(str(home), agent=request.agent or None, timeout=_seconds(request.timeout),
                          confirm=request.confirm or None, cwd=request.cwd, env=env,
                          started=received - max(0.0, request.spent), announce=announce)
    reply = answer_hook_event(request.target, request.event, options)
    clean = Scrubber({**os.environ, **env}).scrub  # what the asking process may show
    answer = clean(reply.answer)
    shown = replace(reply, answer=answer if isinstance(answer, dict) else None,
                    notes=[str(clean(note)) for note in reply.notes])
    connection.sendall(netstring(b"reply") + netstring(str(reply.exit_code).encode())
                       + netstring(shown.stdout().encode()) + netstring(shown.stderr().encode()))
    if log is not None:
        print(f"served {request.target}: {reply.said or 'none'}", file=log, flush=True)


def _seconds(given: str) -> float | None:
    """A timeout as the client gave it (``""``: none); one that is not a number is NaN,
    which the settings refuse."""
    if not given:
        return None
    try:
        return float(given)
    except ValueError:
        return float("nan")


def _read_all(connection: socket.socket, deadline: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        connection.settimeout(max(0.05, deadline - time.monotonic()))
        chunk = connection.recv(65536)
        if not chunk:
            data = b"".join(chunks)
            list(netstrings(data))  # ValueError for what is not netstrings
            return data
        size += len(chunk)
        if size > _MAX_MESSAGE or time.monotonic() > deadline:
            raise ValueError("the request is too large or too late")
        chunks.append(chunk)
