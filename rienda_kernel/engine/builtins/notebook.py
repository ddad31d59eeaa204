"""The notebook tools: ``python`` and ``variables``, over a live Python namespace.

They exist only where a front end has a namespace to offer (the ``%rienda`` magics in an
IPython kernel, the Rienda kernel's own shell, a replay with ``--run-tools`` in a fresh
namespace): the front end builds a :class:`PythonNamespace` and hands
:func:`notebook_tools` to its :class:`~..runtime.rienda.Rienda`. They are ordinary built-in tools
from then on: an agent must declare them, hooks see and may refuse or rewrite every call,
results are capped and saved like any other.

- ``python`` runs ``code`` in the namespace the way a notebook cell would (IPython's own
  transformations first, when the front end gives them), so it reads and creates the
  user's variables; it returns what a person would have seen: what the code printed to
  stdout and stderr, then the last expression's value as text (its rich display also goes
  to the front end). An exception is an error result with the exception and the last
  frames of the user's code, never a crashed front end. The code does not enter the
  notebook's history (no ``In``/``Out``, no execution count).
- ``variables`` lists the user's variables (name, type, a one-line summary), without
  IPython's internals, modules or private names; ``name`` gives one variable's fuller
  summary. Large values are summarized, never dumped.

Where the code runs (the namespace's ``run``) is :mod:`.code_runner`'s; the ``variables``
text is :mod:`.variables`'.

Imports nothing from IPython: what IPython adds comes in through :class:`PythonNamespace`.
"""

from __future__ import annotations

import ast
import io
import itertools
import linecache
import sys
import threading
import traceback
import types
from collections.abc import Callable, Collection
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TextIO, TypeVar

from . import NOTEBOOK_TOOL_NAMES, WHERE_THEY_EXIST
from .code_runner import STOPPED, Runner, ThreadJob, run_here
from ..tools.model import BuiltinHost, BuiltinTool
from .variables import describe_variables
from ..errors import Interrupted

__all__ = ["NOTEBOOK_TOOL_NAMES", "WHERE_THEY_EXIST", "PythonNamespace", "execute", "notebook_tools", "with_error"]

_RUNS = itertools.count(1)  # each run's code has a file name of its own, for tracebacks
_DETAIL = 4000  # characters of a value's fuller summary
_FRAMES = 5  # the last frames of a traceback shown to the model
_HIDDEN = frozenset({"In", "Out", "get_ipython", "exit", "quit", "open"})
_WIND_DOWN = 2.0  # seconds an interrupted job gets to unwind (its output so far kept) before the tool gives up
_T = TypeVar("_T")


@dataclass
class PythonNamespace:
    """A namespace the tools work in, and how its front end runs code there.

    ``values`` is the namespace (IPython's ``user_ns``); ``hidden`` names it holds that are
    not the user's (``user_ns_hidden``); ``transform`` turns cell text into Python (IPython's
    ``transform_cell``: ``%magics``, ``!shell``); ``display`` shows the last value in the
    front end (IPython's display, for values with a rich form); ``after`` runs once the code has run, as after a
    cell (IPython's ``post_execute`` event, when matplotlib's inline backend shows new
    figures); ``run`` runs a job where the namespace lives (the notebook's main thread) and
    returns a Future of its result, so the tool's thread can wait on it and on the cancel
    token at once.
    """

    values: dict[str, object] = field(default_factory=dict)
    hidden: Collection[str] = ()
    transform: Callable[[str], str] = str
    display: Callable[[object], None] | None = None
    after: Callable[[], None] | None = None
    run: Runner = run_here

    def user_names(self) -> list[str]:
        """The user's variables, sorted: no private names, IPython internals, modules, or
        functions and classes imported from elsewhere (``from pathlib import Path``); those
        the notebook defines are the user's."""
        hidden = set(self.hidden) | _HIDDEN
        return sorted(name for name, value in list(self.values.items())
                      if not name.startswith("_") and name not in hidden and not _imported(value))


def _imported(value: object) -> bool:
    """A module, or a function or class defined in one (not in the notebook's ``__main__``)."""
    if isinstance(value, types.ModuleType):
        return True
    if isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
        return getattr(value, "__module__", None) not in (None, "__main__")  # None: made by exec without a name
    return False


def notebook_tools(namespace: PythonNamespace) -> dict[str, BuiltinTool]:
    """``python`` and ``variables`` bound to ``namespace``, to hand to ``Rienda(extra_tools=...)``."""
    return {
        "python": BuiltinTool(
            name="python",
            description=("Run Python code in the user's notebook namespace, as a notebook cell would: it can read "
                         "and create the user's variables. Returns what the code printed, then the value of its "
                         "last expression. Prefer short, read-only inspection; say what you will change first."),
            parameters={"type": "object", "properties": {
                "code": {"type": "string", "description": "The Python code (a notebook cell's worth)."}},
                "required": ["code"], "additionalProperties": False},
            run=lambda host, args: _run_python(namespace, host, args["code"]),
        ),
        "variables": BuiltinTool(
            name="variables",
            description=("List the user's notebook variables with their types and a one-line summary (a table's "
                         "shape and columns, a list's length, a number's value); with name, one variable's fuller "
                         "summary (a table's column types and first rows)."),
            parameters={"type": "object", "properties": {
                "name": {"type": "string", "description": "One variable to describe in more detail."}},
                "additionalProperties": False},
            run=lambda host, args: _run_variables(namespace, host, args.get("name")),
        ),
    }


# -- python ---------------------------------------------------------------------------------------


def _run_python(namespace: PythonNamespace, host: BuiltinHost, code: str) -> tuple[str, bool]:
    """Run ``code`` where the namespace lives; Interrupted once the run is stopped."""
    return _wait(namespace.run(lambda: execute(namespace, code)), host)


