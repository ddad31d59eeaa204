"""A cancellation token shared by everything one run or invocation does.

Stopping is cooperative except for JavaScript: the sandbox registers a callback that
terminates the isolate, and every blocking host call (``ctx.confirm``, ``ctx.system.exec``,
``ctx.http.fetch``, ``ctx.file.*`` and the built-in tools) waits on the token as well as on
its own work; a system call that may block (opening, reading or writing a file) runs on a
thread of its own that an interrupt abandons (:func:`abandon_on_cancel`).

Front ends call :meth:`CancelToken.cancel` at every interrupt (Ctrl-C, the kernel's stop
button, SIGTERM). The first stops the run; the work that must still have its chance after
a stop (``afterRun``, ``afterModelResponse`` reviewing a partial answer) runs under a
token from :meth:`CancelToken.for_wind_down`, which the next interrupt stops.

A result handed from one thread to another is a :class:`concurrent.futures.Future`:
:func:`settle` runs the work into one (on whatever thread runs it), :func:`on_thread`
starts a thread for it, and :func:`wait_for` waits for it, for a token and for a timeout,
whichever comes first. The waiting thread then reads ``future.result()``: the value, or
the exception the work raised, raised again there.
"""

from __future__ import annotations

import os
import queue
import select
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from types import FrameType
from typing import TypeAlias, TypeVar

from .errors import Interrupted

__all__ = ["CancelToken", "abandon_on_cancel", "on_thread", "run_interruptibly", "settle", "signals_wake", "wait_for"]

_T = TypeVar("_T")

# What ``signal.signal`` returns: the handler it replaced (None: one not set from Python).
_Handler: TypeAlias = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


class CancelToken:
    """Set once, from any thread; never reset.

    Callbacks registered with :meth:`on_cancel` run exactly once, on the thread that
    cancels (or at once, if the token is already cancelled). They must not block.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._next_key = 0
        self._interrupts = 0
        self._wind_downs: list[tuple[int, CancelToken]] = []  # (interrupts that stop it, token)

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        """Count one interrupt. The first cancels this token and runs the registered
        callbacks; each one cancels the :meth:`for_wind_down` tokens it is due to stop."""
        with self._lock:
            self._interrupts += 1
            first = not self._event.is_set()
            self._event.set()
            callbacks = list(self._callbacks.values()) if first else []
            self._callbacks.clear()
            due = [token for stops_at, token in self._wind_downs if stops_at <= self._interrupts]
            self._wind_downs = [(n, token) for n, token in self._wind_downs if n > self._interrupts]
        for callback in callbacks:
            callback()
        for token in due:
            token.cancel()

    def for_wind_down(self) -> CancelToken:
        """A token for work that follows a stop and must have its chance: cancelled by the
        next interrupt of this token, and at the latest by the second one.

        Made before any interrupt, the first stops it; made after the first (the run was
        stopped, ``afterRun`` now runs), the second does; made after the second, it is
        cancelled already.
        """
        token = CancelToken()
        with self._lock:
            stops_at = min(self._interrupts + 1, 2)
            if self._interrupts < stops_at:
                self._wind_downs.append((stops_at, token))
                return token
        token.cancel()
        return token

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], object]:
        """Register ``callback``; returns a function that unregisters it (what it returns means nothing)."""
        with self._lock:
            if not self._event.is_set():
                key = self._next_key
                self._next_key += 1
                self._callbacks[key] = callback

                def unregister() -> None:
                    self._callbacks.pop(key, None)

                return unregister
        callback()
        return lambda: None

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` seconds pass; True if cancelled."""
        return self._event.wait(timeout)

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Interrupted("stopped")


def run_interruptibly(work: Callable[[CancelToken], _T], cancel: CancelToken | None = None, *,
                      signals: tuple[int, ...] = (signal.SIGINT,)) -> tuple[_T, int | None]:
    """Run ``work(cancel)`` in a thread while the calling (main) thread waits, so that each
    of ``signals`` that arrives (SIGINT is Ctrl-C; add SIGTERM to treat it alike) cancels the
    token once more instead of abandoning the work; returns (its result, the number of the
    first signal that came, or None). An exception the work raises is raised again here,
    on the calling thread (never lost on the worker thread, never mistaken for a stop).

    On the main thread the signals get handlers that only note them (restored afterwards),
    so no KeyboardInterrupt can land inside ``cancel()``; elsewhere a KeyboardInterrupt
    counts as SIGINT. The calling thread sleeps on a self-pipe that the work's end and each
    signal ring (not on an Event, whose lock a handler could find held, nor on
    ``Thread.join``, which a KeyboardInterrupt can leave with ``is_alive()`` wrongly False),
    which is also the process's signal wakeup fd meanwhile: a signal the system hands to
    another thread (one blocked in a system call) still wakes it.
    """
    cancel = cancel or CancelToken()
    outcome: Future[_T] = Future()
    arrived: list[int] = []
    bell = _Bell()
    outcome.add_done_callback(lambda _: bell.ring())  # on the worker thread, once the outcome is set

    def noted(signum: int, _frame: FrameType | None) -> None:
        arrived.append(signum)
        bell.ring()  # a write to a pipe: no lock a handler could find held

    previous = _handle(signals, noted)
    worker = threading.Thread(target=settle, args=(outcome, lambda: work(cancel)), name="rienda-run", daemon=True)
    worker.start()
    try:
        with signals_wake(bell.fd):
            _wait_for_the_work(bell, outcome, arrived, cancel)
    finally:
        for signum, handler in previous.items():  # None: a handler not set from Python
            signal.signal(signum, signal.default_int_handler if handler is None and signum == signal.SIGINT
                          else signal.SIG_DFL if handler is None else handler)
        if outcome.done():
            worker.join()  # it rang last: the bell may close
            bell.close()
    return outcome.result(), (arrived[0] if arrived else None)


