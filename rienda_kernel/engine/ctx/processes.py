"""Running shell commands for ``ctx.system.exec`` and the built-in ``shell`` tool.

A command runs as ``/bin/sh -c COMMAND`` in a process group of its own, with stdin
from ``/dev/null``. Its stdout and stderr are read as they arrive, decoded as UTF-8
incrementally, handed to ``on_output`` chunk by chunk (all of it: streamed output is never
capped) and kept for the result up to ``keep`` characters per stream (all of it when
None), so memory stays bounded whatever a command prints. The chunks are cut so that no
secret is split across two of them (:class:`..secrets.StreamGuard`), so that scrubbing each
one on its way out catches every secret.

Killing (on timeout, on cancel, or when background processes keep the output open
after the shell exited) always targets the whole group: SIGTERM, then SIGKILL if the
group is still alive 0.5 s later. A process that left the group (``setsid``) and still
holds the output open is not waited for past a further 0.5 s: the pipes are closed.
"""

from __future__ import annotations

import codecs
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..cancel import CancelToken
from ..errors import Interrupted
from ..events import StreamName
from ..secrets import StreamGuard

__all__ = ["CommandResult", "run_command"]

_KILL_GRACE_S = 0.5  # SIGTERM -> SIGKILL
_DRAIN_GRACE_S = 0.2  # shell exited, output still held open by background processes
_TICK_S = 0.05  # longest the supervising loop sleeps without looking around
_READ_SIZE = 65536

OutputCallback = Callable[[StreamName, str], None]


@dataclass(frozen=True)
class CommandResult:
    """How a command ended.

    ``code`` is the exit status; for a process killed by a signal it is 128 + the
    signal number (as a shell reports it), or -1 when unknown.
    """

    code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False  # stdout or stderr holds only its first ``keep`` characters

    def to_js(self) -> dict[str, object]:
        """The object ``ctx.system.exec`` resolves to; ``timedOut`` and ``truncated`` only
        when true."""
        result: dict[str, object] = {"code": self.code, "stdout": self.stdout, "stderr": self.stderr}
        if self.timed_out:
            result["timedOut"] = True
        if self.truncated:
            result["truncated"] = True
        return result


def run_command(
    command: str,
    *,
    cwd: str | Path,
    timeout_ms: int | None = None,
    env: dict[str, str] | None = None,
    on_output: OutputCallback | None = None,
    cancel: CancelToken | None = None,
    keep: int | None = None,
) -> CommandResult:
    """Run ``command`` with ``/bin/sh -c`` in ``cwd`` and wait for it.

    ``env`` adds variables to the inherited environment. ``on_output(stream, text)``
    is called on this thread with ``"stdout"`` or ``"stderr"`` as soon as data
    arrives. On timeout the process group is killed and the result has
    ``timed_out=True`` and a note at the end of stderr. On cancel the group is killed
    and :class:`Interrupted` raised. With ``keep``, the result holds the first ``keep``
    characters of each stream, ``truncated=True`` and a note at the end of stderr saying
    how much more was shown live. Raises ``FileNotFoundError`` /
    ``NotADirectoryError`` when ``cwd`` is not a directory. No process of the group
    that still holds the output pipes outlives the call.
    """
    directory = _working_directory(cwd)
    if cancel is not None and cancel.cancelled:
        raise Interrupted("command interrupted before it started")
    proc = _spawn(command, directory, env)
    group = _ProcessGroup(proc.pid)
    streams = _Streams(proc, on_output, keep)
    unregister = cancel.on_cancel(group.terminate) if cancel is not None else (lambda: None)
    try:
        outcome = _supervise(proc, group, streams, timeout_ms)
    except BaseException:
        group.kill()  # e.g. on_output raised: leave nothing running behind us
        raise
    finally:
        unregister()
        _reap(proc, group)
        group.close()
        streams.close()
    if cancel is not None and cancel.cancelled:
        raise Interrupted("command interrupted")
    return _result(proc.returncode, streams, outcome, timeout_ms)