def _wait(pending: Future[_T], host: BuiltinHost) -> _T:
    """The job's result; once the run is stopped, the job is cancelled (not started yet)
    or interrupted, and Interrupted is raised when it has unwound (or after a grace time)."""
    wake = threading.Event()
    pending.add_done_callback(lambda _: wake.set())
    forget = host.cancel.on_cancel(wake.set)
    try:
        wake.wait()
    finally:
        forget()
    if pending.done() and not pending.cancelled():
        return pending.result()
    pending.cancel()
    if isinstance(pending, ThreadJob):  # a job on a thread of its own: KeyboardInterrupt raised in it
        pending.interrupt()
    _settled(pending, _WIND_DOWN)
    raise Interrupted(STOPPED)


def _settled(pending: Future[_T], timeout: float) -> None:
    """Wait up to ``timeout`` seconds for ``pending`` to finish, whatever its outcome."""
    finished = threading.Event()
    pending.add_done_callback(lambda _: finished.set())
    finished.wait(timeout)


def execute(namespace: PythonNamespace, code: str) -> tuple[str, bool]:
    """Run ``code`` in ``namespace`` on this thread; ``(what a person would have seen,
    whether it failed)``. A KeyboardInterrupt (Ctrl-C in the notebook) propagates: the run
    is being stopped (what the code printed so far is in the cell already)."""
    captured = io.StringIO()
    filename = f"<rienda python {next(_RUNS)}>"
    try:
        source = namespace.transform(code)
        body, last = _split_last_expression(source, filename)
    except SyntaxError as exc:
        return _syntax_error(exc), True
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # tracebacks quote lines
    with _Tee(captured):
        try:
            try:
                exec(compile(body, filename, "exec"), namespace.values)  # noqa: S102 - the user's own notebook code
                value = eval(compile(last, filename, "eval"), namespace.values) if last else None  # noqa: S307
            finally:
                if namespace.after is not None:
                    namespace.after()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - any failure of the user's code is a result
            return _with_output(captured, _traceback(exc)), True
    if value is not None:
        if namespace.display is not None:
            namespace.display(value)
        return _with_output(captured, _repr(value)), False
    return _with_output(captured, ""), False


def _split_last_expression(source: str, filename: str) -> tuple[ast.Module, ast.Expression | None]:
    tree = ast.parse(source, filename, "exec")
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr):
        tree.body.pop()
        return tree, ast.Expression(last.value)
    return tree, None


def _with_output(captured: io.StringIO, tail: str) -> str:
    printed = captured.getvalue().rstrip("\n")
    if printed and tail:
        return printed + "\n" + tail
    return printed or tail or "(no output)"


def _repr(value: object) -> str:
    try:
        return repr(value)
    except Exception as exc:  # noqa: BLE001 - a broken __repr__ is the user's, not ours
        return f"<{type(value).__name__} whose repr failed: {type(exc).__name__}: {exc}>"


def _traceback(exc: BaseException, frames: int = _FRAMES, hidden: Callable[[str], bool] = lambda _: False,
               label: Callable[[str], str] = lambda filename: filename) -> str:
    """The exception and the last ``frames`` frames that belong to the user's code (ours,
    and those in files ``hidden`` names, left out), each file named by ``label``."""
    kept = [frame for frame in traceback.extract_tb(exc.__traceback__)
            if frame.filename != __file__ and not hidden(frame.filename)]
    for frame in kept:
        frame.filename = label(frame.filename)
    lines = traceback.format_list(kept[-frames:])
    head = "Traceback (most recent call last):\n" if lines else ""
    return head + "".join(lines) + "".join(traceback.format_exception_only(type(exc), exc)).rstrip("\n")


def with_error(prompt: str, exc: BaseException, hidden: Callable[[str], bool] = lambda _: False,
               label: Callable[[str], str] = lambda filename: filename) -> str:
    """``prompt`` followed by ``exc`` and its last frames (each quoting its line of code), as
    ``%rienda ask --error`` sends them; ``hidden`` names files whose frames are left out
    (the front end's own), ``label`` how a file is named (a cell's temporary file as the
    cell, ``Cell In[3]``, the way IPython's own tracebacks name it). Capped like a variable's fuller summary, keeping its end (the
    exception itself, and the frames nearest to it)."""
    report = _traceback(exc, frames=8, hidden=hidden, label=label)
    if len(report) > _DETAIL:
        report = "…" + report[-(_DETAIL - 1):]
    return f"{prompt}\n\nThe last error in my notebook:\n```\n{report}\n```"


def _syntax_error(exc: SyntaxError) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).rstrip("\n")


class _Tee:
    """While active, what is written to sys.stdout / sys.stderr also goes to ``captured``
    (the front end still shows it live). Only writes from this thread are captured."""

    def __init__(self, captured: io.StringIO) -> None:
        self.captured = captured
        self.thread = threading.get_ident()

    def __enter__(self) -> _Tee:
        self.saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _TeeStream(sys.stdout, self), _TeeStream(sys.stderr, self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        sys.stdout, sys.stderr = self.saved


class _TeeStream:
    def __init__(self, stream: TextIO, tee: _Tee) -> None:
        self._stream = stream
        self._tee = tee

    def write(self, text: str) -> int:
        if threading.get_ident() == self._tee.thread:
            self._tee.captured.write(text)
        return self._stream.write(text)

    def __getattr__(self, name: str) -> object:  # flush, isatty, encoding... of the real stream
        return getattr(self._stream, name)


def _run_variables(namespace: PythonNamespace, host: BuiltinHost, name: str | None) -> tuple[str, bool]:
    return _wait(namespace.run(lambda: describe_variables(namespace, name)), host)
