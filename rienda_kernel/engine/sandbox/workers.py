"""The product's sandbox: every invocation in a V8 worker process.

:class:`Sandbox` keeps the contracts of the sandbox protocol (:mod:`.protocol`) by sending
each ``inspect``, ``call`` and ``call_chain`` as one job to a worker of its
:class:`.pool.WorkerPool`; a worker that dies (a fatal V8 out-of-memory, a signal) fails
that invocation only. :func:`shared_sandbox` is the one sandbox of a process, made on first
use. This module runs in the host process only; it never imports V8.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from ..cancel import CancelToken
from ..common.json_value import JSON, JSONObject
from ..errors import ExtensionError, Interrupted, OutOfMemory, SandboxError
from .chain import ChainRule, HookSource, Outcome, Progress
from .protocol import DEFAULT_MEMORY_LIMIT, Export, HostHandler, JSValue
from .wire import decode_error, decode_outcome
from .worker_handle import WorkerDied

if TYPE_CHECKING:
    from .pool import WorkerPool

__all__ = ["Sandbox", "shared_sandbox", "warm_shared_sandbox"]


class Sandbox:
    """Runs extension code in V8 worker processes; the host process never loads V8.

    ``memory_limit`` bounds what one invocation may allocate, all kinds together (the
    worker process's growth). ``spares`` workers are kept started beyond those in use
    (the first ones start, in the background, when the sandbox is made); a stop that
    does not end an invocation within ``stop_grace`` seconds kills its worker. After
    ``idle_release`` seconds without an invocation the workers exit (None: never), and the
    next invocation waits for one to start.
    """

    def __init__(self, memory_limit: int = DEFAULT_MEMORY_LIMIT, spares: int = 1, max_workers: int = 8,
                 stop_grace: float = 0.5, idle_release: float | None = 30.0) -> None:
        # Imported here: a run without JavaScript never makes a sandbox and does not load
        # the pool (tests/test_startup.py).
        from .pool import WorkerPool

        self.memory_limit = memory_limit
        self.stop_grace = stop_grace
        self._pool = WorkerPool(memory_limit, spares=spares, max_workers=max_workers, stop_grace=stop_grace,
                                idle_release=idle_release)
        self.jobs = 0  # jobs sent to workers so far (a diagnostic for tests and the bench)

    @property
    def pool(self) -> WorkerPool:
        """The :class:`.pool.WorkerPool` (diagnostics: tests and the bench)."""
        return self._pool

    def prepare(self) -> None:
        """JavaScript will run soon: start a worker now if a quiet period released them."""
        self._pool.wake_up()

    def inspect(self, path: str, source: str, *, timeout: float | None = None,
                cancel: CancelToken | None = None) -> tuple[list[Export], JSONObject]:
        cancel = cancel or CancelToken()
        deadline = None if timeout is None else timeout + self.stop_grace
        try:
            reply = self._run(["inspect", path, source, timeout], _no_host, cancel, deadline)
        except _Died as died:  # from None: the message says how the worker died
            if died.cause.stopped and cancel.cancelled:
                raise Interrupted(f"{path}: loading was stopped") from None
            if died.cause.stopped:
                raise ExtensionError(f"{path}: did not finish loading within {timeout:g} s", path=path) from None
            what = "ran out of memory while loading" if died.cause.out_of_memory else died.cause.reason
            raise ExtensionError(f"{path}: {what}", path=path) from None
        except Interrupted:  # from None: the message below says it again, with the file
            raise Interrupted(f"{path}: loading was stopped") from None
        except SandboxError as exc:  # from None: the message below says it again, with the file
            raise ExtensionError(f"{path}: {exc}", path=path) from None
        return [Export(name, kind) for name, kind in reply["exports"]], reply["values"]

    def call(self, path: str, source: str, export: str, payload: list[JSON], host: HostHandler,
             cancel: CancelToken, frozen: Sequence[tuple[int, str]] = ()) -> JSValue:
        cancel.raise_if_cancelled()
        message = ["call", path, source, export, json.dumps(payload), [list(f) for f in frozen]]
        try:
            reply = self._run(message, host, cancel, None)
        except _Died as died:  # from None: the message says how the worker died
            if died.cause.stopped or cancel.cancelled:
                raise Interrupted(f"{path}: {export} was stopped") from None
            kind = OutOfMemory if died.cause.out_of_memory else SandboxError
            raise kind(f"{path}: {export} {died.cause.reason}") from None
        except Interrupted:  # from None: the message below says it again, with the file
            raise Interrupted(f"{path}: {export} was stopped") from None
        kind, value = reply["value"]
        return JSValue(kind, value)

    def call_chain(self, links: Sequence[HookSource], export: str, payload: list[JSON], rule: ChainRule,
                   host_for: Callable[[int], HostHandler], cancel: CancelToken,
                   frozen: Sequence[tuple[int, str]] = (),
                   on_step: Callable[[int, Outcome], None] = lambda index, outcome: None) -> None:
        """One point's chain as one worker job (see the module's contracts). A worker that
        dies mid-chain fails only the hook it was running; the hooks after it run in
        another worker, from the input the hooks before it left (none when that hook was
        fail-closed: its failure refused the call)."""
        progress = Progress(rule, payload)
        start = 0
        while start < len(links):
            cancel.raise_if_cancelled()
            hosts: dict[int, HostHandler] = {}
            at = [start]  # the hook running now: host calls are its own

            def host(op: str, args: JSON) -> object:
                if at[0] not in hosts:
                    hosts[at[0]] = host_for(at[0])
                return hosts[at[0]](op, args)

            def step(message: list[JSON]) -> None:
                index, outcome = start + message[0], decode_outcome(message[1])
                at[0] = index + 1
                on_step(index, outcome)
                if progress.after(index, outcome):
                    at[0] = len(links)  # refused: nothing more runs

            job = ["chain", [list(link) for link in links[start:]], export, json.dumps(progress.payload),
                   rule.from_link(start).to_wire(), [list(f) for f in frozen]]
            try:
                self._run(job, host, cancel, None, step)
                return
            except Interrupted:  # from None: the message below says it again, with the file
                raise Interrupted(f"{links[min(at[0], len(links) - 1)][0]}: {export} was stopped") from None
            except _Died as died:  # from None: the message says how the worker died
                if at[0] >= len(links):  # it died after the last hook's outcome came
                    return
                if died.cause.stopped or cancel.cancelled:
                    raise Interrupted(f"{links[at[0]][0]}: {export} was stopped") from None
                failed = OutOfMemory if died.cause.out_of_memory else SandboxError
                outcome = failed(f"{links[at[0]][0]}: {export} {died.cause.reason}")
                on_step(at[0], outcome)
                if progress.after(at[0], outcome):
                    return  # a fail-closed hook's worker died: the call is refused, nothing more runs
                start = at[0] + 1

    def _run(self, message: Sequence[object], host: HostHandler, cancel: CancelToken,
             deadline: float | None, on_step: Callable[[list[JSON]], None] | None = None) -> JSONObject:
        worker = self._pool.acquire(cancel)
        self.jobs += 1
        try:
            reply = worker.run(message, host, cancel, deadline, on_step)
        except WorkerDied as exc:  # from None: _Died carries it
            raise _Died(exc) from None
        finally:
            self._pool.release(worker)
        # Whatever came back, a stopped job was stopped (a host call may have answered
        # "Interrupted" before the worker terminated the isolate).
        cancel.raise_if_cancelled()
        if "error" in reply:
            raise decode_error(reply["error"])
        return reply

    def close(self) -> None:
        """Let the workers exit (idle ones now, busy ones when their invocation ends)."""
        self._pool.close()


_SHARED: Sandbox | None = None
_SHARED_LOCK = threading.Lock()


def shared_sandbox() -> Sandbox:
    """One sandbox (one pool of V8 worker processes) per process, made on first use; its
    first worker starts in the background at once (a front end that knows it will run
    JavaScript calls this first, so the worker starts while the rest imports)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = Sandbox()
        return _SHARED


def warm_shared_sandbox(home: Path) -> bool:
    """Make the :func:`shared_sandbox` now, so its first worker boots in the background,
    when the Rienda home ``home`` holds a JavaScript tool or hook; a home without any
    never starts one, nor one that cannot be read (the run says why, in its own words).
    True when it was started (or was running already)."""
    try:
        wanted = any(next(iter((home / kind).glob("*/index.js")), None) for kind in ("tools", "hooks"))
    except OSError:
        return False
    if wanted:
        shared_sandbox()
    return wanted


class _Died(Exception):
    def __init__(self, cause: WorkerDied) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _no_host(op: str, args: JSON) -> NoReturn:
    raise RuntimeError(f"ctx is not available while the module loads ({op})")
