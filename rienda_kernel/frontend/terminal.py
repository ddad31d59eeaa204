"""The terminal front end: how ``rienda run``, ``rienda chat`` and the ``%rienda`` magics
in a terminal IPython (with no kernel to show widgets) show events and ask confirms.

Assistant text goes to stdout as it streams; everything else (thinking, tool activity,
logs, command output, notices, diagnostics) goes to stderr. A sub-agent's run (the
``agent`` tool) goes to stderr too, under its call, indented two spaces per level: where it
starts and ends, its tool calls, logs and notices, and its messages as saved. With
``--json`` every event is one JSON object per line on stdout instead (each with its
``depth``).
"""

from __future__ import annotations

import json
import os
import select
import sys
import threading
from typing import IO, assert_never

from ..engine import (
    ASK_PROMPT,
    Answer,
    CancelToken,
    Compaction,
    Confirm,
    ConfirmPolicy,
    ContextFill,
    Diagnostic,
    Divergence,
    Event,
    HookDecision,
    Log,
    MessageSaved,
    Notify,
    Output,
    PersonAsker,
    Replayed,
    RunEnd,
    RunStart,
    TextDelta,
    ThinkingDelta,
    ToolCallStarted,
    ToolResultReady,
    Usage,
    Waiting,
    typed_answer,
)
from .hook_actions import hook_action, named_by_compaction
from .previews import preview

__all__ = ["CHAT_ALLOW_HINT", "CLI_ALLOW_HINT", "CLI_SEE_ALL", "MAGICS_ALLOW_HINT", "SHOW_SEE_ALL", "JsonLinesUI",
           "TerminalPrompt", "TerminalUI", "replay_note", "usage_summary"]


class TerminalPrompt:
    """A person at a terminal: the question on ``prompt_to``, a y/N line from ``stdin``."""

    def __init__(self, stdin: IO[str], prompt_to: IO[str]) -> None:
        self._stdin = stdin
        self._prompt_to = prompt_to

    def ask(self, title: str, body: str, cancel: CancelToken) -> Answer:
        self._prompt_to.write(f"\n? {title}\n  {body}\n  {ASK_PROMPT}")
        self._prompt_to.flush()
        line = _read_line(self._stdin, cancel)
        return Answer(False, "interrupted", "y/N") if line is None else typed_answer(line)


class _AnsweringUI(PersonAsker):
    """A terminal front end with its confirm ``policy``; under ``ask``, a terminal on
    ``stdin`` is asked y/N; without one, nobody can be asked. Its subclasses are the sink
    of events (``emit``)."""

    def __init__(self, policy: ConfirmPolicy, stdin: IO[str] | None, prompt_to: IO[str]) -> None:
        super().__init__(policy=policy, person=TerminalPrompt(stdin, prompt_to) if stdin is not None else None)


def _read_line(stream: IO[str], cancel: CancelToken) -> str | None:
    """A line from ``stream``, or None once ``cancel`` is set (a pipe the cancel writes to
    wakes the wait at once: no polling)."""
    wake_read, wake_write = os.pipe()
    guard = threading.Lock()
    closed: list[bool] = []

    def wake() -> None:  # on the cancelling thread, maybe after the line came: never on a closed pipe
        with guard:
            if not closed:
                os.write(wake_write, b"x")

    unregister = cancel.on_cancel(wake)
    try:
        watched: list[IO[str] | int] = [stream, wake_read]
        ready, _, _ = select.select(watched, [], [])
        return None if cancel.cancelled or stream not in ready else stream.readline()
    finally:
        unregister()
        with guard:
            closed.append(True)
            os.close(wake_read)
            os.close(wake_write)


# What a confirm refused by policy (or with nobody to ask) adds: how to allow it.
CLI_ALLOW_HINT = "to allow it: --yes, --confirm allow, or RIENDA_CONFIRM=allow"
MAGICS_ALLOW_HINT = "to allow it: %rienda confirm allow"
CHAT_ALLOW_HINT = "to allow it: /confirm allow, or rienda chat --yes"
_POLICY_DENIALS = ("default-deny", "auto-deny")
# Where a result's preview says all of it can be seen ({session}: the run's session):
# rienda run's option, or the session shown whole (the magics, rienda chat).
CLI_SEE_ALL = "-v shows all of it"
SHOW_SEE_ALL = "all of it: rienda show {session} --full"
_SHOWN_ELSEWHERE = ("none", "threw", "invalid")  # a throw or an unusable value: its Diagnostic is the line


