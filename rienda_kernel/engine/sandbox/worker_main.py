"""A V8 worker process's main (this module runs in each worker process): runs the host
process's invocations; may die, is replaced.

Started by :mod:`.worker_handle` as ``python -c <boot> ROOT DATA_FD CONTROL_FD MEMORY_LIMIT``.
It runs each job on an :class:`~.inprocess.InProcessSandbox` and forwards every host
call to the host process over the data channel, blocking for the reply. A control
thread reads ``stop <job>`` lines and terminates that job's isolate; a host call's reply
that says the run was stopped does the same (it can overtake the stop: the channels are
two). EOF on either channel (the host process is gone) ends the process at once.

Memory: while a job runs, the process may grow at most ``MEMORY_LIMIT`` bytes (plus
:data:`SLACK` for isolates the pool prepares meanwhile and for messages) above its size
when the job started: ``RLIMIT_DATA`` bounds private writable memory, which V8's heap,
array buffers and strings all come from (not virtual address space, of which V8 reserves
terabytes). V8's own heap limit is half of ``MEMORY_LIMIT``, so a heap that grows is
stopped gracefully (``OutOfMemory``) before the process bound; an allocation past the
bound (a huge typed array or string) is fatal to V8 and ends the process, which the host
reports as out of memory. Between jobs no extension code runs and the bound is lifted
(the pool prepares isolates then). A worker whose resident memory did not shrink back to
within half of ``MEMORY_LIMIT`` of its size at start asks to be replaced.

SIGINT is ignored: a terminal's Ctrl-C reaches the whole process group, and the host
process decides what stops.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import sys
import threading

from ..cancel import CancelToken
from ..common.json_value import JSON, JSONObject
from .chain import ChainRule, HookSource, Outcome, run_chain
from .inprocess import InProcessSandbox
from .protocol import JSValue
from .wire import Channel, ChannelClosed, HostReplyError, RawReply, encode_error, encode_outcome, says_stopped

__all__ = ["main"]

# Room for what a job may commit besides its invocation: the pool prepares at most two
# isolates during a job (its low-water mark; each commits under 12 MiB of private memory),
# plus room for messages.
SLACK = 2 * 12 * 1024 * 1024 + 32 * 1024 * 1024
_PAGE = os.sysconf("SC_PAGE_SIZE")
ONE_WAY = frozenset({"log"})
_NOTHING = RawReply('{"value":null}')


class _Statm:
    """``/proc/self/statm``, opened once: each ``pread`` at offset 0 reads it anew (read
    twice per job, which costs less than opening, reading and closing it each time)."""

    fd: int | None = None


def memory() -> tuple[int, int]:
    """(private writable bytes, what RLIMIT_DATA bounds; resident bytes) of this process."""
    if _Statm.fd is None:
        _Statm.fd = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
    fields = os.pread(_Statm.fd, 256, 0).split()
    return int(fields[5]) * _PAGE, int(fields[1]) * _PAGE


class _Bounded:
    """RLIMIT_DATA at the current size plus ``allowance`` while the ``with`` block runs."""

    def __init__(self, allowance: int) -> None:
        self.allowance = allowance
        self.soft, self.hard = resource.getrlimit(resource.RLIMIT_DATA)

    def __enter__(self) -> None:
        limit = memory()[0] + self.allowance
        if self.hard != resource.RLIM_INFINITY:
            limit = min(limit, self.hard)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, self.hard))

    def __exit__(self, *exc: object) -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (self.soft, self.hard))


class WorkerLoop:
    """Serves jobs from the data channel until it closes."""

    def __init__(self, data: Channel, control: socket.socket, memory_limit: int) -> None:
        self._data = data
        self._control = control
        self._current: tuple[int, CancelToken] | None = None
        self._last_job = 0
        self._early_stop = 0  # a stop that came before its job (the control channel is faster)
        self._lock = threading.Lock()
        self._held: list[object] = []  # messages that go out with the job's "done"
        self._sandbox = InProcessSandbox(memory_limit, heap_limit=memory_limit // 2)
        self._sandbox.warm()
        self._bounded = _Bounded(memory_limit + SLACK)
        self._retire_above = memory()[1] + memory_limit // 2

    def serve(self) -> None:
        threading.Thread(target=self._watch_control, name="rienda-worker-control", daemon=True).start()
        self._data.send(["ready", {"pid": os.getpid()}])
        while True:
            try:
                message = self._data.receive()
            except ChannelClosed:
                os._exit(0)
            kind, job = message[0], message[1]
            token = CancelToken()
            self._held = []
            with self._lock:
                self._current, self._last_job = (job, token), job
                if self._early_stop == job:
                    token.cancel()
            try:
                with self._sandbox.paused():
                    reply = self._run(kind, job, message[2:], token)
            except BaseException as exc:  # noqa: BLE001 - every failure is the job's reply
                reply = {"error": encode_error(exc)}
            finally:
                with self._lock:
                    self._current = None
            reply["retire"] = memory()[1] > self._retire_above
            self._send(*self._held, ["done", job, reply])

    def _run(self, kind: str, job: int, fields: list[JSON], token: CancelToken) -> JSONObject:
        """One job; each invocation under the memory bound (one per hook of a chain)."""
        if kind == "inspect":
            path, source, timeout = fields
            with self._bounded:
                exports, values = self._sandbox.inspect(path, source, timeout=timeout, cancel=token)
            return {"exports": [[e.name, e.kind] for e in exports], "values": values}
        if kind == "chain":
            links, export, payload, rule, frozen = fields
            frozen = [tuple(f) for f in frozen]

            def call_one(index: int, link: HookSource, args: list[JSON]) -> JSValue:
                with self._bounded:
                    return self._sandbox.call_json(link[0], link[1], export, json.dumps(args), self._forward,
                                                   token, frozen)

            def on_step(index: int, outcome: Outcome) -> None:
                step = ["step", job, index, encode_outcome(outcome)]
                if index == len(links) - 1:
                    self._held = [step]  # the last: it goes with "done", in one write
                else:
                    self._send(step)

            run_chain([tuple(link) for link in links], json.loads(payload), ChainRule.from_wire(rule),
                      call_one, on_step)
            return {}
        path, source, export, payload, frozen = fields
        with self._bounded:
            value = self._sandbox.call_json(path, source, export, payload, self._forward, token,
                                            [tuple(f) for f in frozen])
        return {"value": [value.kind, value.value]}

    def _forward(self, op: str, args: JSON) -> RawReply:
        """One host call, answered by the host process (runs on the isolate's thread).
        ``ctx.log`` (and console) returns nothing: it is sent without waiting for an answer,
        in order with everything else."""
        if op in ONE_WAY:
            self._send(["note", op, args])
            return _NOTHING
        self._send(["host", op, args])
        try:
            reply = self._data.receive()
        except ChannelClosed:
            os._exit(0)
        if reply[0] != "reply":
            raise HostReplyError("SandboxError", f"the host process sent {reply[0]!r} instead of a reply")
        answer = RawReply(reply[1])
        if says_stopped(answer):  # the run was stopped: the job ends here, not at the next hook
            with self._lock:
                current = self._current
            if current is not None:
                current[1].cancel()
        return answer

    def _send(self, *messages: object) -> None:
        try:
            self._data.send_all(list(messages))
        except ChannelClosed:
            os._exit(0)

    def _watch_control(self) -> None:
        pending = b""
        while True:
            try:
                chunk = self._control.recv(256)
            except OSError:
                chunk = b""
            if not chunk:
                os._exit(0)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self._stop(line)

    def _stop(self, line: bytes) -> None:
        """``stop <job>``: cancel that job, now or when it starts (a stop sent just after
        its job can overtake it: they travel on different channels)."""
        verb, _, text = line.decode("ascii", "replace").partition(" ")
        if verb != "stop" or not text.isdigit():
            return
        job = int(text)
        with self._lock:
            current = self._current
            if (current is None or current[0] != job) and job > self._last_job:
                self._early_stop = job
                return
        if current is not None and current[0] == job:
            current[1].cancel()


def main(argv: list[str]) -> None:
    """Entry point: ``DATA_FD CONTROL_FD MEMORY_LIMIT``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    data_fd, control_fd, memory_limit = (int(value) for value in argv)
    data = Channel(socket.socket(fileno=data_fd))
    control = socket.socket(fileno=control_fd)
    try:
        loop = WorkerLoop(data, control, memory_limit)
    except Exception as exc:  # noqa: BLE001 - reported to the host, which shows it
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        os._exit(1)
    loop.serve()
