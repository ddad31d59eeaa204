"""Where the notebook tools' code runs, and how a stopped run stops it.

On the notebook's main thread when the front end can hand it jobs there
(:class:`MainThreadRunner`: the magics' pump, the Rienda kernel's event loop), so Ctrl-C
interrupts it exactly as it would a cell; else on a thread of its own (:func:`in_thread`:
a terminal IPython, a replay's fresh namespace), which a stopped run interrupts at its next
bytecode. :class:`CodeRunner` is what a front end holds: the main thread while a turn lends
it, a thread of its own otherwise. Either way the tool's own thread (the run's) only waits,
on the job and on the run's cancel token.
"""

from __future__ import annotations

import contextvars
import ctypes
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Protocol, TypeVar

from ..errors import Interrupted

__all__ = ["STOPPED", "CodeRunner", "MainThreadRunner", "Runner", "ThreadJob", "in_thread", "run_here"]

_T = TypeVar("_T")


class Runner(Protocol):
    """Runs a job where the namespace lives: a Future of the job's result."""

    def __call__(self, job: Callable[[], _T]) -> Future[_T]: ...


STOPPED = "the python code was stopped"


def run_here(job: Callable[[], _T]) -> Future[_T]:
    """Run ``job`` on the calling thread (a namespace nobody else is using)."""
    done: Future[_T] = Future()
    try:
        done.set_result(job())
    except BaseException as exc:  # noqa: BLE001 - the waiter decides what it means
        done.set_exception(exc)
    return done


class ThreadJob(Future[_T]):
    """A job on a thread of its own; :meth:`interrupt` raises KeyboardInterrupt in it."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._thread: int | None = None  # set while the job's code runs

    def run(self, job: Callable[[], _T]) -> None:
        _settle(self, job, self._running)

    def _running(self, now: bool) -> None:
        with self._lock:
            self._thread = threading.get_ident() if now else None

    def interrupt(self) -> None:
        """Raise KeyboardInterrupt in the job's code at its next bytecode (code blocked in
        C, such as ``time.sleep``, stops when that call returns)."""
        with self._lock:
            if self._thread is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread),
                                                           ctypes.py_object(KeyboardInterrupt))


def in_thread(job: Callable[[], _T]) -> ThreadJob[_T]:
    """A runner: ``job`` on a new daemon thread (in a copy of the caller's context, so its
    output goes where the caller's would); a stopped run interrupts it."""
    pending: ThreadJob[_T] = ThreadJob()
    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(pending.run, job), name="rienda-python", daemon=True).start()
    return pending


class MainThreadRunner:
    """A runner that hands each job to ``schedule`` (a front end's way to run a function on
    the thread the namespace lives on: the notebook's main thread), so Ctrl-C's
    KeyboardInterrupt lands in the user's code as it would in a cell. A job stopped that way
    ends its Future with :class:`Interrupted` (the tool, and so the run, ends interrupted);
    the KeyboardInterrupt goes no further. :attr:`busy` says whether a job's code is running
    now (a signal handler may then raise KeyboardInterrupt itself, to stop it); a job whose
    run was stopped before it started never starts.
    """

    def __init__(self, schedule: Callable[[Callable[[], None]], None]) -> None:
        self.schedule = schedule
        self.busy = False

    def __call__(self, job: Callable[[], _T]) -> Future[_T]:
        pending: Future[_T] = Future()
        self.schedule(lambda: self._run(job, pending))
        return pending

    def _run(self, job: Callable[[], _T], pending: Future[_T]) -> None:
        _settle(pending, job, self._running)

    def _running(self, now: bool) -> None:
        self.busy = now


class CodeRunner:
    """Where a front end's notebook tools run their code: on the main thread while a turn
    lends it (:meth:`lent`, with the front end's way to schedule work there), else on a
    thread of its own (:func:`in_thread`). One per front end, given to its namespace."""

    def __init__(self) -> None:
        self._main: MainThreadRunner | None = None

    @contextmanager
    def lent(self, schedule: Callable[[Callable[[], None]], None]) -> Iterator[None]:
        """While the block runs (a turn), jobs go to ``schedule``."""
        self._main = MainThreadRunner(schedule)
        try:
            yield
        finally:
            self._main = None

    @property
    def busy(self) -> bool:
        """Whether the user's code is running on the main thread now (a signal handler
        there may raise KeyboardInterrupt to stop it)."""
        return self._main is not None and self._main.busy

    def __call__(self, job: Callable[[], _T]) -> Future[_T]:
        main = self._main
        return main(job) if main is not None else in_thread(job)


def _settle(pending: Future[_T], job: Callable[[], _T], running: Callable[[bool], None]) -> None:
    """Run ``job`` unless ``pending`` was cancelled, and end ``pending`` with its value, its
    exception, or Interrupted for a KeyboardInterrupt; ``running`` hears when the job's code
    starts and stops."""
    if not pending.set_running_or_notify_cancel():
        return
    try:
        running(True)
        try:
            value = job()
        finally:
            running(False)
    except KeyboardInterrupt:
        pending.set_exception(Interrupted(STOPPED))
    except BaseException as exc:  # noqa: BLE001 - the waiter decides what it means
        pending.set_exception(exc)
    else:
        pending.set_result(value)
