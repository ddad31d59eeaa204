"""``rienda chat``: one session, turn after turn, at a terminal.

A line that does not start with ``/`` is a turn of the current agent, shown as ``rienda
run`` shows one (:class:`~rienda_kernel.frontend.terminal.TerminalUI`: the answer streamed to stdout,
the activity to stderr, then the session and usage line). A line that starts with ``/`` is
one of the Rienda commands, from the one table the notebook's ``%rienda`` uses
(:mod:`rienda_kernel.commands`): ``/use AGENT``, ``/new``, ``/resume ID``, ``/tools``...
``/help`` lists what chat offers; ``/exit`` (or Ctrl-D) leaves with one line naming the
session.

At a terminal (standard input a tty): the prompt has line editing and a history
(:mod:`readline` where Python has it; the history is ``chat_history`` in the Rienda home,
never the current folder), Tab completes a command's name, a tool's confirm is asked
inline (y/N), Ctrl-C stops the turn that runs (the chat goes on) and at the prompt clears
the line. On a pipe: each line is read as typed, with no prompt, and a confirm cannot be
asked (under ``ask`` it is denied, saying how to allow it). SIGTERM stops the turn and
leaves (exit 143). Every error is one line, and the chat goes on.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Protocol

from ..commands.session import TurnSession
from ..commands.vocabulary import CommandError, run_rienda_command, subcommands
from ..engine import CancelToken, RiendaError, did_you_mean, repair, run_interruptibly
from ..frontend.output import OutputStream, error_line
from ..frontend.terminal import CHAT_ALLOW_HINT, SHOW_SEE_ALL, TerminalUI, usage_summary

__all__ = ["CHAT_PREFIX", "HISTORY_FILE", "NOTEBOOK_ONLY", "Chat", "chat_help", "offered", "start_chat"]

CHAT_PREFIX = "/"
HISTORY_FILE = "chat_history"  # in the Rienda home
HISTORY_LENGTH = 1000
LEAVE = ("exit", "quit")
# Commands of the table that chat does not offer, and the line it answers instead.
NOTEBOOK_ONLY = {"ask": "in chat, type the prompt itself (a line that does not start with /)"}
_TURN_STOPS = (signal.SIGINT, signal.SIGTERM)  # both stop a turn; SIGTERM leaves too (as `rienda run`)


def start_chat(home: Path, workdir: Path, agent: str | None, model: str | None, resume: str | None,
               confirm: str | None) -> int:
    """``rienda chat``: the session set up as the options say (a mistake in them is a
    RiendaError, before any prompt), then :meth:`Chat.loop` on standard input."""
    if sys.stdin is None:
        raise RiendaError("rienda chat reads standard input, which is closed: run it at a terminal, or pipe lines to it")
    session = TurnSession(home=home, workdir=workdir)
    try:
        if resume is not None:
            for warning in session.resume(resume).warnings:
                _say(f"warning: {warning}")
        if agent is not None:
            session.use(agent)
        if model is not None:
            session.set_model(model)
        if confirm is not None:
            session.set_confirm(confirm)
        chat = Chat(session, sys.stdin, sys.stdin.isatty())
        if chat.terminal:
            where = f"session {session.session_id}" if session.session_id else "a new session"
            _say(f"rienda chat: agent {session.agent_id}, {where}. {CHAT_PREFIX}help lists the commands; "
                 "Ctrl-C stops a turn, Ctrl-D leaves.")
        return chat.loop()
    finally:
        session.close()


class Chat:
    """A chat on ``session``: :meth:`loop` reads lines from ``stdin`` until EOF or
    ``/exit`` and returns the exit code. ``terminal``: stdin is a person at a tty (a
    prompt, line editing, inline confirms); else lines come from a pipe."""

    def __init__(self, session: TurnSession, stdin: IO[str], terminal: bool) -> None:
        self.session = session
        self.stdin = stdin
        self.terminal = terminal
        session.prefix = CHAT_PREFIX

    def loop(self) -> int:
        """Read and act on lines until EOF or ``/exit`` (0), SIGTERM stopping a turn (128 +
        its number), standard output closed (the reader went away) or standard input
        failing (1); then say goodbye."""
        with _line_editing(self) as read:
            code = self._lines(read)
        self.goodbye()
        return code

    def _lines(self, read: Callable[[], str | None]) -> int:
        while True:
            try:
                line = read()
            except (OSError, UnicodeDecodeError) as exc:  # stdin went away, or is not text
                _say(f"rienda: cannot read standard input: {error_line(exc)}")
                return 1
            if line is None:
                return 0
            try:
                code = self.act(repair(line).strip())  # bytes that are not UTF-8: U+FFFD, as on the command line
            except KeyboardInterrupt:  # Ctrl-C in a command (a listing, loading), or between a turn and the prompt
                _say("interrupted")
                continue
            if code is not None:
                return code

    def act(self, text: str) -> int | None:
        """One line: a command, a turn, or nothing; None to go on, else the exit code."""
        if text.startswith(CHAT_PREFIX):
            if text[1:].split()[:1] in ([word] for word in LEAVE):
                return 0
            self.command(text[1:])
        elif text and self.turn(text) == signal.SIGTERM:
            return 128 + signal.SIGTERM
        if _closed(sys.stdout):
            _say("rienda: standard output was closed, so the chat stopped")
            return 1
        return None

    @property
    def prompt(self) -> str:
        return f"{self.session.agent_id}> "

    def turn(self, prompt: str) -> int | None:
        """Run ``prompt`` as a turn of the current conversation; Ctrl-C or SIGTERM stops
        it. Returns the number of the first signal that came, or None."""
        try:
            conversation = self.session.conversation
        except RiendaError as exc:  # the current agent cannot be loaded any more
            _say(error_line(exc))
            return None
        ui = TerminalUI(self.session.turn_policy(), self.stdin if self.terminal else None,
                        allow_hint=CHAT_ALLOW_HINT, see_all=SHOW_SEE_ALL)
        cancel = CancelToken()
        if isinstance(sys.stdout, OutputStream):  # closed (| head -1): the turn stops, on a thread of its own
            sys.stdout.on_closed = lambda: threading.Thread(target=cancel.cancel, name="rienda-stop", daemon=True).start()
        result, stopped_by = run_interruptibly(lambda cancel: conversation.run(prompt, ui, cancel), cancel,
                                               signals=_TURN_STOPS)
        if result.reason == "interrupted":
            _say("interrupted; the session kept what was produced")
        if result.session_id:
            usage = usage_summary([m.usage for m in result.messages if m.role == "assistant"], result.context)
            print(f"session {result.session_id}" + (f" · {usage}" if usage else ""), file=sys.stderr)
        return stopped_by

    def command(self, text: str) -> None:
        """``text`` (after the ``/``) as a command of the table, its output on stdout; a
        mistake is one line on stderr."""
        name, _, rest = text.partition(" ")
        if not name:  # a lone /
            name = "help"
        if name in NOTEBOOK_ONLY or (name == "help" and rest.strip() in NOTEBOOK_ONLY):
            name = rest.strip() if name == "help" else name
            _say(f"{CHAT_PREFIX}{name}: {NOTEBOOK_ONLY[name]}")
            return
        if name not in offered():
            hint = did_you_mean(name, [*offered(), *LEAVE], shown=lambda command: CHAT_PREFIX + command)
            _say(f"unknown command {CHAT_PREFIX}{name}{hint}; {CHAT_PREFIX}help lists them")
            return
        try:
            print(chat_help() if name == "help" and not rest.strip() else run_rienda_command(self.session, text).text)
        except CommandError as exc:
            _say(str(exc))

    def goodbye(self) -> None:
        """One line: the session to come back to (or that none was started)."""
        session_id = self.session.session_id
        if session_id is None:
            _say("bye (no session was started)")
        else:
            _say(f"bye: session {session_id} (rienda chat --resume {session_id} continues it)")


def offered() -> list[str]:
    """The names of the table's commands that chat offers, in the table's order."""
    return [name for name in subcommands() if name not in NOTEBOOK_ONLY]


def chat_help() -> str:
    """What chat offers: a turn, each command of the table it offers, and leaving."""
    subs = [sub for name, sub in subcommands().items() if name in offered()]
    rows = [(f"{CHAT_PREFIX}{sub.usage}", sub.help) for sub in subs]
    rows += [(f"{CHAT_PREFIX}exit", "Leave (Ctrl-D too); the session is saved.")]
    width = max(len(usage) for usage, _ in rows)
    lines = ["Type a prompt to run a turn of the current agent (Ctrl-C stops it). Commands:"]
    return "\n".join(lines + [f"{usage.ljust(width)}  {text}" for usage, text in rows])


def _closed(stream: IO[str]) -> bool:
    """True once the reader of ``stream`` (an :class:`OutputStream`) went away."""
    return isinstance(stream, OutputStream) and stream.closed_early


def _say(line: str) -> None:
    print(line, file=sys.stderr)


@contextmanager
def _line_editing(chat: Chat) -> Iterator[Callable[[], str | None]]:
    """A function that reads the next line (None at EOF): at a terminal, with the prompt,
    line editing, history and Tab completion of commands (readline, where Python has it);
    on a pipe, the line as it comes."""
    if not chat.terminal:
        yield lambda: chat.stdin.readline() or None
        return
    editing = _readline()
    history = chat.session.rienda.home / HISTORY_FILE
    gnu = editing is not None and "GNU readline" in (editing.__doc__ or "")
    if editing is not None:
        _load_history(editing, history)
        editing.set_completer(_completer(editing))
        editing.parse_and_bind("tab: complete")
        if gnu:  # Ctrl-C at the prompt: the line is cleared and given back empty
            editing.parse_and_bind(r'"\C-c": "\C-a\C-k\C-m"')
    try:
        yield lambda: _typed(chat.prompt, chat.stdin if gnu else None)
    finally:
        if editing is not None:
            _save_history(editing, history)


def _typed(prompt: str, key_terminal: IO[str] | None) -> str | None:
    """A line typed at the terminal after ``prompt`` (None at Ctrl-D; "" when Ctrl-C
    cleared it). ``input`` edits the line only when sys.stdout is the terminal's own
    stream, so the prompt (no secret in it) goes around the scrubbing wrapper. With a
    ``key_terminal``, Ctrl-C is a key there while the line is read (see
    :func:`_ctrl_c_as_a_key`), else SIGINT's KeyboardInterrupt."""
    wrapped = sys.stdout
    real = wrapped.stream if isinstance(wrapped, OutputStream) else wrapped
    sys.stdout = real
    try:
        with _ctrl_c_as_a_key(key_terminal):
            return input(prompt)
    except EOFError:
        real.write("\n")
        return None
    except KeyboardInterrupt:  # Ctrl-C at the prompt: the line is dropped, the chat goes on
        real.write("\n")
        return ""
    finally:
        real.flush()
        sys.stdout = wrapped


