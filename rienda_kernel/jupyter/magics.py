"""``%rienda`` and ``%%rienda``: the Rienda engine from any IPython kernel or terminal.

    %rienda SUBCOMMAND ...        the Rienda kernel's vocabulary (ask, use, new, resume,
                                  sessions, agents, tools, hooks, model, confirm, home, ...)
    %%rienda [--agent A] [--session ID] [--model M]
                                  the cell body is the prompt; the options apply to this cell
    %%rienda_tool NAME / %%rienda_hook NAME
                                  save the cell as $RIENDA_HOME/tools|hooks/NAME/index.js, load it,
                                  and show its diagnostics or a one-line summary

``{name}`` in a prompt is the value of ``name`` in the user's namespace (``{{`` for a
literal brace). A turn returns a :class:`~rienda_kernel.jupyter.result.TurnResult`; a turn that fails or
is interrupted raises :class:`~rienda_kernel.jupyter.notebook.TurnFailed` /
:class:`~rienda_kernel.jupyter.notebook.TurnInterrupted`, shown as one line (the same as in the
Rienda kernel) and seen by batch runners as the cell's error.

``%%rienda --agent A`` does not change the notebook's current agent or session: cells
that name ``--agent A`` share one session of A of their own; ``--session ID`` continues
that session for the cell; ``--model M`` is this cell's model.

The notebook tools (``python``, ``variables``: :mod:`rienda_kernel.engine.builtins.notebook`)
work in the user's namespace. In a kernel their code runs on the main thread through the
turn's pump, so the kernel's interrupt stops it as it would stop a cell; in a terminal
IPython it runs on a thread of its own, which Ctrl-C interrupts. ``ask --error`` adds the
last exception a cell raised (``sys.last_value``) to the prompt.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import string
import sys
import threading
from pathlib import Path
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager
from typing import TYPE_CHECKING, Concatenate, ParamSpec, Protocol, TypeVar

import IPython
from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from ..frontend.terminal import MAGICS_ALLOW_HINT, SHOW_SEE_ALL, TerminalUI
from ..engine import (CancelToken, Conversation, FrontEnd, RiendaError, RunResult, notebook_tools, run_interruptibly,
                      settle, with_error)
from ..frontend.output import OutputStream, error_line, is_internal
from .cell import READER, CellTarget
from ..commands.vocabulary import CELL_OPTIONS, SUBCOMMANDS, CommandError, ask_prompt, error_flag, run_rienda_command
from .pump import MainThreadPump
from .result import TurnResult, current_cell
from ..commands.session import TurnSession
from .notebook import TurnFailed, TurnInterrupted, display_bundle, shell_kernel, shell_namespace
from .turns import EXTENSION_CELLS, TurnDriver

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..engine import PythonNamespace
    from .pump import PumpedKernel

__all__ = ["RiendaMagics", "keep_questions"]

_ASK_LINE = re.compile(r"^(\s*(?:[\w.\[\]'\"]+\s*=\s*)?)%rienda\s+(ask\s.*\?)\s*$")


def keep_questions(lines: list[str]) -> list[str]:
    """An input transformer: ``%rienda ask ...?`` is a question to the agent, not IPython's
    ``?`` help request, so such a line becomes the magic call IPython would have made."""
    return [_ask_call(line) for line in lines]


def _ask_call(line: str) -> str:
    body = line.rstrip("\n")
    match = _ASK_LINE.match(body)
    if match is None:
        return line
    call = f"{match.group(1)}get_ipython().run_line_magic('rienda', {match.group(2)!r})"
    return call + line[len(body):]


# -- IPython's magic decorators, typed here once ------------------------------------------
# magic_arguments, argument and parse_argstring are untyped, and @cell_magic("name") is typed
# as returning a function or a decorator; the magics below use these typed forms.
_Magic = TypeVar("_Magic", bound=Callable[..., object])


class _Marker(Protocol):
    """A decorator that marks a magic and returns it unchanged."""

    def __call__(self, magic: _Magic, /) -> _Magic: ...


def _argument(*flags: str, **options: object) -> argument:
    """IPython's ``@argument(...)``: one argparse argument of a magic (``%magic?`` shows its help)."""
    return argument(*flags, **options)  # type: ignore[no-untyped-call]  # IPython's magic_arguments is untyped


