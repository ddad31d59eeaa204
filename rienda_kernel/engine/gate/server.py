"""A warm gate: one per-user server per Rienda home, so a decision skips the cold start.

``rienda gate AGENT --warm`` first asks the server of its home over a Unix socket
(:func:`ask_gate_server`); with none there it decides itself, then starts one
(:func:`start_gate_server`) for the next calls. The server (``rienda gate-server``,
:func:`serve_gate`) answers each request with :func:`.answering.answer_hook_event` in its
own process (V8 worker, imports and catalog warm), with the asking process's working
folder and environment (``ctx.env``, and the secrets scrubbed from what it saves), and
ends after ``idle`` seconds without a request.

Contracts:
- The socket lives in ``$TMPDIR/rienda-gate-<uid>/``, a folder that must be this user's
  own, mode 0700, not a symbolic link: a folder another user could write is never used
  (the gate decides itself), so no one else can answer for the server.
- One server per home: it holds a lock file beside its socket for its whole life; a second
  one started meanwhile exits at once.
- :func:`ask_gate_server` never raises: None when there is no server, it cannot be
  reached, it fails or answers nothing usable within ``timeout``; the caller then decides
  itself, so a warm gate fails closed exactly as a cold one.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

__all__ = ["DEFAULT_IDLE", "ServedReply", "ask_gate_server", "gate_socket", "serve_gate", "start_gate_server"]

DEFAULT_IDLE = 600.0  # seconds without a request after which a server ends
_MAX_MESSAGE = 4 * 1024 * 1024  # a request holds at most a 1 MiB event (base64) and an environment
_CONNECT_TIMEOUT = 0.5


def gate_socket(home: Path) -> Path:
    """Where the server of ``home`` listens (the folder may not exist yet)."""
    digest = hashlib.sha256(str(home).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"rienda-gate-{os.getuid()}" / f"{digest}.sock"


def _own_folder(folder: Path, make: bool) -> bool:
    """Whether ``folder`` is this user's own (0700, no symbolic link); made so if ``make``."""
    if make:
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError:
            return False
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


@dataclass(frozen=True)
class ServedReply:
    """What a server answered for an event: the answer to print (None: nothing), the exit
    code, the notes for stderr."""

    answer: dict[str, object] | None
    exit_code: int
    notes: list[str]


def ask_gate_server(home: Path, target: str, data: bytes, options: Mapping[str, object],
                    timeout: float) -> ServedReply | None:
    """The server's reply to this event, or None (see the module's contract)."""
    path = gate_socket(home)
    if not path.exists() or not _own_folder(path.parent, make=False):
        return None
    request = {"target": target, "data": base64.b64encode(data).decode("ascii"), "options": dict(options),
               "cwd": os.getcwd(), "env": dict(os.environ)}
    deadline = time.monotonic() + timeout
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(_CONNECT_TIMEOUT)
            client.connect(str(path))
            client.settimeout(max(0.1, deadline - time.monotonic()))
            client.sendall(json.dumps(request).encode("utf-8", "surrogateescape") + b"\n")
            client.shutdown(socket.SHUT_WR)
            reply = json.loads(_read_all(client, deadline))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(reply, dict) or not isinstance(reply.get("exit_code"), int) \
            or not (reply.get("answer") is None or isinstance(reply.get("answer"), dict)) \
            or not all(isinstance(note, str) for note in reply.get("notes") or []):
        return None
    return ServedReply(reply.get("answer"), reply["exit_code"], list(reply.get("notes") or []))


def _read_all(connection: socket.socket, deadline: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        connection.settimeout(max(0.05, deadline - time.monotonic()))
        chunk = connection.recv(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > _MAX_MESSAGE or time.monotonic() > deadline:
            raise ValueError("the message is too large or too late")
        chunks.append(chunk)


def start_gate_server(home: Path, idle: float = DEFAULT_IDLE) -> None:
    """Start the server of ``home`` in the background (a session of its own, no terminal),
    unless the socket folder is not this user's own. Never raises."""
    if not _own_folder(gate_socket(home).parent, make=True):
        return
    command = [sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), "gate-server", "--idle", f"{idle:g}"]
    try:
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True, cwd="/")
    except OSError:
        pass


def serve_gate(home: Path, idle: float, log: TextIO | None = None) -> int:
    """Serve the gate of ``home`` until ``idle`` seconds pass without a request; 0, or 1
    when the socket folder is not this user's own. Another server of the home: 0 at once.
    ``log`` (a text stream) gets one line per request."""
    from ..secrets import Scrubber
    from .answering import GateOptions, answer_hook_event

    path = gate_socket(home)
    if not _own_folder(path.parent, make=True):
        return 1
    lock = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock)
        return 0
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(16)
    listener.settimeout(0.5)
    busy = [0]
    last = [time.monotonic()]
    guard = threading.Lock()

    def handle(connection: socket.socket) -> None:
        try:
            request = json.loads(_read_all(connection, time.monotonic() + 10))
            asked = request["options"]
            options = GateOptions(str(home), agent=asked.get("agent"), timeout=asked.get("timeout"),
                                  confirm=asked.get("confirm"), cwd=request["cwd"], env=request["env"])
            reply = answer_hook_event(request["target"], base64.b64decode(request["data"]), options)
            clean = Scrubber({**os.environ, **request["env"]}).scrub  # what the asking process may show
            connection.sendall(json.dumps({"answer": clean(reply.answer), "exit_code": reply.exit_code,
                                           "notes": clean(reply.notes)}).encode())
            if log is not None:
                print(f"served {request['target']}: {reply.verdict.kind if reply.verdict else 'none'}", file=log,
                      flush=True)
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
        os.close(lock)
