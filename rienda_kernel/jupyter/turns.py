"""One turn for one cell, the same way in the Rienda kernel and in the magics.

A :class:`TurnDriver` holds what a notebook keeps between cells besides the session
(diagnostics already shown, which clients render widgets, where the notebook tools' code
runs) and does what both front ends do around a turn:

- :meth:`ui`: the cell's :class:`~.display.NotebookUI`, with the turn's confirm policy;
- :meth:`stopping`: SIGTERM (and, where the front end asks, SIGINT) during the turn cancel
  it from outside the signal handler (the handler may have interrupted a lock holder),
  raise KeyboardInterrupt into the ``python`` tool's code when it is what runs, and, once
  the turn has ended, terminate the process as SIGTERM asked;
- :meth:`one_turn`: no turn starts while another runs (the ``python`` tool's code cannot
  start one);
- :meth:`ending`: what a finished turn shows besides its display: advice (no model for
  the default agent) and the one-line error (failed, interrupted);
- :meth:`save_extension`: a ``%%rienda_tool`` / ``%%rienda_hook`` cell.

What differs stays in each front end: how a cell's text arrives and how output leaves
(the kernel sends messages from its event loop; the magics print and display from the
main thread, which a pump keeps serving the kernel).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from ..engine import CancelToken, CodeRunner, RiendaError, RunResult, signals_wake
from .cell import CellTarget
from .confirm import ClientViews
from .display import NotebookUI
from ..commands.session import TurnSession
from .notebook import TurnFailed, TurnInterrupted, advice, turn_error

__all__ = ["EXTENSION_CELLS", "TurnDriver"]

# The cell magics that save an extension, and the home folder each writes to.
EXTENSION_CELLS = {"rienda_tool": "tools", "rienda_hook": "hooks"}


class TurnDriver:
    """What the kernel and the magics share to run turns (see the module docstring)."""

    def __init__(self) -> None:
        self.seen_diagnostics: set[str] = set()
        self.client_views = ClientViews()
        self.code = CodeRunner()  # where the notebook tools' code runs
        self._running = False

    def ui(self, notebook: TurnSession, target: CellTarget) -> NotebookUI:
        """The cell's display of a turn, with the notebook's confirm policy for it."""
        return NotebookUI(target, notebook.turn_policy(), self.seen_diagnostics, self.client_views)

    @contextmanager
    def one_turn(self, busy: type[Exception] = RiendaError) -> Iterator[None]:
        """Around a turn: ``busy`` (an exception type) when one is already running here."""
        if self._running:
            raise busy("a turn is already running in this kernel: the python tool's code cannot start another")
        self._running = True
        try:
            yield
        finally:
            self._running = False

    @contextmanager
    def stopping(self, cancel: CancelToken, signals: tuple[int, ...] = (signal.SIGTERM,),
                 schedule: Callable[[Callable[[], None]], object] | None = None,
                 before_terminating: Callable[[], None] | None = None) -> Iterator[int | None]:
        """While the block runs (a turn), each of ``signals`` cancels it: ``schedule``
        (default: a thread of its own) runs ``cancel.cancel`` outside the handler. After
        the block, a SIGTERM received meanwhile terminates the process as asked, once
        ``before_terminating`` (closing the notebook's MCP servers) has run. Off the main
        thread (where no handler can be set) the block just runs.

        The block gets a file descriptor that becomes readable at every signal, whichever
        thread the system delivered it to (:func:`signals_wake`): the front end's main
        thread must wake on it (a signal delivered to another thread does not interrupt
        its sleep, and Python runs the handler only there), and read it empty."""
        if threading.current_thread() is not threading.main_thread():
            yield None
            return
        run_later = schedule or _on_a_thread
        terminated: list[int] = []

        def stop(signum: int, _frame: FrameType | None) -> None:
            if signum == signal.SIGTERM:
                terminated.append(signum)
            run_later(cancel.cancel)
            if self.code.busy:  # the python tool's code is what runs here: stop it too
                raise KeyboardInterrupt

        previous = {signum: signal.signal(signum, stop) for signum in signals}
        woken, wake = os.pipe()
        for fd in (woken, wake):
            os.set_blocking(fd, False)
        try:
            with signals_wake(wake):
                yield woken
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            os.close(woken)
            os.close(wake)
        if terminated:
            if before_terminating is not None:
                before_terminating()
            os.kill(os.getpid(), signal.SIGTERM)  # the turn has ended; now terminate as asked

    @staticmethod
    def ending(result: RunResult, interrupted: bool = False) -> tuple[dict[str, str] | None,
                                                                      TurnFailed | TurnInterrupted | None]:
        """The advice to display (or None) and the error the cell ends with (or None):
        ``interrupted`` says the front end saw an interrupt even if the run ended well."""
        error = turn_error(result)
        if interrupted and error is None:
            error = TurnInterrupted(f"the turn was interrupted; the session kept what was produced "
                                    f"({result.session_id})")
        return advice(result), error

    @staticmethod
    def save_extension(notebook: TurnSession, kind: str, name: str, source: str,
                       write: Callable[[str, str], None]) -> None:
        """Save and load one extension cell; ``write(stream, text)`` shows what the loader
        said (``stderr``) and the one-line summary (``stdout``)."""
        saved = notebook.save_extension(kind, name, source)
        for problem in saved.problems:
            write("stderr", f"⚠ {problem}\n")
        if saved.summary:
            write("stdout", saved.summary + "\n")


def _on_a_thread(job: Callable[[], None]) -> None:
    threading.Thread(target=job, name="rienda-stop", daemon=True).start()
