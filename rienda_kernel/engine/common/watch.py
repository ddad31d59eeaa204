"""A notice when what a person waits on has not returned within a moment.

A hook that never returns (``while (true) {}``) used to leave a run silent: the terminal's
last line was the model's text, and nothing said what the run waited on. A :class:`Watch`
is armed with a ``notice`` when the wait starts; if it is not disarmed (or armed again,
for the next thing waited on) within :data:`NOTICE_AFTER_S` seconds, ``notice`` is called
once, on the watch's thread, and the front end says what is running.

Contracts:
- :data:`NOTICE_AFTER_S` (2 seconds) is long enough that a hook or a server doing its work
  is never announced, short enough that a person who sees nothing happen is told why
  before wondering.
- The thread is not a daemon and never outlives the watch: :meth:`Watch.close` (the end of
  its ``with`` block) ends it and waits for it, so no thread is left behind at exit (a
  daemon thread still running when the interpreter finalizes can kill the process: see
  :mod:`.background`). It starts with the first :meth:`Watch.arm`.
- A notice is never late: ``notice`` runs under the watch's lock, and :meth:`Watch.arm`,
  :meth:`Watch.disarm` and :meth:`Watch.close` take it, so once one of them returns, the
  notice of what was armed before it has been said or never will be. ``notice`` must not
  raise and must return soon (it is an event sink's ``emit``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

__all__ = ["NOTICE_AFTER_S", "Watch"]

NOTICE_AFTER_S = 2.0


class Watch:
    """One wait after another (see the module's contracts), each said once by its
    ``notice`` when it lasts ``after`` seconds (default :data:`NOTICE_AFTER_S`)."""

    def __init__(self, after: float | None = None, name: str = "rienda-watch") -> None:
        self.after = NOTICE_AFTER_S if after is None else after  # read now: a test may set it shorter
        self._name = name
        self._lock = threading.Condition()
        self._notice: Callable[[], None] | None = None
        self._deadline = 0.0
        self._closed = False
        self._thread: threading.Thread | None = None

    def arm(self, notice: Callable[[], None]) -> None:
        """Start watching a wait: ``notice`` is called once if the watch is neither armed
        again nor disarmed within ``after`` seconds. Replaces what was armed before."""
        with self._lock:
            if self._closed:
                return
            idle = self._notice is None
            self._notice, self._deadline = notice, time.monotonic() + self.after
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=False)
                self._thread.start()
            elif idle:  # a thread waiting on a deadline wakes by itself before this later one
                self._lock.notify()

    def disarm(self) -> None:
        """The wait is over: its notice, if not said yet, never will be (the thread, woken
        at the deadline it waits on, finds nothing armed)."""
        with self._lock:
            self._notice = None

    def close(self) -> None:
        """Disarm, end the thread and wait for it."""
        with self._lock:
            self._notice, self._closed = None, True
            self._lock.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def _run(self) -> None:
        with self._lock:
            while not self._closed:
                if self._notice is None:
                    self._lock.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._lock.wait(left)
                    continue
                notice, self._notice = self._notice, None
                try:
                    notice()
                except Exception:  # noqa: BLE001 - a notice that failed is not said; the watch goes on
                    pass