def _working_directory(cwd: str | Path) -> Path:
    """``cwd`` as a Path, or an OSError naming it when it is not a usable directory."""
    directory = Path(cwd)
    if not directory.exists():
        raise FileNotFoundError(f"working directory does not exist: {directory}")
    if not directory.is_dir():
        raise NotADirectoryError(f"working directory is not a directory: {directory}")
    return directory


def _spawn(command: str, directory: Path, env: dict[str, str] | None) -> subprocess.Popen[bytes]:
    """Start the shell as the leader of a new session (hence a new process group)."""
    if not isinstance(command, str):
        raise TypeError(f"command must be a string, not {type(command).__name__}")
    child_env = {**os.environ, **env} if env else None
    return subprocess.Popen(
        ["/bin/sh", "-c", command],
        cwd=directory,
        env=child_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


class _ProcessGroup:
    """Signals one process group; callable from any thread, never blocks."""

    def __init__(self, pgid: int) -> None:
        self._pgid = pgid
        self._lock = threading.Lock()
        self._closed = False
        self.terminated_at: float | None = None  # monotonic time of the first SIGTERM
        self.killed = False
        self.killed_at: float | None = None  # monotonic time of the first SIGKILL

    def close(self) -> None:
        """Stop signalling: the group id may be reused once its processes are gone."""
        with self._lock:
            self._closed = True

    def terminate(self) -> None:
        """Send SIGTERM to the group (once); :meth:`escalate` follows up with SIGKILL."""
        with self._lock:
            if self.terminated_at is not None:
                return
            self.terminated_at = time.monotonic()
        self._signal(signal.SIGTERM)

    def escalate(self, now: float) -> None:
        """SIGKILL the group if it was terminated at least the grace period ago."""
        if self.terminated_at is not None and not self.killed and now - self.terminated_at >= _KILL_GRACE_S:
            self.kill()

    def kill(self) -> None:
        self.killed = True
        if self.killed_at is None:
            self.killed_at = time.monotonic()
        self._signal(signal.SIGKILL)

    def finish_kill(self) -> None:
        """After :meth:`terminate`, SIGKILL whatever is left of the group.

        Called once the shell is dead and the pipes are closed, so the grace period
        has already been granted to everything that mattered; survivors are
        processes that detached their output and ignored SIGTERM. (Waiting for the
        group to empty is not an option: orphans become zombies of an init that may
        never reap them, and zombies keep the group alive.)
        """
        if self.terminated_at is not None and not self.killed:
            self.kill()

    def _signal(self, signum: int) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                os.killpg(self._pgid, signum)
            except (ProcessLookupError, PermissionError):
                pass  # the group is already gone


class _Streams:
    """The child's stdout and stderr, read as data arrives and decoded incrementally."""

    def __init__(self, proc: subprocess.Popen[bytes], on_output: OutputCallback | None, keep: int | None) -> None:
        self._on_output = on_output
        self._keep = keep
        self.keep = keep
        self.dropped = {"stdout": 0, "stderr": 0}  # characters shown live but not kept
        self._selector = selectors.DefaultSelector()
        self._decoders: dict[StreamName, codecs.IncrementalDecoder] = {}
        self._guards = {"stdout": StreamGuard(), "stderr": StreamGuard()}
        self._chunks: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self._kept = {"stdout": 0, "stderr": 0}
        streams: tuple[tuple[StreamName, IO[bytes] | None], ...] = (("stdout", proc.stdout), ("stderr", proc.stderr))
        for name, pipe in streams:
            assert pipe is not None  # both are pipes (_spawn)
            self._decoders[name] = codecs.getincrementaldecoder("utf-8")(errors="replace")
            self._selector.register(pipe, selectors.EVENT_READ, name)

    @property
    def open(self) -> bool:
        """True while either pipe has not reached end of file."""
        return bool(self._selector.get_map())

    def pump(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for output and deliver whatever arrived."""
        for key, _ in self._selector.select(timeout):
            name: StreamName = key.data  # registered with its stream's name
            data = os.read(key.fd, _READ_SIZE)
            if not data:
                self._selector.unregister(key.fileobj)
            self.deliver(name, self._decoders[name].decode(data, final=not data))
            if not data:
                self.flush(name)

    def deliver(self, name: StreamName, text: str) -> None:
        """Record ``text`` on stream ``name`` and pass it on (but a tail that may begin a
        secret, held until :meth:`flush` or more text); empty text is dropped."""
        if not text:
            return
        self._record(name, text)
        self._pass_on(name, self._guards[name].feed(text))

    def _record(self, name: StreamName, text: str) -> None:
        room = len(text) if self._keep is None else self._keep - self._kept[name]
        if room < len(text):
            self.dropped[name] += len(text) - max(room, 0)
            text = text[:max(room, 0)]
        if text:
            self._chunks[name].append(text)
            self._kept[name] += len(text)

    def flush(self, name: StreamName) -> None:
        """Pass on what stream ``name`` still holds."""
        self._pass_on(name, self._guards[name].flush())

    def _pass_on(self, name: StreamName, text: str) -> None:
        if text and self._on_output is not None:
            self._on_output(name, text)

    def text(self, name: str) -> str:
        return "".join(self._chunks[name])

    def close(self) -> None:
        """Stop reading; the pipes are closed with the process (:func:`_reap`)."""
        self._selector.close()


@dataclass
class _Outcome:
    timed_out: bool = False
    stragglers_killed: bool = False


def _supervise(proc: subprocess.Popen[bytes], group: _ProcessGroup, streams: _Streams, timeout_ms: int | None) -> _Outcome:
    """Pump output until the shell has exited and both pipes are closed.

    Kills the group when the timeout passes, and when the shell has exited but
    background processes still hold the pipes after a short grace period.
    """
    outcome = _Outcome()
    deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
    exited_at: float | None = None
    while streams.open or proc.poll() is None:
        tick = _TICK_S
        if deadline is not None and group.terminated_at is None:
            tick = max(0.0, min(_TICK_S, deadline - time.monotonic()))
        if streams.open:
            streams.pump(tick)
        else:
            _wait_briefly(proc, tick)
        now = time.monotonic()
        if deadline is not None and now >= deadline and group.terminated_at is None:
            outcome.timed_out = True
            group.terminate()
        if proc.poll() is not None and streams.open:
            exited_at = exited_at if exited_at is not None else now
            if now - exited_at >= _DRAIN_GRACE_S and group.terminated_at is None:
                outcome.stragglers_killed = True
                group.terminate()
        group.escalate(now)
        if group.killed_at is not None and now - group.killed_at >= _KILL_GRACE_S and proc.poll() is not None:
            break  # what holds the output open left the group (setsid): it is not waited for
    group.finish_kill()
    return outcome


def _wait_briefly(proc: subprocess.Popen[bytes], timeout: float) -> None:
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        pass


def _reap(proc: subprocess.Popen[bytes], group: _ProcessGroup) -> None:
    """Make sure the shell is dead and reaped (it may not be if the loop raised)."""
    if proc.poll() is None:
        group.kill()
        proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def _result(returncode: int | None, streams: _Streams, outcome: _Outcome, timeout_ms: int | None) -> CommandResult:
    if outcome.timed_out:
        streams.deliver("stderr", f"\n[rienda] command timed out after {timeout_ms} ms and was killed\n")
    elif outcome.stragglers_killed:
        streams.deliver(
            "stderr",
            "\n[rienda] background processes kept the command's output open and were killed"
            " (redirect their output, e.g. `cmd > log 2>&1 &`, to keep them running)\n",
        )
    streams.flush("stderr")
    dropped = {name: count for name, count in streams.dropped.items() if count}
    stderr = streams.text("stderr")
    if dropped:
        stderr += "".join(f"\n[rienda] {name} kept its first {streams.keep} characters; {count} more were shown "
                          "as they came but not kept" for name, count in dropped.items()) + "\n"
    return CommandResult(
        code=_exit_code(returncode),
        stdout=streams.text("stdout"),
        stderr=stderr,
        timed_out=outcome.timed_out,
        truncated=bool(dropped),
    )


def _exit_code(returncode: int | None) -> int:
    """Popen's returncode in shell convention: 128 + signal for a killed process."""
    if returncode is None:
        return -1
    return 128 - returncode if returncode < 0 else returncode