def _with_arguments(*arguments: argument) -> _Marker:
    """IPython's ``@magic_arguments()`` over ``@argument``s, in the order given."""
    def mark(magic: _Magic) -> _Magic:
        for each in reversed(arguments):
            each(magic)  # records itself on the function
        magic_arguments()(magic)  # type: ignore[no-untyped-call]  # untyped, as argument
        return magic
    return mark


def _parsed(magic: Callable[..., object], line: str) -> argparse.Namespace:
    """``line`` parsed by the arguments ``magic`` declares (:func:`_with_arguments`)."""
    parsed: argparse.Namespace = parse_argstring(magic, line)  # type: ignore[no-untyped-call]  # IPython: untyped
    return parsed


def _line_magic(magic: _Magic) -> _Magic:
    """IPython's ``@line_magic``."""
    line_magic(magic)
    return magic


def _cell_magic(name: str) -> _Marker:
    """IPython's ``@cell_magic(name)``."""
    def mark(magic: _Magic) -> _Magic:
        cell_magic(name)(magic)  # type: ignore[arg-type]  # IPython types this decorator as taking Never
        return magic
    return mark


# %%rienda's options, from the one table (:data:`CELL_OPTIONS`) that also completes them.
_with_cell_options = _with_arguments(*(_argument(option.flag, help=option.help,
                                                 **({"action": "store_true"} if option.switch else {}))
                                       for option in CELL_OPTIONS))


