"""The Rienda Jupyter kernel: a cell is a prompt to the current agent.

A cell runs one agent turn in the kernel's current session. A cell starting with
``%rienda`` is a command (see :mod:`rienda_kernel.commands.vocabulary`; ``%rienda ask PROMPT`` is a
turn too, ``%rienda?`` pages the help), one starting with ``%%rienda_tool NAME`` or
``%%rienda_hook NAME`` saves and loads an extension, and any other cell starting with
``%`` is refused: a cell never becomes a paid model turn by accident. Requests with
``silent`` (front ends' probes and startup code) run nothing.

The turn runs in a worker thread while ``do_execute`` awaits it, so the kernel keeps
handling widget clicks and view reports (ipykernel >= 7.4 dispatches comm messages while
a cell awaits) and interrupts (a SIGINT handler that cancels the run through the loop).

The notebook tools (``python``, ``variables``) work in the kernel's own IPython namespace
(empty until the agent's code fills it; it lasts as long as the kernel). Their code runs on
the main thread, on the kernel's event loop, so an interrupt stops it as it would stop a
Python cell: the SIGINT handler raises KeyboardInterrupt into that code.

Shutting down never leaves a turn behind: SIGTERM during a turn ends it like an interrupt
(its commands are ended, ``afterRun`` runs, the session gets its ``run_end``) and then
terminates the kernel as asked; Jupyter's shutdown (an interrupt, then a shutdown request)
waits for the turn to end (which releases its session), stopping ``afterRun`` if it takes
too long, before the kernel exits. A second interrupt stops ``afterRun``.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import signal
import threading
from collections.abc import Callable, Collection, Coroutine
from typing import TYPE_CHECKING, Concatenate, ParamSpec

from ipykernel.ipkernel import IPythonKernel
from jupyter_client.session import Session

from .. import __version__
from .cell import CellTarget
from ..commands.vocabulary import CommandError, ask_prompt, error_flag, help_text, is_command, run_rienda_command
from .completion import complete, inspect
from ..engine import CancelToken, JSONObject, RiendaError, RunResult, notebook_tools, scrub
from ..frontend.output import Reader, error_line, is_internal
from ..commands.session import TurnSession
from .notebook import notebook_error_line, prewarm_first_turn, shell_namespace
from .pump import drain
from .turns import EXTENSION_CELLS, TurnDriver

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

__all__ = ["ReaderSession", "RiendaKernel", "launch"]

_EXTENSION_CELLS = {f"%%{magic}": kind for magic, kind in EXTENSION_CELLS.items()}
# How long a shutdown lets a running turn wind down (afterRun) before a second interrupt,
# and then how long it waits for that: both within jupyter_client's 2.5 s before SIGTERM.
_WIND_DOWN_S = 1.5
_STOP_S = 0.5
_P = ParamSpec("_P")


class ReaderSession(Session):
    """The kernel's message session: the content of every message it sends (IOPub, the
    replies, stdin's prompts) passes the front end's :class:`~rienda_kernel.frontend.output.Reader`
    (scrubbed, encodable, paths as the notebook's reader sees them), whoever sent it: a
    cell's display, ipykernel's own streams, an error, the python tool's printing. Widget
    comms are scrubbed only (their state is data, not text for a reader)."""

    reader = Reader()

    def serialize(self, msg: JSONObject, ident: list[bytes] | bytes | None = None) -> list[bytes]:
        content = msg.get("content")
        if isinstance(content, dict):
            kind = msg.get("header", {}).get("msg_type", "")
            msg = {**msg, "content": scrub(content) if kind.startswith("comm_") else self.reader.value(content)}
        return super().serialize(msg, ident)


_Handler = Callable[Concatenate["RiendaKernel", _P], Coroutine[object, object, JSONObject]]  # an async request handler


def _replies(fallback: Callable[..., JSONObject]) -> Callable[[_Handler[_P]], _Handler[_P]]:
    """A request handler that always replies: an exception is logged (with its traceback,
    in the kernel's log) and the reply is ``fallback(kernel, *args)``."""

    def wrap(handler: _Handler[_P]) -> _Handler[_P]:
        @functools.wraps(handler)
        async def replying(self: RiendaKernel, /, *args: _P.args, **kwargs: _P.kwargs) -> JSONObject:
            try:
                return await handler(self, *args, **kwargs)
            except Exception:  # noqa: BLE001 - every request gets its reply
                self.log.exception("Rienda: %s failed", handler.__name__)
                return fallback(self, *args)

        return replying

    return wrap


class RiendaKernel(IPythonKernel):
    """A wrapper kernel over the Rienda engine (IPythonKernel wires comms and widgets)."""

    implementation = "rienda"
    implementation_version = __version__
    language_info = {
        "name": "markdown",
        "mimetype": "text/markdown",
        "file_extension": ".md",
        "codemirror_mode": "markdown",
        "pygments_lexer": "markdown",
    }
    banner = "Rienda: each cell is a prompt to the current agent; `%rienda help` lists the commands."
    help_links = [{"text": "Rienda commands", "url": "https://rienda.varavel.com/docs/tools/index.md"}]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[no-untyped-call]  # ipykernel's Kernel.__init__ is untyped
        if self.shell is None:  # IPythonKernel makes it above (ipykernel types it optional)
            raise RuntimeError("the IPython kernel made no shell")
        self.ipython: InteractiveShell = self.shell
        # Registers the widget comm targets front ends open (ipywidgets ships no types).
        import ipywidgets  # type: ignore[import-untyped]  # noqa: F401

        prewarm_first_turn(("jsonschema",))  # the first tool's schema check would wait for it otherwise
        self.turns = TurnDriver()
        self.startup_error: str | None = None
        self._running: tuple[CancelToken, threading.Event] | None = None
        self._counted = True  # whether the running cell's execution count names it (nbval runs each as 1)
        tools = notebook_tools(shell_namespace(self.ipython, self.turns.code))
        try:
            self.notebook: TurnSession | None = TurnSession(workdir=os.getcwd(), extra_tools=tools)
        except RiendaError as exc:
            self.notebook, self.startup_error = None, str(exc)

    # -- execute -------------------------------------------------------------------------
    async def do_execute(self, code: str, silent: bool, store_history: bool = True,
                         user_expressions: JSONObject | None = None, allow_stdin: bool = False, *,
                         cell_meta: JSONObject | None = None, cell_id: str | None = None) -> JSONObject:
        shell = self.ipython
        count = shell.execution_count
        if silent:
            return self._ok(count)
        self._counted = store_history
        if store_history:
            if shell.history_manager is not None:  # IPython makes it with the shell
                shell.history_manager.store_inputs(count, code)
            shell.execution_count += 1
        if not code.strip():
            return self._ok(count)
        if self.notebook is None:
            return self._error(count, "RiendaError", self.startup_error or "Rienda could not start")
        target = None
        try:
            target = self._cell_target(allow_stdin)
            return await self._cell(self.notebook, code.strip(), target, count)
        except Exception as exc:  # noqa: BLE001 - anything must still answer the cell, in one line
            return self._failed(count, exc, target)

    def _failed(self, count: int, exc: Exception, target: CellTarget | None) -> JSONObject:
        """The one-line error reply for ``exc``; a bug's traceback goes to the kernel's log."""
        cause = exc.__cause__ if isinstance(exc, CommandError) and exc.__cause__ is not None else exc
        if is_internal(cause):
            self.log.error("Rienda: the cell failed", exc_info=cause)
        if isinstance(exc, CommandError):
            return self._error(count, "UsageError", str(exc), target)
        if is_internal(exc):
            detail = f"{exc} " if str(exc) else ""
            return self._error(count, type(exc).__name__, f"{detail}(an internal error of Rienda: the kernel's log "
                                                          "has its traceback)", target)
        return self._error(count, type(exc).__name__, error_line(exc), target)

    async def _cell(self, notebook: TurnSession, code: str, target: CellTarget, count: int) -> JSONObject:
        first_word = code.split(None, 1)[0]
        if first_word in _EXTENSION_CELLS:
            return self._save_extension(notebook, _EXTENSION_CELLS[first_word], code, target, count)
        if code.endswith("?") and is_command(code[:-1]) and ask_prompt(code) is None:
            return self._page(code[:-1], count)
        if is_command(code):
            prompt = ask_prompt(code)
            if prompt is not None:
                if error_flag(prompt)[1]:
                    raise CommandError("--error adds the exception of the last Python cell, and a Rienda notebook has "
                                       "no Python cells: use it in a Python notebook after %load_ext rienda_kernel")
                return await self._turn(notebook, prompt, target, count)
            return self._command(notebook, code, target, count)
        if code.startswith("%"):
            raise CommandError(f"{first_word} is not a Rienda command: in a Rienda notebook a cell is a prompt, "
                               "`%rienda ...` a command and `%%rienda_tool NAME` / `%%rienda_hook NAME` save an "
                               "extension (`%rienda help` lists the commands)")
        return await self._turn(notebook, code, target, count)

    def _cell_target(self, allow_stdin: bool) -> CellTarget:
        loop = asyncio.get_running_loop()
        cell_context = contextvars.copy_context()

        def schedule(fn: Callable[[], None]) -> None:
            loop.call_soon_threadsafe(fn, context=cell_context)

        return CellTarget.of_cell(self, schedule, allow_stdin)

    def _command(self, notebook: TurnSession, code: str, target: CellTarget, count: int) -> JSONObject:
        """A command's output is the cell's result (``execute_result``)."""
        output = run_rienda_command(notebook, code)
        data = {"text/plain": output.text}
        if output.markdown:
            data["text/markdown"] = output.markdown
        target.send("execute_result", {"data": data, "metadata": {}, "execution_count": count})
        return self._ok(count)

    def _page(self, code: str, count: int) -> JSONObject:
        """``%rienda?`` / ``%rienda use?``: the help, as the pager payload IPython sends."""
        words = code.split()
        text = help_text(words[1] if len(words) > 1 else None)
        return {**self._ok(count), "payload": [{"source": "page", "data": {"text/plain": text}, "start": 0}]}

    def _save_extension(self, notebook: TurnSession, kind: str, code: str, target: CellTarget,
                        count: int) -> JSONObject:
        first, _, source = code.partition("\n")
        words = first.split()
        if len(words) != 2:
            raise CommandError(f"usage: {words[0]} NAME, then the extension's JavaScript on the next lines")
        self.turns.save_extension(notebook, kind, words[1], source, target.stream)
        return self._ok(count)

    async def _turn(self, notebook: TurnSession, prompt: str, target: CellTarget, count: int) -> JSONObject:
        turns = self.turns
        ui = turns.ui(notebook, target)
        cancel, done = CancelToken(), threading.Event()
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        conversation = notebook.conversation
        if notebook is not None:
            notebook.name_turn(prompt, count if self._counted else None)  # a recording's lines

        def turn() -> RunResult:
            try:
                return context.run(conversation.run, prompt, ui, cancel)
            finally:
                done.set()

        def on_the_loop(job: Callable[[], None]) -> None:  # the python tool's job, in a copy of the cell's context
            loop.call_soon_threadsafe(job, context=context.copy())  # (the turn's thread runs in that one)

        with turns.one_turn(), turns.stopping(cancel, (signal.SIGINT, signal.SIGTERM), loop.call_soon_threadsafe,
                                              before_terminating=notebook.close) as signalled:  # its MCP servers stop too
            self._running = (cancel, done)
            if signalled is not None:  # the loop wakes at a signal, whichever thread got it
                loop.add_reader(signalled, drain, signalled)
            try:
                with turns.code.lent(on_the_loop):
                    result = await loop.run_in_executor(None, turn)
            finally:
                self._running = None
                if signalled is not None:
                    loop.remove_reader(signalled)
        shown, error = turns.ending(result)
        if shown is not None:
            target.send("display_data", {"data": shown, "metadata": {}, "transient": {}})
        if error is not None:
            return self._error(count, error.ename, str(error), target)
        return self._ok(count)

    async def do_shutdown(self, restart: bool) -> JSONObject:
        """Let a running turn end (stopping its afterRun if it takes too long; the session
        gets its run_end and is released) before the kernel exits; it exits even if that
        fails."""
        try:
            if self._running is not None:
                cancel, done = self._running
                if not cancel.cancelled:  # jupyter_client interrupts before it asks for a shutdown
                    cancel.cancel()
                loop = asyncio.get_running_loop()
                if not await loop.run_in_executor(None, done.wait, _WIND_DOWN_S):
                    cancel.cancel()
                    await loop.run_in_executor(None, done.wait, _STOP_S)
        except Exception:  # noqa: BLE001 - the shutdown goes on
            self.log.exception("Rienda: ending the turn at shutdown failed")
        if self.notebook is not None:  # its MCP servers stop with the kernel
            try:
                await asyncio.get_running_loop().run_in_executor(None, self.notebook.close)
            except Exception:  # noqa: BLE001 - the shutdown goes on
                self.log.exception("Rienda: closing the notebook's engine at shutdown failed")
        reply: JSONObject = super().do_shutdown(restart)  # type: ignore[no-untyped-call]  # ipykernel's is untyped
        return reply

    # -- replies ---------------------------------------------------------------------------
    def _ok(self, count: int) -> JSONObject:
        return {"status": "ok", "execution_count": count, "payload": [], "user_expressions": {}}

    def _error(self, count: int, name: str, value: str, target: CellTarget | None = None) -> JSONObject:
        """A Jupyter error without a Python traceback: one line says what failed."""
        content = {"ename": name, "evalue": value, "traceback": [notebook_error_line(name, value)]}
        (target or CellTarget.of_request(self)).send("error", content)
        return {"status": "error", "execution_count": count, **content}

    # -- completion, inspection, is_complete -------------------------------------------------
    @_replies(lambda self, code, cursor_pos, *_: {"status": "ok", "matches": [], "metadata": {},
                                                  "cursor_start": len(code) if cursor_pos is None else cursor_pos,
                                                  "cursor_end": len(code) if cursor_pos is None else cursor_pos})
    async def do_complete(self, code: str, cursor_pos: int | None) -> JSONObject:
        cursor_pos = len(code) if cursor_pos is None else cursor_pos
        matches: list[str] = []
        start = end = cursor_pos
        if self.notebook is not None and is_command(code[:cursor_pos]):
            matches, start, end = complete(self.notebook, code, cursor_pos)
        return {"status": "ok", "matches": matches, "cursor_start": start, "cursor_end": end, "metadata": {}}

    @_replies(lambda self, *_: {"status": "ok", "found": False, "data": {}, "metadata": {}})
    async def do_inspect(self, code: str, cursor_pos: int, detail_level: int = 0,
                         omit_sections: Collection[str] = ()) -> JSONObject:
        """Shift-Tab on a command word shows its help; on an agent's name, the agent."""
        found = inspect(self.notebook, code, cursor_pos) if self.notebook is not None else None
        if found is None:
            return {"status": "ok", "found": False, "data": {}, "metadata": {}}
        data = {"text/plain": found.text, **({"text/markdown": found.markdown} if found.markdown else {})}
        return {"status": "ok", "found": True, "data": data, "metadata": {}}

    @_replies(lambda self, *_: {"status": "unknown"})
    async def do_is_complete(self, code: str) -> JSONObject:
        """A prompt is complete at the first blank line-free Enter; a command at once."""
        if code.rstrip().endswith("\\"):
            return {"status": "incomplete", "indent": ""}
        return {"status": "complete"}


def launch() -> None:
    """Start the Rienda kernel (``python -m rienda_kernel``, as kernel.json says), with its
    :class:`ReaderSession`."""
    from ipykernel.kernelapp import IPKernelApp
    from traitlets import default

    from ..engine import without

    # A Markdown kernel offers no Python debugger (kernel.json says "debugger": false):
    # ipykernel asks ipykernel.debugger whether debugpy imports, so it is imported first
    # without debugpy, and kernel_info does not list "debugger" (debugpy's import, 70 ms of
    # every start, is saved too).
    with without("debugpy"):
        import ipykernel.debugger  # noqa: F401

    class RiendaKernelApp(IPKernelApp):
        @default("session")
        def _session_default(self) -> Session:
            return ReaderSession(parent=self)

    RiendaKernelApp.launch_instance(kernel_class=RiendaKernel)