@contextmanager
def _ctrl_c_as_a_key(terminal: IO[str] | None) -> Iterator[None]:
    """While the block runs, Ctrl-C on ``terminal`` is a key for readline (bound to clear
    the line) rather than the terminal's SIGINT: the system may hand that signal to any
    thread, and readline's wait on the main thread wakes only for one handed to it (a
    turn's threads are still there). ``terminal`` None, or not a terminal: nothing changes."""
    import termios

    try:
        fd = terminal.fileno() if terminal is not None else -1
        saved = termios.tcgetattr(fd)
        keys = [*saved[:6], list(saved[6])]
        keys[6][termios.VINTR] = bytes([os.fpathconf(fd, "PC_VDISABLE")])
        termios.tcsetattr(fd, termios.TCSANOW, keys)
    except (OSError, ValueError, termios.error):
        yield
        return
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


class _LineEditing(Protocol):
    """What chat uses of the :mod:`readline` module (the module itself is one)."""

    def set_history_length(self, length: int, /) -> None: ...
    def read_history_file(self, filename: Path, /) -> None: ...
    def write_history_file(self, filename: Path, /) -> None: ...
    def set_completer(self, function: Callable[[str, int], str | None], /) -> None: ...
    def parse_and_bind(self, string: str, /) -> None: ...
    def get_line_buffer(self) -> str: ...


def _readline() -> _LineEditing | None:
    """Python's readline module, or None where it has none (the prompt still works)."""
    try:
        import readline
    except ImportError:
        return None
    return readline


def _load_history(editing: _LineEditing, history: Path) -> None:
    editing.set_history_length(HISTORY_LENGTH)
    try:
        editing.read_history_file(history)
    except FileNotFoundError:
        pass
    except OSError as exc:
        _say(f"warning: the chat history {history} cannot be read: {error_line(exc)}")


def _save_history(editing: _LineEditing, history: Path) -> None:
    try:
        history.parent.mkdir(parents=True, exist_ok=True)
        editing.write_history_file(history)
    except OSError as exc:
        _say(f"warning: the chat history cannot be saved to {history}: {error_line(exc)}")


def _completer(editing: _LineEditing) -> Callable[[str, int], str | None]:
    """Tab on ``/``: the names of the commands chat offers."""
    def complete(text: str, state: int) -> str | None:
        line = editing.get_line_buffer()
        if not line.startswith(CHAT_PREFIX) or " " in line:
            return None
        matches = [name + " " for name in [*offered(), *LEAVE] if name.startswith(text)]
        return matches[state] if state < len(matches) else None

    return complete