_VOCABULARY = "\n".join(f"  {sub.usage:<34} {sub.help}" for sub in SUBCOMMANDS)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _front_end(magic: Callable[Concatenate[RiendaMagics, _P], _R]) -> Callable[Concatenate[RiendaMagics, _P], _R]:
    """A magic as a front end: while it runs, everything it (and the code the ``python``
    tool runs for it) prints or displays passes the reader (:func:`_reader_output`); and
    whatever fails is one line: a turn's end as it is, a mistake as a UsageError, anything
    else (a system error, a bug) as a UsageError naming it, its traceback in the kernel's log."""

    @functools.wraps(magic)
    def run(self: RiendaMagics, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with _reader_output(self.ipython):
            try:
                return magic(self, *args, **kwargs)
            except (TurnFailed, TurnInterrupted) as exc:
                raise type(exc)(READER.text(str(exc))) from None
            except UsageError as exc:
                raise UsageError(READER.text(str(exc))) from None
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # noqa: BLE001 - a RiendaError, a system error or a bug: one line
                cause = exc.__cause__ if isinstance(exc, CommandError) and exc.__cause__ is not None else exc
                kernel = shell_kernel(self.ipython)
                if is_internal(cause) and kernel is not None:
                    kernel.log.error("Rienda: %%rienda failed", exc_info=cause)
                raise UsageError(READER.text(error_line(exc))) from None

    return run


@contextmanager
def _reader_output(shell: InteractiveShell) -> Iterator[None]:
    """``sys.stdout``, ``sys.stderr`` and the shell's display publisher pass the reader
    (no secret, encodable, paths as the notebook's reader sees them) for the duration."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = OutputStream(sys.stdout, READER), OutputStream(sys.stderr, READER)
    publisher = shell.display_pub
    publish = publisher.publish
    patched = "publish" not in vars(publisher)  # not already, by the magic this one is in
    if patched:  # the instance's own attribute, in front of its class's method
        setattr(publisher, "publish", functools.partial(_publish_read, publish))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
        if patched:
            delattr(publisher, "publish")  # the class's own method again


def _publish_read(publish: Callable[..., None], data: Mapping[str, object], metadata: object = None,
                  *args: object, **kwargs: object) -> None:
    """IPython's ``publish``, with ``data`` (a display's bundle) as the reader sees it."""
    publish(READER.value(data), metadata, *args, **kwargs)


@magics_class
class RiendaMagics(Magics):
    """The magics; one :class:`TurnSession` per IPython shell."""

    def __init__(self, shell: InteractiveShell) -> None:
        super().__init__(shell)
        self.ipython = shell  # the shell these magics are loaded in (Magics types its own optional)
        self._notebook: TurnSession | None = None
        self.turns = TurnDriver()

    @property
    def notebook(self) -> TurnSession:
        if self._notebook is None:
            try:
                self._notebook = TurnSession(workdir=os.getcwd(), extra_tools=notebook_tools(self._namespace()))
            except RiendaError as exc:
                raise UsageError(str(exc)) from None
        return self._notebook

    # -- %rienda -------------------------------------------------------------------------------
    @_with_arguments(_argument("subcommand", nargs="?", default="help", help="the command (see below)"),
                     _argument("args", nargs="*", help="its arguments"))
    @_line_magic
    @no_var_expand
    @_front_end
    def rienda(self, line: str) -> TurnResult | None:
        """Rienda commands, and ``ask PROMPT`` to run a turn."""
        try:
            prompt = ask_prompt(line)
            if prompt is not None:
                prompt, add_error = error_flag(prompt)
                prompt = self._interpolate(prompt)
                return self._turn(self.notebook.conversation, self._with_last_error(prompt) if add_error else prompt)
            output = run_rienda_command(self.notebook, line)
        except CommandError as exc:
            raise UsageError(str(exc)) from None
        self._show(output.text, output.markdown)
        return None

    # -- %%rienda --------------------------------------------------------------------------------
    @_with_cell_options
    @_cell_magic("rienda")
    @_front_end
    def rienda_cell(self, line: str, cell: str) -> TurnResult:
        """The cell body is the prompt of one turn; the options apply to this cell only."""
        args = _parsed(self.rienda_cell, line)
        if not cell.strip():
            raise UsageError("%%rienda: the cell body is the prompt, and it is empty")
        prompt = self._interpolate(cell)
        if args.error:
            prompt = self._with_last_error(prompt)
        notebook = self.notebook
        try:
            conversation = notebook.conversation_for(agent=args.agent, session=args.session)
            if args.model:
                notebook.check_model(args.model)
        except RiendaError as exc:
            raise UsageError(str(exc)) from None
        previous = conversation.model
        conversation.model = args.model or previous
        try:
            return self._turn(conversation, prompt)
        finally:
            conversation.model = previous
            if args.session is not None and conversation.session_id != notebook.session_id:
                conversation.close()

    # -- %%rienda_tool / %%rienda_hook --------------------------------------------------------------
    @_with_arguments(_argument("name", help="the tool's name (its directory under $RIENDA_HOME/tools)"))
    @_cell_magic("rienda_tool")
    @_front_end
    def rienda_tool(self, line: str, cell: str) -> None:
        """Save the cell as a tool's index.js and load it at once."""
        self._save_extension(EXTENSION_CELLS["rienda_tool"], _parsed(self.rienda_tool, line).name, cell)

    @_with_arguments(_argument("name", help="the hook's name (its directory under $RIENDA_HOME/hooks)"))
    @_cell_magic("rienda_hook")
    @_front_end
    def rienda_hook(self, line: str, cell: str) -> None:
        """Save the cell as a hook's index.js and load it at once."""
        self._save_extension(EXTENSION_CELLS["rienda_hook"], _parsed(self.rienda_hook, line).name, cell)

    # -- the notebook tools' namespace ---------------------------------------------------------------
    def _namespace(self) -> PythonNamespace:
        return shell_namespace(self.ipython, self.turns.code)

    def _with_last_error(self, prompt: str) -> str:
        """``prompt`` with the last exception a cell raised; UsageError when none has."""
        error = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
        if error is None:
            raise UsageError("--error: no cell has raised an exception in this kernel yet")
        ipython_files = os.path.dirname(IPython.__file__) + os.sep
        cells = self.ipython.compile

        def label(filename: str) -> str:  # a cell's temporary file as IPython names it: Cell In[3]
            named = cells.format_code_name(filename) if hasattr(cells, "format_code_name") else None
            return " ".join(named) if named else filename

        return with_error(prompt, error, hidden=lambda filename: filename.startswith(ipython_files), label=label)

    # -- the parts -------------------------------------------------------------------------------------
    def _interpolate(self, prompt: str) -> str:
        """``{name}`` from the user's namespace; ``{{`` is a literal brace."""
        namespace = self.ipython.user_ns
        try:
            return string.Formatter().vformat(prompt, (), _Namespace(namespace))
        except KeyError as exc:
            raise UsageError(f"the prompt names {{{exc.args[0]}}}, which is not defined "
                             "(write {{ and }} for literal braces)") from None
        except (AttributeError, IndexError, ValueError) as exc:
            raise UsageError(f"cannot fill the prompt: {exc} (write {{{{ and }}}} for literal braces)") from None

    def _cell_count(self, kernel: PumpedKernel | None) -> int | None:
        """The cell's execution count; None when not counted (``store_history`` false: nbval)."""
        parent = kernel.get_parent("shell") if kernel is not None else {}
        content = parent.get("content") or {}
        counted = content.get("store_history", True) if isinstance(content, dict) else True
        return int(self.ipython.execution_count) if counted else None

    def _turn(self, conversation: Conversation, prompt: str) -> TurnResult:
        """One turn; its workspace is the kernel's current directory (``os.chdir`` moves it).
        Code that the ``python`` tool runs cannot start another turn meanwhile."""
        with self.turns.one_turn(busy=UsageError):
            return self._run_turn(conversation, prompt)

    def _run_turn(self, conversation: Conversation, prompt: str) -> TurnResult:
        self.notebook.rienda.workdir = Path.cwd().resolve()
        kernel = shell_kernel(self.ipython)
        self.notebook.name_turn(prompt, self._cell_count(kernel))  # what a recording's lines call this turn
        cancel = CancelToken()
        ran: Future[RunResult] = Future()

        def work(ui: FrontEnd) -> None:
            settle(ran, lambda: conversation.run(prompt, ui, cancel))

        with self.turns.stopping(cancel, before_terminating=self.notebook.close) as signalled:
            if kernel is not None and MainThreadPump.supported(kernel):
                interrupted = self._turn_in_kernel(kernel, work, ran, cancel, signalled)
            else:
                interrupted = self._turn_in_terminal(work, cancel)
        result = ran.result()  # the run itself failed (a bug of Rienda's): its own error, raised here
        shown, error = self.turns.ending(result, interrupted)
        if shown is not None and kernel is not None:  # a terminal printed it with the run's end
            self._show(shown["text/plain"], shown["text/markdown"])
        if error is not None:
            raise error
        return TurnResult.from_run(result, shown_in=current_cell())

    def _turn_in_kernel(self, kernel: PumpedKernel, work: Callable[[FrontEnd], None], ran: Future[RunResult],
                        cancel: CancelToken, signalled: int | None) -> bool:
        with MainThreadPump(kernel) as pump:
            ui = self.turns.ui(self.notebook, CellTarget.of_cell(kernel, pump.schedule))
            with self.turns.code.lent(pump.schedule):  # the python tool's code runs on this thread, pumped
                def turn() -> None:
                    try:
                        work(ui)
                    finally:
                        pump.wake()

                try:
                    threading.Thread(target=turn, name="rienda-turn", daemon=True).start()
                    return pump.run_until(ran.done, cancel.cancel, signalled)
                except KeyboardInterrupt:  # Ctrl-C outside the pump's loop: still let the turn wind down
                    cancel.cancel()
                    pump.run_until(ran.done, cancel.cancel, signalled)
                    return True

    def _turn_in_terminal(self, work: Callable[[FrontEnd], None], cancel: CancelToken) -> bool:
        ui = TerminalUI(self.notebook.turn_policy(), sys.stdin, allow_hint=MAGICS_ALLOW_HINT, see_all=SHOW_SEE_ALL)
        _, stopped_by = run_interruptibly(lambda _: work(ui), cancel)
        return stopped_by is not None

    def _save_extension(self, kind: str, name: str, source: str) -> None:
        def write(stream: str, text: str) -> None:
            print(text, end="", file=sys.stderr if stream == "stderr" else sys.stdout, flush=True)

        try:
            self.turns.save_extension(self.notebook, kind, name, source, write)
        except RiendaError as exc:
            raise UsageError(str(exc)) from None

    def _show(self, text: str, markdown: str | None) -> None:
        """Markdown where a front end renders it (with the text as its plain form)."""
        if markdown and shell_kernel(self.ipython) is not None:
            display_bundle({"text/plain": text, "text/markdown": markdown})
        else:
            print(text, flush=True)


class _Namespace(dict[str, object]):
    """The user's namespace for str.format: a missing name raises KeyError(name)."""

    def __init__(self, namespace: Mapping[str, object]) -> None:
        super().__init__()
        self._namespace = namespace

    def __missing__(self, key: str) -> object:
        if key in self._namespace:
            return self._namespace[key]
        raise KeyError(key)


RiendaMagics.rienda.__doc__ = (RiendaMagics.rienda.__doc__ or "") + "\n\nCommands:\n" + _VOCABULARY