def _wait_for_the_work(bell: _Bell, outcome: Future[_T], arrived: list[int], cancel: CancelToken) -> None:
    """Sleep on ``bell`` until the work is done; each signal noted meanwhile cancels once more."""
    handled = 0
    while not outcome.done() or handled < len(arrived):
        try:
            bell.wait()
        except KeyboardInterrupt:
            arrived.append(signal.SIGINT)
        while handled < len(arrived):
            handled += 1
            cancel.cancel()


@contextmanager
def signals_wake(fd: int | None) -> Iterator[None]:
    """While the block runs on the main thread, every signal, whichever thread the system
    delivers it to, writes a byte to ``fd`` (``signal.set_wakeup_fd``; ``fd`` must not
    block), so a main thread asleep reading ``fd`` wakes and runs the signal's Python
    handler at once. (Python runs handlers only on the main thread, and a signal delivered
    to another thread does not interrupt the main thread's sleep.) Elsewhere, or with no
    ``fd``, the block just runs."""
    if fd is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.set_wakeup_fd(fd, warn_on_full_buffer=False)
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous)


def abandon_on_cancel(work: Callable[[], _T], cancel: CancelToken, what: str) -> _T:
    """``work()`` (a system call that may block: opening a FIFO nobody writes, reading a
    file another process holds a lease on, a hung network file system) on another thread,
    while the calling thread waits for it or for ``cancel``, whichever comes first.

    Returns what ``work`` returns and raises what it raises; when ``cancel`` comes first,
    raises :class:`Interrupted` naming ``what`` at once and leaves the thread to end with
    its system call (nothing waits for it; its result is dropped; a write it was making may
    still complete). The threads are kept for the next call (:class:`_BlockingThreads`):
    handing work to a waiting thread costs far less than starting one.
    """
    cancel.raise_if_cancelled()
    outcome: Future[_T] = Future()
    _BLOCKING.run(lambda: settle(outcome, work))
    if wait_for(outcome, cancel):
        return outcome.result()
    raise Interrupted(f"{what} interrupted")


def settle(future: Future[_T], work: Callable[[], _T]) -> None:
    """Run ``work()`` on this thread and set ``future`` to its outcome: what it returned,
    or what it raised (a BaseException too: a KeyboardInterrupt or SystemExit in the work
    is raised again by ``future.result()`` on the thread that reads it, never lost here).
    Does nothing when ``future`` was cancelled before it started."""
    if not future.set_running_or_notify_cancel():
        return
    try:
        value = work()
    except BaseException as exc:  # noqa: BLE001 - handed to the thread that reads the future, raised there
        future.set_exception(exc)
    else:
        future.set_result(value)


def on_thread(work: Callable[[], _T], *, name: str) -> Future[_T]:
    """``work()`` on a daemon thread of its own, named ``name``: the future of its outcome
    (:func:`settle`)."""
    future: Future[_T] = Future()
    threading.Thread(target=settle, args=(future, work), name=name, daemon=True).start()
    return future


def wait_for(future: Future[_T], cancel: CancelToken | None = None, timeout: float | None = None) -> bool:
    """Block until ``future`` is done, ``cancel`` is set or ``timeout`` seconds pass,
    whichever comes first (no polling); whether ``future`` is done. Cancels nothing: what
    to do with work that is not done is the caller's."""
    if future.done():
        return True
    woken = threading.Event()
    future.add_done_callback(lambda _: woken.set())
    forget = cancel.on_cancel(woken.set) if cancel is not None else None
    try:
        woken.wait(timeout)
    finally:
        if forget is not None:
            forget()
    return future.done()


class _BlockingThreads:
    """Daemon threads for :func:`abandon_on_cancel`'s jobs, kept between calls.

    :meth:`run` hands a job to a thread waiting for one, or starts a thread when none
    waits (every kept thread is busy, or stuck in a system call an interrupt abandoned).
    A thread whose job ended waits for the next one (blocked on a queue: no wake-up while
    nothing happens) unless :data:`KEEP` threads already wait, then it ends. Not
    ``concurrent.futures``' pool: it caps its threads (stuck ones would fill it) and joins
    them at exit (a thread stuck in a FIFO read would hang the process's exit).
    """

    KEEP = 2

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._waiting = 0

    def run(self, job: Callable[[], None]) -> None:
        with self._lock:
            start = self._waiting == 0
            if not start:
                self._waiting -= 1  # this job is that thread's
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._serve, name="rienda-blocking-call", daemon=True).start()

    def _serve(self) -> None:
        while True:
            self._jobs.get()()
            with self._lock:
                if self._waiting >= self.KEEP:
                    return
                self._waiting += 1


_BLOCKING = _BlockingThreads()


class _Bell:
    """A self-pipe: :meth:`ring` from any thread or a signal handler, :meth:`wait` blocks
    (no timeout, no polling) until a ring, which it consumes."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)  # rung by signals too (signals_wake): never blocks
        self.fd = self._write

    def ring(self) -> None:
        try:
            os.write(self._write, b"x")
        except OSError:  # closed, or the pipe is full of rings not yet read: either way it rang
            pass

    def wait(self) -> None:
        select.select([self._read], [], [])
        os.read(self._read, 4096)

    def close(self) -> None:
        os.close(self._read)
        os.close(self._write)


def _handle(signals: tuple[int, ...], handler: Callable[[int, FrameType | None], None]) -> dict[int, _Handler]:
    """Install ``handler`` for ``signals`` when on the main thread; the handlers it replaced."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {signum: signal.signal(signum, handler) for signum in signals}
