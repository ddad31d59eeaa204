"""One V8 worker process, seen from the host process (this module runs in the host).

A :class:`Worker` is one :mod:`.worker_main` process with two socket pairs: the *data*
channel carries a job, the job's host calls (served here, on the calling thread, by the
job's ``host``; ``ctx.log`` one-way, the others answered) and its result, in order; the
*control* channel only carries ``stop <job>`` to the worker's control thread, so a stop
reaches the worker whatever its job is doing. When a stop does not end the job within
``stop_grace`` seconds, or the caller's thread is interrupted (Ctrl-C), the worker is
killed; when a worker dies mid-job (V8's fatal out-of-memory, a signal), the job fails
with :class:`WorkerDied` saying what killed it. Workers exit when their channels close
(the host process exited, even by SIGKILL) and ignore SIGINT (a terminal's Ctrl-C reaches
the whole process group; the host decides). A worker is reaped the moment it ends, however
it ends (a thread waits on it): an unreaped child is still a child to ipykernel, whose
shutdown waits for its children to be gone. This module never imports V8.
"""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from itertools import count
from pathlib import Path
from typing import IO

from ..cancel import CancelToken
from ..common.json_value import JSON, JSONObject
from ..errors import SandboxError
from .protocol import HostHandler
from .wire import Channel, ChannelClosed, host_reply

__all__ = ["Worker", "WorkerDied"]

_ROOT = str(Path(__file__).resolve().parents[3])
# The worker imports only the bridge's modules: stub packages stand in for rienda_kernel
# and rienda_kernel.engine, so that no package __init__ runs in the worker whatever it
# comes to import.
_BOOT = """\
import sys
from importlib.machinery import ModuleSpec
from importlib.util import module_from_spec
from os.path import join
root = sys.argv[1]
sys.path.insert(0, root)
for name in ("rienda_kernel", "rienda_kernel.engine", "rienda_kernel.engine.sandbox"):
    spec = ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = [join(root, *name.split("."))]
    sys.modules[name] = module_from_spec(spec)
from rienda_kernel.engine.sandbox.worker_main import main
main(sys.argv[2:])
"""
_STDERR_BYTES = 256 * 1024
# What V8, the C++ runtime, glibc or Python print when an allocation fails.
_SILENT_CRASHES = (-signal.SIGABRT, -signal.SIGTRAP, -signal.SIGILL)
_OUT_OF_MEMORY = re.compile(r"out of memory|bad_alloc|MemoryError|Cannot allocate memory|allocation failed", re.I)


def _stderr_file() -> IO[bytes]:
    """A file for a worker's stderr: anonymous memory (``memfd_create``) where the system has
    it, so that a worker starts whatever the temporary folder is (missing, full, unwritable)
    and nothing is left on disk by a host killed mid-start; else an unnamed temporary file."""
    try:
        return os.fdopen(os.memfd_create("rienda-worker-stderr", os.MFD_CLOEXEC), "w+b")
    except (AttributeError, OSError):  # not Linux, or no memfd in this kernel
        import tempfile

        return tempfile.TemporaryFile()


