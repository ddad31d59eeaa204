"""The pool of V8 worker processes, seen from the host process (this module runs in the
host): start, use, stop, replace.

A :class:`WorkerPool` keeps ``spares`` started workers (:class:`.worker_handle.Worker`)
idle beyond those in use, starting them on background threads from the moment the pool is
made, so an invocation never waits for a process to start unless workers are dying faster
than they start. A worker that died, was killed or asked to retire is replaced in the
background; a spare replacing a worker that was taken starts ``spare_delay`` seconds later
(at once if someone waits for it), so that it does not boot on the two cores the job it
was taken for needs, and not at all if that worker came back meanwhile (a short job).
After ``idle_release`` seconds without a job every idle worker is closed and none is kept
until the next :meth:`~WorkerPool.acquire` (which then waits for a worker to start): an
idle process holds no V8 worker's memory, and nothing in it wakes up.
This module never imports V8: the host process does not load it.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import weakref

from ..cancel import CancelToken
from ..errors import SandboxError
from .worker_handle import Worker

__all__ = ["Worker", "WorkerPool"]


class WorkerPool:
    """Started workers ready for jobs; replaces the ones that die or retire.

    :meth:`acquire` returns an idle worker (waiting, interruptibly, for one to start when
    none is idle); :meth:`release` returns it, or retires it when it died, was killed, or
    asked to be replaced (its memory grew). At most ``max_workers`` exist at once.
    """

    def __init__(self, memory_limit: int, spares: int = 1, max_workers: int = 8, stop_grace: float = 0.5,
                 start_timeout: float = 60.0, spare_delay: float = 2.0, idle_release: float | None = 30.0) -> None:
        self.memory_limit = memory_limit
        self.spares = spares
        self.max_workers = max(1, max_workers)
        self.stop_grace = stop_grace
        self.start_timeout = start_timeout
        self.spare_delay = spare_delay
        self._hurry = threading.Event()  # a waiter needs the delayed spare now
        self.started = 0  # workers started so far (a diagnostic for tests and the bench)
        self._idle: list[Worker] = []
        self._busy: set[Worker] = set()
        self._launching: set[Worker] = set()  # started, not yet ready
        self._starting = 0
        self._waiting = 0
        self._failure: str | None = None
        self._closed = False
        self._changed = threading.Condition()
        self.idle_release = idle_release
        self._last_use = time.monotonic()
        self._dormant = False  # quiet for idle_release: no worker is kept until the next acquire
        self._activity = threading.Event()  # there are workers to release when it is quiet
        self._stopping = threading.Event()
        self._releaser: threading.Thread | None = None
        with self._changed:
            self._fill()
        pool = weakref.ref(self)
        atexit.register(_close_if_alive, pool)
        os.register_at_fork(after_in_child=lambda: _forget_if_alive(pool))

    @property
    def idle(self) -> int:
        return len(self._idle)

    @property
    def starting(self) -> int:
        """Workers starting, or waiting ``spare_delay`` to (diagnostics)."""
        return self._starting

    def pids(self) -> tuple[list[int], list[int]]:
        """The process ids of the idle and the busy workers (diagnostics)."""
        with self._changed:
            return [worker.pid for worker in self._idle], [worker.pid for worker in self._busy]

    def acquire(self, cancel: CancelToken) -> Worker:
        """An idle, live worker. Raises SandboxError when workers cannot start, and
        :class:`~..errors.Interrupted` when ``cancel`` is set while waiting."""
        unregister = cancel.on_cancel(self._wake)
        try:
            with self._changed:
                self._waiting += 1
                self._dormant = False
                self._last_use = time.monotonic()
                try:
                    return self._take(cancel)
                finally:
                    self._waiting -= 1
                    self._fill()
        finally:
            unregister()

    def _take(self, cancel: CancelToken) -> Worker:
        while True:
            cancel.raise_if_cancelled()
            if self._closed:
                raise SandboxError("the sandbox is closed")
            while self._idle:
                worker = self._idle.pop()
                if worker.usable():
                    self._busy.add(worker)
                    return worker
                worker.kill()
            if self._failure is not None and self._starting == 0:
                failure, self._failure = self._failure, None
                raise SandboxError(failure)
            self._fill()
            self._changed.wait()

    def wake_up(self) -> None:
        """After a quiet period's release: start the spares now, ahead of the next acquire."""
        with self._changed:
            if self._dormant and not self._closed:
                self._dormant = False
                self._last_use = time.monotonic()
                self._watch_quiet()
                self._hurry.set()
                self._fill()

    def release(self, worker: Worker) -> None:
        with self._changed:
            self._last_use = time.monotonic()
            self._watch_quiet()
            self._busy.discard(worker)
            if not worker.usable():
                worker.kill()
            elif self._closed or worker.retire:
                worker.close()
            else:
                self._idle.append(worker)
            self._fill()
            self._changed.notify_all()

    def close(self) -> None:
        """Close idle workers (they exit); busy ones are closed when released."""
        with self._changed:
            self._closed = True
            self._hurry.set()
            self._stopping.set()
            self._activity.set()
            idle, self._idle = self._idle, []
            launching = list(self._launching)
            self._changed.notify_all()
        for worker in idle:
            worker.close()
        for worker in launching:
            worker.kill()

    # -- starting ----------------------------------------------------------------------
    def _fill(self) -> None:
        """Start workers until ``spares`` are idle or starting, or one per waiter if more
        are waiting. A waiter takes the worker that is starting, and the spare that
        replaces it starts once it did: two workers booting at once on two cores would
        delay the first (a run's first tool call waits for it)."""
        wanted = self._wanted()
        if self._waiting:
            self._hurry.set()
        elif not self._starting:
            self._hurry.clear()
        while (not self._closed and len(self._idle) + self._starting < wanted
               and len(self._idle) + self._starting + len(self._busy) < self.max_workers):
            self._starting += 1
            # The first workers start at once; a spare replacing one that was taken waits
            # ``spare_delay`` (or until someone waits for it), off a burst's two cores.
            delay = self.spare_delay if self.started and not self._waiting else 0.0
            threading.Thread(target=self._start_one, args=(delay,), name="rienda-worker-start", daemon=True).start()

    def _wanted(self) -> int:
        """How many workers should be idle or starting now (holding the lock)."""
        return self._waiting if self._dormant else max(self.spares, self._waiting)

    def _start_one(self, delay: float = 0.0) -> None:
        if delay:
            self._hurry.wait(delay)
            with self._changed:
                # A spare for a worker that came back meanwhile (a short job) is not needed.
                if self._closed or len(self._idle) + self._starting - 1 >= self._wanted():
                    self._starting -= 1
                    self._changed.notify_all()
                    return
        worker = None
        failure = None
        try:
            worker = Worker(self.memory_limit, self.stop_grace)
            with self._changed:
                self._launching.add(worker)
            worker.wait_ready(self.start_timeout)
        except (OSError, SandboxError) as exc:
            failure = str(exc) if isinstance(exc, SandboxError) else f"a V8 worker did not start: {exc}"
        with self._changed:
            self._launching.discard(worker)
            if failure is not None:
                worker = None
            self._starting -= 1
            if worker is not None:
                self.started += 1
                if self._closed:
                    worker.close()
                else:
                    self._idle.insert(0, worker)  # LIFO reuse keeps the busiest worker warm
            else:
                self._failure = failure
            self._changed.notify_all()

    # -- releasing when quiet -------------------------------------------------------------
    def _watch_quiet(self) -> None:
        """Have the releaser watch for ``idle_release`` seconds without a job (holding the lock)."""
        if self.idle_release is None:
            return
        self._activity.set()
        if self._releaser is None:
            self._releaser = threading.Thread(target=self._release_when_quiet, args=(self.idle_release,),
                                              name="rienda-worker-release", daemon=True)
            self._releaser.start()

    def _release_when_quiet(self, idle_release: float) -> None:
        """Closes every idle worker once no job ran for ``idle_release`` seconds, and keeps
        none (no spare) until the next acquire: an idle process holds no V8 worker's
        memory. Wakes once per period while jobs come, never while dormant."""
        while True:
            self._activity.wait()
            with self._changed:
                if self._closed:
                    return
                remaining = self._last_use + idle_release - time.monotonic()
                if remaining <= 0 and not self._busy and not self._waiting:
                    idle, self._idle = self._idle, []
                    self._dormant = True
                    self._activity.clear()
                else:
                    idle = None
            if idle is None:
                self._activity.clear()
                if self._stopping.wait(max(remaining, 0.05)):
                    return
                self._activity.set()
                continue
            for worker in idle:
                worker.close()

    def _wake(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def _forget(self) -> None:
        """In a forked child: the workers belong to the parent; start afresh when needed."""
        for worker in self._idle:
            worker.forget()
        self._idle, self._busy, self._launching, self._starting, self._waiting = [], set(), set(), 0, 0
        self._changed = threading.Condition()


def _close_if_alive(pool: weakref.ref[WorkerPool]) -> None:
    """At exit: close the pool, unless it is gone already."""
    alive = pool()
    if alive is not None:
        alive.close()


def _forget_if_alive(pool: weakref.ref[WorkerPool]) -> None:
    """In a forked child: forget the parent's workers, unless the pool is gone already."""
    alive = pool()
    if alive is not None:
        alive._forget()
