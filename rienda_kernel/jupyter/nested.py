"""A sub-agent's run in the cell, nested under its ``agent`` call.

The engine tags every event of a child run with its ``depth`` and brackets it with the
child's ``RunStart`` and ``RunEnd`` (between its ``agent`` call and that call's result);
calls run one at a time, so the run a depth-``n`` event belongs to is the one open at that
depth. :class:`Nest` keeps those runs as a stack and shows the outermost one (depth 1) as
one display, right below the call that started it, updated in place while someone watches
(at most every :data:`_UPDATE_EVERY` seconds, at once when it ends, and at once before a
confirm blocks the run: :meth:`Nest.flush`); a grandchild is drawn inside its parent's box,
and so on down.

While the run goes on the box shows everything: its messages (streaming text with a
cursor), its tool calls with their arguments, the hooks that refused or rewrote them and
their results, ``ctx.log`` lines and command output (the last lines of each, the rest
folded), notices and confirm records. Once it ends, it folds: its transcript behind a
``<details>``, its answer (or its error) visible. A batch run (no one watching) gets the
box once, final. Everything shown is HTML-escaped; the plain-text form lists the same.
"""

from __future__ import annotations

import html
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Literal, assert_never

from ..engine import (
    JSON,
    Compaction,
    Confirm,
    Diagnostic,
    Divergence,
    Event,
    HookDecision,
    Log,
    MessageSaved,
    Notify,
    Output,
    Replayed,
    RunEnd,
    RunStart,
    TextDelta,
    ThinkingDelta,
    ToolCallStarted,
    ToolResultReady,
    Waiting,
)
from ..frontend.hook_actions import hook_action, named_by_compaction
from ..frontend.previews import preview, readable
from .cell import CellTarget
from .views import new_id

__all__ = ["Nest", "RunBox"]

_UPDATE_EVERY = 0.05
_LAST_LINES = 12
_RESULT_CHARS = 2000
_OUTPUT_CHARS = 4000


def _e(text: object) -> str:
    return html.escape(str(text))


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"


@dataclass(frozen=True)
class _Note:
    """A message, a notice or a confirm record: its HTML and its text."""

    markup: str
    text: str

    def html(self) -> str:
        return self.markup

    def plain(self) -> str:
        return self.text


@dataclass
class _Call:
    """One tool call of a sub-agent's run."""

    name: str
    arguments: JSON  # as the tool received them
    refused_by: str | None
    notes: list[str] = field(default_factory=list)  # what hooks did to the call
    result: tuple[str, bool] | None = None
    after: list[str] = field(default_factory=list)  # what hooks did to its result

    def html(self) -> str:
        arguments = json.dumps(self.arguments, ensure_ascii=False)
        parts = [f"<div>🔧 <b>{_e(self.name)}</b> <code>{_e(arguments)}</code></div>"]
        parts += [f"<div style='margin-left: 1.5em'>– {_e(note)}</div>" for note in self.notes]
        if self.result is not None:
            text, is_error = readable(self.result[0]), self.result[1]
            mark = f"✗ {self.name} failed" if is_error else f"← {self.name}"
            parts.append(f"<div style='margin-left: 1.5em'>{_e(mark)}:<pre style='margin: 0; white-space: pre-wrap'>"
                         f"{_e(_short(text, _RESULT_CHARS))}</pre></div>")
        parts += [f"<div style='margin-left: 1.5em'>– {_e(note)}</div>" for note in self.after]
        return "".join(parts)

    def plain(self) -> str:
        lines = [f"tool {self.name} {json.dumps(self.arguments, ensure_ascii=False)}"]
        lines += [f"  {note}" for note in self.notes]
        if self.result is not None:
            shown = preview(self.result[0])
            more = shown.more_line("all of it: rienda show SESSION --full")
            lines.append(f"  {'✗' if self.result[1] else '←'} {self.name}: {shown.lines[0]}")
            lines += [f"    {line}".rstrip() for line in shown.lines[1:] + ([more] if more else [])]
        lines += [f"  {note}" for note in self.after]
        return "\n".join(lines)