class TerminalUI(_AnsweringUI):
    """Text to stdout as it streams; activity to stderr. A confirm that the policy (or
    nobody to ask) refused says how to allow it (``allow_hint``: the front end's way).

    What hooks did is shown where it happened: under a call, the hooks that refused it or
    rewrote its arguments (before → after); under its result, the hooks that rewrote the
    result; a rewrite of a model request or answer as a line of its own (see
    :mod:`rienda_kernel.frontend.hook_actions`). A hook that threw is its diagnostic's line. A
    result shows its first lines, JSON pretty-printed (:mod:`rienda_kernel.frontend.previews`),
    and says how to see all of it (``see_all``); ``verbose`` shows every result whole."""

    def __init__(self, policy: ConfirmPolicy, stdin: IO[str] | None,
                 out: IO[str] | None = None, err: IO[str] | None = None, *, allow_hint: str = CLI_ALLOW_HINT,
                 verbose: bool = False, see_all: str = CLI_SEE_ALL) -> None:
        out, err = out or sys.stdout, err or sys.stderr  # as they are now (the command wraps them)
        super().__init__(policy, stdin, err)
        self.out, self.err = out, err
        self.allow_hint = allow_hint
        self.verbose = verbose
        self.see_all = see_all
        self._session: str | None = None
        self._notes: dict[tuple[int, str | None, str], list[str]] = {}  # a call's hook actions, to show with it
        self._text_open = False
        self._thinking_open = False
        self._sub_line_start = True  # a sub-agent's next piece starts a line (gets its indent)
        self._output_open = False  # a command's output, at the top, ended mid-line
        self.replayed = 0  # the top-level run's model turns answered from a recording
        self._dim = ("\x1b[2m", "\x1b[0m") if getattr(err, "isatty", lambda: False)() else ("", "")
        self._lock = threading.RLock()  # events come from the run's thread and from a hook's watch

    def emit(self, event: Event) -> None:
        with self._lock:
            self._emit(event)

    def _emit(self, event: Event) -> None:
        if isinstance(event, RunStart) and not event.depth:
            self._session = event.session_id
        if isinstance(event, Replayed) and not event.depth and event.purpose == "turn":
            self.replayed += 1
        if isinstance(event, HookDecision) and not self._held(event):
            return
        if event.depth:
            self._sub_agent(event)
            return
        if isinstance(event, ThinkingDelta):
            opening = "" if self._thinking_open else "thinking: "
            self.err.write(f"{self._dim[0]}{opening}{event.text}{self._dim[1]}")
            self.err.flush()
            self._thinking_open = True
            return
        if self._thinking_open:
            self.err.write("\n")
            self._thinking_open = False
        if isinstance(event, TextDelta):
            self.out.write(event.text)
            self.out.flush()
            self._text_open = True
            return
        line = self._line(event)
        if self._text_open and (line or isinstance(event, RunEnd)):  # the answer's line ends first
            self.out.write("\n")
            self.out.flush()
            self._text_open = False
        if line:
            if self._output_open and not isinstance(event, Output):  # a command's last line ends first
                self.err.write("\n")
            self._output_open = isinstance(event, Output) and not line.endswith("\n")
            self.err.write(line)
            self.err.flush()

    def _held(self, event: HookDecision) -> bool:
        """Keeps a call's hook action to show with the call or its result; True for one
        shown now (a model request's or answer's rewrite)."""
        line = hook_action(event)
        if line is None or event.effect in _SHOWN_ELSEWHERE or named_by_compaction(event):
            return False  # a compaction's own line names the hooks that acted
        if event.call_id is None:
            return True
        self._notes.setdefault((event.depth, event.session_id, event.call_id), []).append(line)
        return False

    def _sub_agent(self, event: Event) -> None:
        """A sub-agent's event: indented on stderr (its text as saved, not streamed)."""
        line = self._sub_agent_line(event)
        if not line:
            return
        if self._thinking_open:
            self.err.write("\n")
            self._thinking_open = False
        if self._text_open:
            self.out.write("\n")
            self.out.flush()
            self._text_open = False
        pad = "  " * event.depth
        if not self._sub_line_start and not isinstance(event, Output):  # a command's last line ends first
            self.err.write("\n")
            self._sub_line_start = True
        for piece in line.splitlines(keepends=True):  # command output may come in pieces of lines
            self.err.write((pad if self._sub_line_start else "") + piece)
            self._sub_line_start = piece.endswith("\n")
        self.err.flush()

    def _sub_agent_line(self, event: Event) -> str | None:
        """What stderr shows, indented, for a sub-agent's ``event``; None for nothing."""
        match event:
            case RunStart():
                return f"┌ sub-agent {event.agent} (session {event.session_id})\n"
            case RunEnd():
                return f"└ sub-agent ended: {event.reason}" + (f": {event.error}" if event.error else "") + "\n"
            case MessageSaved():
                text = str(event.message.get("text") or "").strip()
                return f"{text}\n" if text else None
            case TextDelta() | ThinkingDelta():
                return None  # a sub-agent's text is shown as saved
            case (ToolCallStarted() | ToolResultReady() | HookDecision() | Confirm() | Log() | Output() | Notify()
                  | Diagnostic() | Compaction() | Divergence() | Waiting()):
                return self._line(event)
            case Replayed():
                return None  # its answer is shown as any answer is
            case _:
                assert_never(event)

    def _line(self, event: Event) -> str | None:
        """What stderr shows for ``event`` (a line, or lines); None for what is shown
        elsewhere or not at all."""
        match event:
            case ToolCallStarted():
                args = json.dumps(event.arguments, ensure_ascii=False)
                notes = self._notes.pop((event.depth, event.session_id, event.id), [])
                return f"→ {event.name} {args}\n" + "".join(f"  {note}\n" for note in notes)
            case ToolResultReady():
                notes = self._notes.pop((event.depth, event.session_id, event.id), [])
                return self._result(event) + "".join(f"  {note}\n" for note in notes)
            case HookDecision():
                return f"{hook_action(event)}\n"
            case Confirm():
                line = f"[{event.source}] confirm {event.title!r}: {event.verdict} ({event.how})"
                if not event.answer and event.how in _POLICY_DENIALS:
                    return f"{line}; {self.allow_hint}\n"
                return f"{line}\n"
            case Log():
                return f"[{event.source}] {event.text}\n"
            case Output():
                return event.text
            case Notify():
                return f"[{event.source}] notice: {event.title}: {event.body}\n"
            case Diagnostic():
                return f"diagnostic: {event.message}\n"
            case Compaction():
                return f"[rienda] {event.message}\n"
            case Divergence():
                return f"[rienda] ↯ {event.message}\n"
            case Waiting():
                return f"waiting on {event.subject()}… Ctrl-C stops it\n"
            case RunEnd():
                return f"rienda: {event.error}\n" if event.error else None
            case RunStart() | TextDelta() | ThinkingDelta() | MessageSaved() | Replayed():
                return None  # text and thinking stream to their own places; a saved message was streamed
            case _:
                assert_never(event)

    def _result(self, event: ToolResultReady) -> str:
        """A result's first lines (all of them when ``verbose``), indented under its mark."""
        shown = preview(event.text, None, None) if self.verbose else preview(event.text)
        mark = f"{'✗' if event.isError else '←'} {event.name}:"
        if len(shown.lines) == 1 and not shown.more:
            return f"{mark} {shown.lines[0]}\n"
        more = shown.more_line(self.see_all.format(session=self._session or "ID"))
        return mark + "\n" + "".join(f"    {line}".rstrip() + "\n" for line in shown.lines + ([more] if more else []))


