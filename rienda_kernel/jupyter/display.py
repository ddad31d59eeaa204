"""Showing a Rienda run in a notebook cell, live; shared by the kernel and the magics.

:class:`NotebookUI` turns engine events into Jupyter messages on the cell's
:class:`~rienda_kernel.jupyter.cell.CellTarget`:

- a status line (elapsed time, tokens so far) while the model works, which ends as the
  tokens the provider reported for the run (or empty, when it reported none);
- the assistant's text streamed into one display, updated in place, ending as Markdown
  (the saved text, after ``afterModelResponse``; or, when the run stops mid-stream, what
  had arrived, without the cursor); thinking folded above it;
- each tool call with its arguments as the tool received them, its result (long results
  folded), and the hooks that refused or rewrote it;
- ``ctx.log`` lines and command output while the tool runs; a flood of log lines folds,
  its last lines in view; notices; diagnostics once per notebook;
- each confirm's static record (:func:`~rienda_kernel.jupyter.confirm.record_bundle`), in place of
  the buttons when a person was asked.

A front end that watches (its request allows stdin) gets the live view; a batch run
(nbclient, nbconvert, papermill, nbval) gets each display once, final. How a confirm is
answered is not decided here: the UI states its policy and, when stdin is allowed, a
:class:`~rienda_kernel.jupyter.confirm.NotebookPerson`; the engine's ``decide`` picks.
"""

from __future__ import annotations

import html
import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from .cell import CellTarget
from .confirm import ClientViews, NotebookPerson, ShownConfirm, record_bundle
from ..engine import (
    UI,
    Answer,
    CancelToken,
    Confirm,
    Diagnostic,
    Event,
    HookDecision,
    Log,
    MessageSaved,
    Notify,
    Output,
    Policy,
    RunEnd,
    RunStart,
    TextDelta,
    ThinkingDelta,
    ToolCallStarted,
    ToolResultReady,
)

__all__ = ["NotebookUI"]

_FOLD_LINES = 12
_SHOW_AT_MOST = 10_000
_UPDATE_EVERY = 0.05