@dataclass
class _Lines:
    """Consecutive ``ctx.log`` lines, or command output, from one source."""

    kind: Literal["log", "output"]
    source: str
    lines: list[str] = field(default_factory=list)

    def html(self) -> str:
        if self.kind == "output":
            text = "".join(self.lines)
            shown = text[-_OUTPUT_CHARS:]
            cut = f"<div style='opacity: 0.6'>… {len(text) - len(shown):,} earlier characters</div>" if len(
                shown) < len(text) else ""
            return f"{cut}<pre style='margin: 0; opacity: 0.85'>{_e(shown)}</pre>"
        earlier, last = self.lines[:-_LAST_LINES], self.lines[-_LAST_LINES:]
        folded = (f"<details><summary>{len(earlier)} more lines</summary><pre style='margin: 0'>"
                  f"{_e(chr(10).join(earlier))}</pre></details>") if earlier else ""
        return folded + f"<pre style='margin: 0'>{_e(chr(10).join(last))}</pre>"

    def plain(self) -> str:
        return "".join(self.lines).rstrip("\n") if self.kind == "output" else "\n".join(self.lines[-_LAST_LINES:])


class RunBox:
    """One sub-agent's run: what it showed so far, and its sub-agents' boxes inside it."""

    def __init__(self, start: RunStart) -> None:
        self.agent = start.agent
        self.session_id = start.session_id
        self.depth = start.depth
        self.items: list[_Note | _Call | _Lines | RunBox] = []
        self.calls: dict[str, _Call] = {}
        self.pending: dict[str, list[str]] = {}
        self.streaming: list[str] = []
        self.answer = ""
        self.end: RunEnd | None = None

    # -- what happens in the run ----------------------------------------------------------
    def add(self, event: Event) -> None:
        """One event of this run (``event.depth`` is this run's)."""
        match event:
            case TextDelta():
                self.streaming.append(event.text)
            case ThinkingDelta():
                pass  # a sub-agent's thinking is not shown
            case MessageSaved():
                self.streaming = []
                text = str(event.message.get("text") or "")
                if text:
                    self.answer = text
                    self.items.append(_Note(f"<div style='white-space: pre-wrap'>{_e(text)}</div>", text))
            case ToolCallStarted():
                call = _Call(event.name, event.arguments, event.refused_by, self.pending.pop(event.id, []))
                self.calls[event.id] = call
                self.items.append(call)
            case ToolResultReady():
                called = self.calls.get(event.id)
                if called is not None:
                    called.result = (event.text, event.isError)
            case HookDecision():
                self._decision(event)
            case Log():
                self._lines("log", event)
            case Output():
                self._lines("output", event)
            case Notify():
                self.items.append(_Note(f"<div>🔔 <b>{_e(event.title)}</b> — {_e(event.body)}</div>",
                                        f"🔔 {event.title}: {event.body}"))
            case Confirm():
                mark, verdict = event.mark, event.verdict
                detail = f"({event.how}; asked by {event.source})"
                self.items.append(_Note(f"<div>{mark} <b>{_e(event.title)}</b>: {verdict} <span style='opacity: 0.7'>"
                                        f"{_e(detail)}</span><pre style='margin: 0'>{_e(event.body)}</pre></div>",
                                        f"{mark} {event.title}: {verdict} {detail}\n  {event.body}"))
            case Compaction():
                line = f"🗜 {event.message}"
                self.items.append(_Note(f"<div style='opacity: 0.7'>{_e(line)}</div>", line))
            case Divergence():
                line = f"↯ {event.message}"
                self.items.append(_Note(f"<div>{_e(line)}</div>", line))
            case Replayed():
                pass  # its answer is shown as any answer is
            case RunEnd():
                self.end = event
                self.streaming = []
            case RunStart():
                pass  # a run's start opens its box (:meth:`Nest.emit`)
            case Diagnostic():
                pass  # shown once per notebook by the cell's renderer, never in a box
            case Waiting():
                pass  # said in the cell's status line while the hook runs
            case _:
                assert_never(event)

    def _decision(self, event: HookDecision) -> None:
        """What a hook did: with its call (before the call exists, held for it), or a line
        of its own for a model request's or answer's rewrite."""
        note = hook_action(event)
        if note is None or named_by_compaction(event):
            return  # a compaction's own line names the hooks that acted
        if event.call_id is None:
            if event.effect == "rewrote":
                self.items.append(_Note(f"<div style='opacity: 0.7'>{_e(note)}</div>", note))
            return
        call = self.calls.get(event.call_id)
        if call is None:
            self.pending.setdefault(event.call_id, []).append(note)
        else:
            (call.after if event.point == "afterToolExecute" else call.notes).append(note)

    def _lines(self, kind: Literal["log", "output"], event: Log | Output) -> None:
        last = self.items[-1] if self.items else None
        if not (isinstance(last, _Lines) and last.kind == kind and last.source == event.source):
            last = _Lines(kind, event.source)
            self.items.append(last)
        last.lines.append(f"[{event.source}] {event.text}" if kind == "log" else event.text)

    # -- how it looks ---------------------------------------------------------------------
    def title(self) -> str:
        where = f"sub-agent <b>{_e(self.agent)}</b> <span style='opacity: 0.7'>(session {_e(self.session_id)})</span>"
        if self.end is None:
            return f"↳ {where} · running…"
        calls = len(self.calls)
        ended = "" if self.end.reason == "end_turn" else f" · {_e(self.end.reason)}"
        return f"↳ {where} · {calls} tool call{'s' if calls != 1 else ''}{ended}"

    def html(self) -> str:
        body = "".join(item.html() for item in self.items)
        if self.streaming:
            body += f"<div style='white-space: pre-wrap'>{_e(''.join(self.streaming))} ▍</div>"
        box = "border-left: 3px solid #9e9e9e; padding: 2px 0 2px 10px; margin: 4px 0 4px 1em"
        if self.end is None:
            return f"<div style='{box}'><div>{self.title()}</div>{body}</div>"
        if self.end.reason == "end_turn":
            outcome = f"<div style='white-space: pre-wrap'><b>answer:</b> {_e(self.answer)}</div>"
        else:
            outcome = f"<div style='color: #c62828'>ended: {_e(self.end.reason)}" + (
                f": {_e(self.end.error)}" if self.end.error else "") + "</div>"
        return f"<div style='{box}'><details><summary>{self.title()}</summary>{body}</details>{outcome}</div>"

    def plain(self) -> str:
        pad = "  "
        lines = [f"↳ sub-agent {self.agent} (session {self.session_id})"]
        for item in self.items:
            lines += [pad + line if line else "" for line in item.plain().splitlines()]
        if self.end is not None:
            lines.append(pad + (f"answer: {self.answer}" if self.end.reason == "end_turn"
                                else f"ended: {self.end.reason}" + (f": {self.end.error}" if self.end.error else "")))
        return "\n".join(lines)


