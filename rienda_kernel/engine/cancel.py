"""A cancellation token shared by everything one run or invocation does.

Stopping is cooperative except for JavaScript: the sandbox registers a callback that
terminates the isolate, and every blocking host call (``ctx.confirm``, ``ctx.system.exec``,
``ctx.http.fetch``) waits on the token as well as on its own work.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any

from .errors import Interrupted

__all__ = ["CancelToken", "run_interruptibly"]


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

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        """Cancel and run the registered callbacks; a second call does nothing."""
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Register ``callback``; returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                key = self._next_key
                self._next_key += 1
                self._callbacks[key] = callback
                return lambda: self._callbacks.pop(key, None)
        callback()
        return lambda: None

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` seconds pass; True if cancelled."""
        return self._event.wait(timeout)

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Interrupted("stopped")


def run_interruptibly(work: Callable[[CancelToken], Any], cancel: CancelToken | None = None) -> tuple[Any, bool]:
    """Run ``work(cancel)`` in a thread while the calling thread waits, so Ctrl-C cancels
    it instead of abandoning it; returns (its result, whether Ctrl-C came).

    On the main thread, SIGINT is handled by a handler that cancels the token, installed
    for the whole call: a KeyboardInterrupt could land on any bytecode (inside
    ``Thread.start``, on the wait loop's jump) where no ``except`` would catch it. Elsewhere
    (no signal reaches another thread) it simply waits.
    """
    cancel = cancel or CancelToken()
    box: dict[str, Any] = {}
    done = threading.Event()
    interrupted = threading.Event()

    def target() -> None:
        try:
            box["value"] = work(cancel)
        finally:
            done.set()

    def on_sigint(signum: int, frame: Any) -> None:
        interrupted.set()
        cancel.cancel()

    on_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, on_sigint) if on_main else None
    try:
        threading.Thread(target=target, name="rienda-run", daemon=True).start()
        while not done.wait(0.1):  # a timeout, so the handler runs soon after the signal
            pass
    finally:
        if on_main:  # None: a handler not set from Python; Python's own is the fallback
            signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)
    return box.get("value"), interrupted.is_set()