class NotebookUI(UI):
    """Renders one run into one cell. ``policy`` is the notebook's confirm setting;
    ``clients`` is the kernel's memory of which front ends display widgets."""

    def __init__(self, target: CellTarget, policy: Policy | None, seen_diagnostics: set[str],
                 clients: ClientViews) -> None:
        person = NotebookPerson(target, clients, self._confirm_shown) if target.allow_stdin else None
        super().__init__(record_events=False, policy=policy or "ask", person=person)
        self.target = target
        self.seen_diagnostics = seen_diagnostics
        self.final_text = ""
        self._status_id = _new_id("status")
        self._started = time.monotonic()
        self._chars = 0
        self._message: _MessageView | None = None
        self._logs: _LogView | None = None
        self._calls: dict[str, _CallView] = {}
        self._pending_decisions: dict[str, list[HookDecision]] = {}
        self._shown_confirm: ShownConfirm | None = None
        self._status_lock = threading.Lock()
        self._activity = "working…"
        self._usage: list[dict[str, int]] = []  # what the provider reported, per model turn
        # Someone is watching (JupyterLab, VS Code, console): stream, show a status line. A
        # batch run (nbclient, nbconvert, papermill, nbval) gets each display once, final.
        self.live = target.allow_stdin
        self._done = threading.Event()

    # -- events ------------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        handler = _HANDLERS.get(type(event))
        if handler is None:
            return
        if self._logs is not None and not isinstance(event, (Log, Output, Diagnostic)):
            self._end_logs()
        handler(self, event)

    def _run_start(self, event: RunStart) -> None:
        if not self.live:
            return
        self.target.display(self._status_id, _status_bundle("working…", 0, 0))
        threading.Thread(target=self._tick, name="rienda-status", daemon=True).start()

    def _tick(self) -> None:
        while not self._done.wait(0.5):
            self._update_status(self._activity)

    def _update_status(self, what: str) -> None:
        with self._status_lock:
            if not self._done.is_set():
                elapsed = time.monotonic() - self._started
                self.target.display(self._status_id, _status_bundle(what, elapsed, self._chars // 4), update=True)

    def _text(self, event: TextDelta) -> None:
        self._chars += len(event.text)
        self._view().add_text(event.text)

    def _thinking(self, event: ThinkingDelta) -> None:
        self._chars += len(event.text)
        self._view().add_thinking(event.text)

    def _view(self) -> _MessageView:
        if self._message is None:
            self._message = _MessageView(self.target, self.live)
        return self._message

    def _saved(self, event: MessageSaved) -> None:
        message = event.message
        view = self._view()
        view.finish(message.get("text", ""), message.get("thinking", ""))
        if message.get("text"):
            self.final_text = message["text"]
        if message.get("usage"):
            self._usage.append(message["usage"])
        self._message = None

    def _tool_call(self, event: ToolCallStarted) -> None:
        view = _CallView(self.target, event.name, event.arguments, event.refused_by)
        self._calls[event.id] = view
        for decision in self._pending_decisions.pop(event.id, []):
            view.add_decision(decision)
        view.render()

    def _tool_result(self, event: ToolResultReady) -> None:
        """The result gets its own output, below what the tool printed while it ran."""
        view = self._calls.get(event.id) or _CallView(self.target, event.name, None, None)
        view.result(event.text, event.isError)

    def _decision(self, event: HookDecision) -> None:
        """Hook effects on a call: before it, shown with the call; after it, with the result."""
        if event.call_id is None or event.effect == "none":
            return
        view = self._calls.get(event.call_id)
        if view is None:
            self._pending_decisions.setdefault(event.call_id, []).append(event)
        else:
            view.add_decision(event)

    def _log(self, event: Log) -> None:
        if self._logs is not None and self._logs.source != event.source:
            self._end_logs()
        if self._logs is None:
            self._logs = _LogView(self.target, self.live, event.source)
        self._logs.add(event.text)

    def _end_logs(self) -> None:
        self._logs.finish()
        self._logs = None

    def _output(self, event: Output) -> None:
        self.target.stream(event.stream if event.stream in ("stdout", "stderr") else "stdout", event.text)

    def _notify(self, event: Notify) -> None:
        self.target.display(_new_id("notice"), {
            "text/plain": f"🔔 {event.title}: {event.body}",
            "text/markdown": f"> 🔔 **{_md(event.title)}** — {_md(event.body)}"})

    def _confirm_shown(self, shown: ShownConfirm) -> None:
        self._shown_confirm = shown

    def _confirm(self, event: Confirm) -> None:
        """The record of the answer: in place of the buttons, or as an output of its own."""
        shown, self._shown_confirm = self._shown_confirm, None
        if shown is not None:
            shown.replace(record_bundle(event))
        else:
            self.target.display(_new_id("confirm"), record_bundle(event))

    def _diagnostic(self, event: Diagnostic) -> None:
        if event.message in self.seen_diagnostics:
            return
        self.seen_diagnostics.add(event.message)
        self.target.stream("stderr", f"⚠ {event.message}\n")

    def _run_end(self, event: RunEnd) -> None:
        """A message cut short (an interrupt, a failure) ends as it stood, without the
        cursor; the status line gives way to the answer: it is emptied, or becomes the
        tokens the provider reported for the run."""
        self._done.set()
        if self._message is not None:
            self._message.finish("".join(self._message.text), "".join(self._message.thinking))
            self._message = None
        if self.live:
            with self._status_lock:
                self.target.display(self._status_id, _usage_bundle(self._usage, time.monotonic() - self._started),
                                    update=True)

    # -- confirm -------------------------------------------------------------------------
    def ask(self, title: str, body: str, cancel: CancelToken) -> Answer:
        """The engine's answer (:func:`~rienda_kernel.engine.ui.decide`); while a person
        is asked, the status line says so."""
        asking = self.interactive
        if asking:
            self._activity = f"waiting for your answer to “{title}”…"
            self._update_status(self._activity)
        try:
            return super().ask(title, body, cancel)
        finally:
            if asking:
                self._activity = "working…"


_HANDLERS: dict[type, Callable[[NotebookUI, Any], None]] = {
    RunStart: NotebookUI._run_start,
    TextDelta: NotebookUI._text,
    ThinkingDelta: NotebookUI._thinking,
    MessageSaved: NotebookUI._saved,
    ToolCallStarted: NotebookUI._tool_call,
    ToolResultReady: NotebookUI._tool_result,
    HookDecision: NotebookUI._decision,
    Log: NotebookUI._log,
    Output: NotebookUI._output,
    Notify: NotebookUI._notify,
    Diagnostic: NotebookUI._diagnostic,
    Confirm: NotebookUI._confirm,
    RunEnd: NotebookUI._run_end,
}


class _MessageView:
    """One assistant message's display, updated in place as text streams (when ``live``;
    otherwise shown once, final)."""

    def __init__(self, target: CellTarget, live: bool) -> None:
        self.target = target
        self.live = live
        self.display_id = _new_id("message")
        self.text: list[str] = []
        self.thinking: list[str] = []
        self._shown = False
        self._last = 0.0

    def add_text(self, text: str) -> None:
        self.text.append(text)
        self._render(final=False)

    def add_thinking(self, text: str) -> None:
        self.thinking.append(text)
        self._render(final=False)

    def finish(self, text: str, thinking: str) -> None:
        self.text, self.thinking = [text], [thinking]
        if text or thinking or self._shown:
            self._render(final=True)

    def _render(self, final: bool) -> None:
        now = time.monotonic()
        if not final and (not self.live or (self._shown and now - self._last < _UPDATE_EVERY)):
            return
        self._last = now
        text, thinking = "".join(self.text), "".join(self.thinking)
        markdown = ""
        if thinking:
            markdown += (f"<details><summary><i>thinking</i></summary>\n\n<span style='opacity:0.6'>"
                         f"{html.escape(thinking)}</span>\n\n</details>\n\n")
        markdown += text if final else text + " ▍"
        bundle = {"text/plain": text, "text/markdown": markdown}
        self.target.display(self.display_id, bundle, update=self._shown)
        self._shown = True


class _LogView:
    """``ctx.log`` lines from one source, in a row. The first lines are plain stream output
    (as they come); past :data:`_FOLD_LINES`, the rest go to one display showing the last
    lines, the earlier ones folded above them: updated in place when ``live`` (at most every
    :data:`_UPDATE_EVERY` seconds, and once more after the last line), else shown once,
    when the lines end."""

    def __init__(self, target: CellTarget, live: bool, source: str) -> None:
        self.target = target
        self.live = live
        self.source = source
        self.display_id = _new_id("log")
        self.lines: list[str] = []
        self._shown = False
        self._last = 0.0
        self._lock = threading.Lock()
        self._trailing: threading.Timer | None = None

    def add(self, text: str) -> None:
        line = f"[{self.source}] {text}"
        with self._lock:
            self.lines.append(line)
            if len(self.lines) <= _FOLD_LINES:
                self.target.stream("stdout", line + "\n")
            elif self.live and time.monotonic() - self._last >= _UPDATE_EVERY:
                self._render()
            elif self.live and self._trailing is None:
                self._trailing = threading.Timer(_UPDATE_EVERY, self._render_trailing)
                self._trailing.daemon = True
                self._trailing.start()

    def finish(self) -> None:
        with self._lock:
            if self._trailing is not None:
                self._trailing.cancel()
            if len(self.lines) > _FOLD_LINES:
                self._render()

    def _render_trailing(self) -> None:
        with self._lock:
            self._trailing = None
            self._render()

    def _render(self) -> None:
        self._last = time.monotonic()
        later = self.lines[_FOLD_LINES:]
        earlier, last = later[:-_FOLD_LINES], later[-_FOLD_LINES:]
        plain = "\n".join(([f"… {len(earlier)} more lines"] if earlier else []) + last)
        markup = ""
        if earlier:
            markup = (f"<details><summary>{len(earlier)} more lines</summary>"
                      f"<pre style='margin: 0'>{html.escape(chr(10).join(earlier))}</pre></details>")
        markup += f"<pre style='margin: 0'>{html.escape(chr(10).join(last))}</pre>"
        self.target.display(self.display_id, {"text/plain": plain, "text/html": markup}, update=self._shown)
        self._shown = True


class _CallView:
    """One tool call's display: arguments, hook effects, then the result."""

    def __init__(self, target: CellTarget, name: str, arguments: Any, refused_by: str | None) -> None:
        self.target = target
        self.display_id = _new_id("tool")
        self.name = name
        self.arguments = arguments
        self.refused_by = refused_by
        self.notes: list[str] = []
        self.after_notes: list[str] = []
        self._shown = False

    def add_decision(self, decision: HookDecision) -> None:
        notes = self.after_notes if decision.point == "afterToolExecute" else self.notes
        if decision.effect == "refused":
            notes.append(f"refused by hook **{decision.hook}**" + (f": {_md(decision.reason)}" if decision.reason else ""))
        elif decision.effect == "rewrote":
            fields = ", ".join(f"`{name}`" for name in decision.changes)
            notes.append(f"hook **{decision.hook}** ({decision.point}) rewrote {fields}")
        elif decision.effect in ("threw", "invalid"):
            notes.append(f"hook **{decision.hook}** ({decision.point}) {decision.effect}: {_md(decision.error or '')}")

    def result(self, text: str, is_error: bool) -> None:
        mark = f"✗ {self.name} failed" if is_error else f"← {self.name}"
        notes = "".join(f"\n\n- {note}" for note in self.after_notes)
        plain = "".join(f"\n  {note}" for note in self.after_notes)
        self.target.display(_new_id("result"), {"text/plain": f"{mark}: {_shortened(text)}{plain}",
                                                "text/markdown": _folded(mark, text) + notes})

    def render(self) -> None:
        code = _python_code(self.name, self.arguments)
        if code is not None:  # the notebook's python tool: its code as code
            fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", code)), default=0))
            lines = [f"🔧 **python**\n\n{fence}python\n{code}\n{fence}"]
            plain = ["tool python", *(f"    {line}" for line in code.splitlines())]
        else:
            arguments = json.dumps(self.arguments, ensure_ascii=False)
            lines = [f"🔧 **{_md(self.name)}** `{arguments}`"]
            plain = [f"tool {self.name} {arguments}"]
        lines += [f"- {note}" for note in self.notes]
        plain += [f"  {note}" for note in self.notes]
        self.target.display(self.display_id, {"text/plain": "\n".join(plain), "text/markdown": "\n\n".join(lines)},
                            update=self._shown)
        self._shown = True


def _python_code(name: str, arguments: object) -> str | None:
    """The code of a ``python`` tool call (arguments ``{code}`` only), else None."""
    if name == "python" and isinstance(arguments, dict) and set(arguments) == {"code"} \
            and isinstance(arguments["code"], str):
        return arguments["code"].rstrip("\n")
    return None


def _shortened(text: str) -> str:
    """Very long text in part (the model read all of it; the notebook need not store it all)."""
    if len(text) <= _SHOW_AT_MOST:
        return text
    return f"{text[:_SHOW_AT_MOST]}… ({len(text) - _SHOW_AT_MOST:,} more characters not shown)"


def _folded(label: str, text: str) -> str:
    """A result as a code block; long ones folded behind their first lines, and very long
    ones shown in part (the model read all of it; the notebook need not store it all)."""
    lines = text.splitlines() or [""]
    if len(lines) <= _FOLD_LINES and len(text) <= 2000:
        return f"{label}:\n\n```\n{text}\n```"
    head = "\n".join(line[:200] for line in lines[:3])
    shown = text[:_SHOW_AT_MOST]
    rest = "" if len(shown) == len(text) else f"\n\n*({len(text) - len(shown):,} more characters not shown)*"
    return (f"{label} ({len(lines)} lines, {len(text):,} characters):\n\n```\n{head}\n```\n\n"
            f"<details><summary>show more</summary>\n\n<pre>{html.escape(shown)}</pre>{rest}\n\n</details>")


def _status_bundle(what: str, elapsed: float, tokens: int) -> dict[str, str]:
    line = f"⏳ {what} · {elapsed:.1f} s · ~{tokens} tokens"
    return {"text/plain": line, "text/markdown": line}


def _usage_bundle(usage: list[dict[str, int]], elapsed: float) -> dict[str, str]:
    if not usage:
        return {"text/plain": ""}
    spent = sum(u.get("input_tokens", 0) for u in usage), sum(u.get("output_tokens", 0) for u in usage)
    turns = f" over {len(usage)} model turns" if len(usage) > 1 else ""
    line = f"tokens: {spent[0]:,} in · {spent[1]:,} out{turns} · {elapsed:.1f} s"
    return {"text/plain": line, "text/markdown": f"<sub>{line}</sub>"}


def _md(text: str) -> str:
    return text.replace("\n", " ").replace("|", "\\|")


def _new_id(kind: str) -> str:
    return f"rienda-{kind}-{uuid.uuid4().hex[:12]}"
