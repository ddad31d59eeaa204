"""What the notebook front ends (the kernel, the magics) add to the session state of
:mod:`rienda_kernel.commands.session`: the IPython shell's namespace as the notebook tools
work in it, the kernel a shell runs in, a ready bundle displayed, a turn that did not end
well as one IPython error line (:class:`TurnFailed`, :class:`TurnInterrupted`, shown the
same in both), the advice of a turn that could not start, and the first turn's imports
warmed on a background thread."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ..engine import NoModelError, PythonNamespace, RiendaError, Runner, RunResult, prewarm

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from .pump import PumpedKernel

__all__ = ["TurnFailed", "TurnInterrupted", "advice", "display_bundle", "notebook_error_line", "prewarm_first_turn",
           "shell_kernel", "shell_namespace", "turn_error"]

# What the first turn with a tool and a confirm imports: jsonschema (1.5 s where
# rfc3987_syntax is installed, as it is beside JupyterLab) and ipywidgets.
FIRST_TURN_IMPORTS = ("jsonschema", "ipywidgets")

def shell_namespace(shell: InteractiveShell, run: Runner) -> PythonNamespace:
    """The user's namespace of an IPython ``shell`` as the notebook tools work in it: its
    ``user_ns``, IPython's own names hidden, code transformed as a cell's is (``%magics``,
    ``!shell``), a last value with a rich form (a table's HTML, a plot) displayed by the
    shell's formatter and display publisher (plain text is in the tool's result already),
    and the ``post_execute`` event after each run (as after a cell); ``run`` says where
    jobs run."""

    def display(value: object) -> None:
        formatter = shell.display_formatter
        if formatter is None:  # IPython makes it with the shell
            return
        data, metadata = formatter.format(value)  # type: ignore[no-untyped-call]  # IPython's format is untyped
        if set(data) - {"text/plain"}:
            shell.display_pub.publish(data=data, metadata=metadata)

    return PythonNamespace(values=shell.user_ns, hidden=shell.user_ns_hidden, transform=shell.transform_cell,
                           display=display, after=lambda: shell.events.trigger("post_execute"), run=run)


def shell_kernel(shell: InteractiveShell) -> PumpedKernel | None:
    """The ipykernel kernel ``shell`` runs in (ipykernel's shell has one); None in a
    terminal IPython."""
    kernel: PumpedKernel | None = getattr(shell, "kernel", None)
    return kernel


def display_bundle(bundle: dict[str, str]) -> None:
    """Display ``bundle`` (MIME type → its form) as it is, in the running cell."""
    from IPython.display import display

    display(bundle, raw=True)  # type: ignore[no-untyped-call]  # IPython's display is untyped


def notebook_error_line(name: str, value: str) -> str:
    """A notebook error as one line (what a person reads instead of a traceback)."""
    return f"\x1b[0;31m{name}\x1b[0m: {value}"


class TurnFailed(RiendaError):
    """A turn that ended with ``error``. IPython shows it as one line (``_render_traceback_``)
    and sends it as an ``error`` message, so batch runners (nbval, papermill) fail the cell."""

    ename = "RiendaError"

    def _render_traceback_(self) -> list[str]:
        return [notebook_error_line(self.ename, str(self))]


class TurnInterrupted(KeyboardInterrupt):
    """A turn stopped by an interrupt; shown as one line, like :class:`TurnFailed`. A
    KeyboardInterrupt (not a RiendaError), so ``except Exception`` does not swallow it."""

    ename = "KeyboardInterrupt"

    def _render_traceback_(self) -> list[str]:
        return [notebook_error_line(self.ename, str(self))]


def turn_error(result: RunResult) -> TurnFailed | TurnInterrupted | None:
    """The error a turn's result stands for, or None when it ended with ``end_turn``."""
    if isinstance(result.failure, NoModelError):
        return TurnFailed("no model for the default agent (the advice is above)")
    if result.reason == "interrupted":
        return TurnInterrupted(f"the turn was interrupted; the session kept what was produced ({result.session_id})")
    if result.reason == "error":
        return TurnFailed(f"the turn failed: {result.error or 'unknown error'}")
    return None


def advice(result: RunResult) -> dict[str, str] | None:
    """What to do about a turn that could not start, as a display bundle (Markdown and
    text), when there is advice to give (no model for the default agent); else None."""
    if isinstance(result.failure, NoModelError):
        return {"text/plain": result.failure.text(), "text/markdown": result.failure.markdown}
    return None


def prewarm_first_turn(modules: tuple[str, ...] = FIRST_TURN_IMPORTS) -> threading.Thread:
    """Import ``modules`` on a background thread, so that the first turn does not wait
    for them (a turn that needs one first waits on Python's import lock instead)."""
    return prewarm(*modules)