class WorkerDied(Exception):
    """The worker ended mid-job; ``reason`` says how, ``out_of_memory`` whether V8 ran out."""

    def __init__(self, reason: str, out_of_memory: bool = False, stopped: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.out_of_memory = out_of_memory
        self.stopped = stopped


class Worker:
    """One V8 worker process; :meth:`run` one job at a time."""

    def __init__(self, memory_limit: int, stop_grace: float) -> None:
        self.stop_grace = stop_grace
        self.retire = False
        data, data_child = socket.socketpair()
        control, control_child = socket.socketpair()
        self._stderr = _stderr_file()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, _ROOT, str(data_child.fileno()), str(control_child.fileno()),
                 str(memory_limit)],
                pass_fds=(data_child.fileno(), control_child.fileno()),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._stderr, cwd="/",
            )
        except BaseException:
            for closing in (data, control, self._stderr):
                closing.close()
            raise
        finally:
            data_child.close()
            control_child.close()
        self._data = Channel(data)
        self._control = control
        self._jobs = count(1)
        self._killed = False
        self._closed = False
        self._closing = threading.Lock()
        threading.Thread(target=self.process.wait, name="rienda-worker-waiter", daemon=True).start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait_ready(self, timeout: float) -> None:
        """Block until the worker says it is ready; SandboxError (with its stderr) if not."""
        self._data.sock.settimeout(timeout)
        try:
            message = self._data.receive()
        except (ChannelClosed, TimeoutError) as exc:  # from None below: the message says what happened
            said = self._stderr_text()[-2000:].strip()  # before kill(): the reaper closes the file
            try:  # a closed channel is a process ending: let it finish, briefly
                ended = self.process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                ended = None
            how = f"it exited with status {ended}" if ended is not None and ended >= 0 else (
                f"it died of signal {-ended}" if ended is not None else f"no ready message ({exc or 'timed out'})")
            self.kill()  # closes the channel: the timeout is not reset below
            raise SandboxError(f"a V8 worker did not start: {how}" + (f"; it said: {said}" if said else "")) from None
        self._data.sock.settimeout(None)
        if message[0] != "ready":
            self.kill()
            raise SandboxError(f"a V8 worker did not start: it said {message!r}")

    def usable(self) -> bool:
        """Alive, and nothing unread on its channel (an idle worker that died reads as EOF)."""
        if self._killed or self.process.poll() is not None:
            return False
        if self._data.buffered:
            return False
        readable, _, _ = select.select([self._data.sock], [], [], 0)
        return not readable

    # -- one job -------------------------------------------------------------------------
    def run(self, message: Sequence[object], host: HostHandler, cancel: CancelToken,
            deadline: float | None = None,
            on_step: Callable[[list[JSON]], None] | None = None) -> JSONObject:
        """Send ``message`` (a job), serve its host calls, return its reply; a chain job's
        ``step`` messages (one per hook, as each ends) go to ``on_step`` in order.

        ``cancel`` stops the job (the worker terminates its isolate; past the grace, the
        worker is killed); ``deadline`` seconds after the start the worker is killed too.
        Raises :class:`WorkerDied`; any exception on this thread (KeyboardInterrupt) kills
        the worker and propagates.
        """
        job = next(self._jobs)
        guard = _Guard(self, job)
        unregister = cancel.on_cancel(guard.stop)
        if deadline is not None:
            guard.kill_after(deadline, expired=True)
        try:
            self._data.send([message[0], job, *message[1:]])
            while True:
                reply = self._data.receive()
                if reply[0] == "host":
                    self._data.send(["reply", host_reply(host, reply[1], reply[2])])
                elif reply[0] == "note":  # a host call whose answer nobody waits for (ctx.log)
                    host_reply(host, reply[1], reply[2])
                elif reply[0] == "step" and reply[1] == job and on_step is not None:
                    on_step(reply[2:])
                elif reply[0] == "done" and reply[1] == job:
                    done = reply[2]
                    if not isinstance(done, dict):
                        raise SandboxError(f"the V8 worker ended job {job} with {done!r:.80}, not an object")
                    self.retire = bool(done.get("retire"))
                    return done
        except ChannelClosed:  # from None: the worker's death is said by _died
            raise self._died(guard) from None
        except BaseException:
            self.kill()
            raise
        finally:
            unregister()
            guard.disarm()

    def stop(self, job: int) -> None:
        """Ask the worker to terminate ``job``'s isolate (from any thread; never blocks long)."""
        try:
            self._control.send(f"stop {job}\n".encode("ascii"), socket.MSG_DONTWAIT)
        except OSError:
            pass  # the worker is gone or its control buffer is full: the grace kill follows

    def _died(self, guard: _Guard) -> WorkerDied:
        if guard.expired:
            return WorkerDied("did not finish in time and its V8 worker was replaced", stopped=True)
        if guard.stopping:
            return WorkerDied(f"did not stop within {self.stop_grace:g} s and its V8 worker was replaced",
                              stopped=True)
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            return WorkerDied("lost its V8 worker (it stopped answering); it was replaced")
        said = self._stderr_text()
        # V8 aborts (or traps: its immediate crash) silently when it cannot map memory at
        # the bound.
        if _OUT_OF_MEMORY.search(said) or (code in _SILENT_CRASHES and not said):
            return WorkerDied("ran out of memory; its V8 worker was replaced", out_of_memory=True)
        first = next((line.strip() for line in said.splitlines() if line.strip() and line[0] not in " #="), "")
        detail = f" ({first[:200]})" if first else ""
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.valid_signals() else f"signal {-code}"
            return WorkerDied(f"lost its V8 worker, killed by {name}{detail}; it was replaced")
        return WorkerDied(f"lost its V8 worker, which exited with status {code}{detail}; it was replaced")

    def _stderr_text(self) -> str:
        """What the worker wrote to stderr (V8's fatal errors, a failed start), bounded."""
        try:
            self._stderr.seek(0)
            return self._stderr.read(_STDERR_BYTES).decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""

    # -- ending ----------------------------------------------------------------------------
    def kill(self) -> None:
        """End the process now (SIGKILL) and reap it in the background."""
        self._killed = True
        try:
            self.process.kill()
        except OSError:
            pass
        self.close()

    def close(self) -> None:
        """Close the channels (the worker exits on EOF) and reap it in the background; once
        (a kill closes too)."""
        with self._closing:
            if self._closed:
                return
            self._closed = True
        for closing in (self._data.sock, self._control):
            try:
                closing.close()
            except OSError:
                pass
        threading.Thread(target=self._reap, name="rienda-worker-reaper", daemon=True).start()

    def _reap(self) -> None:
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._stderr.close()

    def forget(self) -> None:
        """After fork, in the child: drop the inherited channels, leave the process alone."""
        for closing in (self._data.sock, self._control):
            try:
                closing.close()
            except OSError:
                pass


class _Guard:
    """Stops one job on cancel and kills the worker past the grace (or the deadline)."""

    def __init__(self, worker: Worker, job: int) -> None:
        self._worker = worker
        self._job = job
        self._timers: list[threading.Timer] = []
        self._lock = threading.Lock()
        self._done = False
        self.stopping = False
        self.expired = False

    def stop(self) -> None:
        self.stopping = True
        self._worker.stop(self._job)
        self.kill_after(self._worker.stop_grace)

    def kill_after(self, seconds: float, expired: bool = False) -> None:
        def fire() -> None:
            with self._lock:
                if self._done:
                    return
                self.expired = self.expired or expired
            self._worker.kill()

        timer = threading.Timer(seconds, fire)
        timer.daemon = True
        with self._lock:
            if self._done:
                return
            self._timers.append(timer)
        timer.start()

    def disarm(self) -> None:
        with self._lock:
            self._done = True
            timers, self._timers = self._timers, []
        for timer in timers:
            timer.cancel()