class Nest:
    """The sub-agents' runs of one cell (see the module docstring). Events may come from
    any thread; one lock keeps the boxes and the display in step, and a display skipped
    to keep updates apart is made by a timer once the interval has passed."""

    def __init__(self, target: CellTarget, live: bool) -> None:
        self.target = target
        self.live = live
        self._open: list[RunBox] = []  # the runs open now, outermost first
        self._root: RunBox | None = None  # the outermost run shown now (open, or just ended)
        self._display_id = ""
        self._shown = False
        self._last = 0.0
        self._lock = threading.RLock()
        self._trailing: threading.Timer | None = None

    def emit(self, event: Event) -> None:
        """One event of a sub-agent's run (``event.depth`` > 0)."""
        with self._lock:
            if isinstance(event, RunStart):
                self._start(event)
                return
            box = self._open[event.depth - 1] if 0 < event.depth <= len(self._open) else None
            if box is None:
                return
            box.add(event)
            if isinstance(event, RunEnd):
                del self._open[event.depth - 1:]
                self._render(final=not self._open)
            else:
                self._render(final=False, soon=True)

    def flush(self) -> None:
        """Show now an update held back to keep updates apart: called before the run
        blocks (a confirm waits), so everything the sub-agents did is in the cell first."""
        with self._lock:
            if self._trailing is not None:
                self._render(final=False)

    def agent_at(self, depth: int) -> str:
        """The agent of the run open at ``depth`` (the sub-agents' names down to it)."""
        with self._lock:
            return " › ".join(box.agent for box in self._open[:depth])

    def _start(self, event: RunStart) -> None:
        box = RunBox(event)
        del self._open[max(event.depth - 1, 0):]
        if self._open:
            self._open[-1].items.append(box)
        else:
            self._root, self._display_id, self._shown = box, new_id("subagent"), False
        self._open.append(box)
        self._render(final=False)

    def _render(self, final: bool, soon: bool = False) -> None:
        """Show the outermost box: when it ends (``final``), or, when someone watches, now
        or (``soon``: an update among many) once :data:`_UPDATE_EVERY` has passed."""
        if self._root is None or (not final and not self.live):
            return
        if soon and self._shown and time.monotonic() - self._last < _UPDATE_EVERY:
            if self._trailing is None:
                self._trailing = threading.Timer(_UPDATE_EVERY, self._render_trailing)
                self._trailing.daemon = True
                self._trailing.start()
            return
        if self._trailing is not None:
            self._trailing.cancel()
            self._trailing = None
        self._last = time.monotonic()
        root = self._root
        self.target.display(self._display_id, {"text/plain": root.plain(), "text/html": root.html()},
                            update=self._shown)
        self._shown = True

    def _render_trailing(self) -> None:
        with self._lock:
            self._trailing = None
            if self._root is not None and (self._open or self._root.end is None):
                self._render(final=False)