def replay_note(usages: list[Usage | None], replayed: int) -> str:
    """What a run's usage line adds when ``replayed`` of its model turns came from a recording:
    `` (replayed: 0 spent now)`` when all did, else how many and what the live ones spent.
    Every notebook status line and ``rienda run``'s say it in these words (one sanitize rule
    makes a replay's line equal to the recorded run's)."""
    if replayed >= len(usages):
        return " (replayed: 0 spent now)"
    live = [usage for usage in usages[replayed:] if usage is not None]
    spent = f"{sum(u.input_tokens for u in live):,} in · {sum(u.output_tokens for u in live):,} out"
    return f" (replayed {replayed} of {len(usages)}: {spent} spent now)"


class JsonLinesUI(_AnsweringUI):
    """Every event as one JSON object per line on ``out``."""

    def __init__(self, policy: ConfirmPolicy, stdin: IO[str] | None,
                 out: IO[str] | None = None, err: IO[str] | None = None) -> None:
        super().__init__(policy, stdin, err or sys.stderr)
        self.out = out or sys.stdout
        self.replayed = 0  # as TerminalUI's; its events say which turns were replayed
        self._lock = threading.Lock()  # events come from the run's thread and from a hook's watch

    def emit(self, event: Event) -> None:
        with self._lock:
            self.out.write(json.dumps(event.to_dict(), ensure_ascii=False) + "\n")
            self.out.flush()


def usage_summary(usages: list[Usage | None], context: ContextFill | None = None, replayed: int = 0) -> str:
    """The token usage of these model turns (None: a turn whose server reported none), as
    ``rienda run``'s last line and ``rienda show``'s total show it; "" for no turn. With
    ``context`` whose window is known, how full that window is: ``· context 61 % of 8,192``.
    ``replayed``: how many of the turns (the first ones) were answered from a recording, the
    usage theirs when recorded: said as ``(replayed: 0 spent now)``, or how many and what the
    others spent."""
    if not usages:
        return ""
    if replayed:
        return usage_summary(usages, context) + replay_note(usages, replayed)
    reported = [usage for usage in usages if usage is not None]
    turns = f"{len(usages)} model turn{'s' if len(usages) != 1 else ''}"
    fill = f" · {context.line()}" if context and context.window else ""
    if not reported:
        return f"usage: none reported by the model ({turns})" + fill
    missing = len(usages) - len(reported)
    return (f"usage: {sum(u.input_tokens for u in reported)} in, {sum(u.output_tokens for u in reported)} out "
            f"over {turns}" + (f" ({missing} reported none)" if missing else "") + fill)
