"""Showing a Rienda run in a notebook cell, live; shared by the kernel and the magics.

:class:`NotebookUI` turns engine events into Jupyter messages on IOPub, always with the
cell's own parent header (events arrive from worker and isolate threads, where ipykernel's
notion of "the current cell" is not reliable):

- a status line (elapsed time, tokens so far) while the model works, which ends as the
  tokens the provider reported for the run (or empty, when it reported none);
- the assistant's text streamed into one display, updated in place, ending as Markdown
  (the saved text, after ``afterModelResponse``); thinking folded above it;
- each tool call with its arguments as the tool received them, its result (long results
  folded), and the hooks that refused or rewrote it;
- ``ctx.log`` lines and command output as stream output while the tool runs; notices;
  diagnostics once per notebook;
- ``ctx.confirm`` as Allow / Deny buttons (built on the kernel's thread through
  ``schedule``), a y/N prompt on stdin for front ends without widgets, or an answer from
  the confirm policy; never a hang in a non-interactive run.
"""

from __future__ import annotations

import html
import json
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import zmq

from .engine import CancelToken, Confirm, Diagnostic, Event, HookDecision, Log, Notify, Output, UI
from .engine.ui import ASK_PROMPT, FOR_THIS_SESSION, typed_answer
from .engine.events import MessageSaved, RunEnd, RunStart, TextDelta, ThinkingDelta, ToolCallStarted, ToolResultReady

__all__ = ["CellTarget", "NotebookUI", "widgets_available"]

_FOLD_LINES = 12
_SHOW_AT_MOST = 10_000
_UPDATE_EVERY = 0.05


def widgets_available() -> bool:
    """Whether the front end renders widgets: its widget manager opened the
    ``jupyter.widget.control`` comm (JupyterLab and Notebook 7 do; ``jupyter console``
    and nbclient do not)."""
    try:
        from ipywidgets.widgets.widget import Widget
    except ImportError:  # pragma: no cover - ipywidgets is a dependency
        return False
    return getattr(Widget, "_control_comm", None) is not None


class CellTarget:
    """Where a cell's output goes: the kernel's IOPub and stdin with the cell's parent.

    ``schedule(fn)`` runs ``fn`` on the kernel's thread in the cell's context (widgets
    must be made there); ``widgets`` says whether the front end renders widgets;
    ``allow_stdin`` whether it answers input requests.
    """

    def __init__(self, kernel: Any, parent: dict[str, Any], ident: Any, schedule: Callable[[Callable[[], None]], None],
                 widgets: bool, allow_stdin: bool) -> None:
        self.kernel = kernel
        self.parent = parent
        self.ident = ident
        self.schedule = schedule
        self.widgets = widgets
        self.allow_stdin = allow_stdin
        self._lock = threading.Lock()

    def send(self, msg_type: str, content: dict[str, Any]) -> None:
        with self._lock:
            self.kernel.session.send(self.kernel.iopub_socket, msg_type, content, parent=self.parent,
                                     ident=self.kernel._topic(msg_type))

    def stream(self, name: str, text: str) -> None:
        self.send("stream", {"name": name, "text": text})

    def display(self, display_id: str, data: dict[str, Any], update: bool = False) -> None:
        self.send("update_display_data" if update else "display_data",
                  {"data": data, "metadata": {}, "transient": {"display_id": display_id}})

    def ask_stdin(self, prompt: str, cancel: CancelToken) -> str | None:
        """One input_request on the stdin channel; None once ``cancel`` is set."""
        kernel = self.kernel
        kernel.session.send(kernel.stdin_socket, "input_request", {"prompt": prompt, "password": False},
                            self.parent, ident=self.ident)
        while not cancel.cancelled:
            ready, _, _ = zmq.select([kernel.stdin_socket], [], [], 0.05)
            if ready:
                _, reply = kernel.session.recv(kernel.stdin_socket)
                if reply is not None:
                    return str(reply["content"].get("value", ""))
        return None


class NotebookUI(UI):
    """Renders one run into one cell; answers its confirms by ``policy``."""

    def __init__(self, target: CellTarget, policy: str | None, seen_diagnostics: set[str]) -> None:
        super().__init__(record_events=False)
        self.target = target
        self.policy = policy
        self.seen_diagnostics = seen_diagnostics
        self.final_text = ""
        self._status_id = _new_id("status")
        self._started = time.monotonic()
        self._chars = 0
        self._message: _MessageView | None = None
        self._calls: dict[str, _CallView] = {}
        self._pending_decisions: dict[str, list[HookDecision]] = {}
        self._status_lock = threading.Lock()
        self._activity = "working…"
        self._usage: list[dict[str, int]] = []  # what the provider reported, per model turn
        # Someone is watching (JupyterLab, console): stream, show a status line. A batch run
        # (nbclient, nbconvert, papermill, nbval) gets each display once, final, instead.
        self.live = target.allow_stdin or target.widgets
        self._done = threading.Event()

    @property
    def interactive(self) -> bool:  # type: ignore[override]
        return self.policy in (None, "ask") and (self.target.widgets or self.target.allow_stdin)

    # -- events ------------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        handler = _HANDLERS.get(type(event))
        if handler is not None:
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
        self.target.stream("stdout", f"[{event.source}] {event.text}\n")

    def _output(self, event: Output) -> None:
        self.target.stream(event.stream if event.stream in ("stdout", "stderr") else "stdout", event.text)

    def _notify(self, event: Notify) -> None:
        self.target.display(_new_id("notice"), {
            "text/plain": f"🔔 {event.title}: {event.body}",
            "text/markdown": f"> 🔔 **{_md(event.title)}** — {_md(event.body)}"})

    def _confirm(self, event: Confirm) -> None:
        """Answers nobody clicked for (a policy, the session's memory, stdin) are shown."""
        if event.how == "user" and self.target.widgets:
            return
        mark = "✓" if event.answer else "✗"
        verdict = "allowed" if event.answer else "denied"
        self.target.stream("stdout", f"{mark} confirm “{event.title}”: {verdict} ({event.how})\n")

    def _diagnostic(self, event: Diagnostic) -> None:
        if event.message in self.seen_diagnostics:
            return
        self.seen_diagnostics.add(event.message)
        self.target.stream("stderr", f"⚠ {event.message}\n")

    def _run_end(self, event: RunEnd) -> None:
        """The status line gives way to the answer: it is emptied, or becomes the tokens
        the provider reported for the run."""
        self._done.set()
        if self.live:
            with self._status_lock:
                self.target.display(self._status_id, _usage_bundle(self._usage, time.monotonic() - self._started),
                                    update=True)

    # -- confirm -------------------------------------------------------------------------
    def ask(self, title: str, body: str, cancel: CancelToken) -> tuple[bool, str]:
        if self.policy == "allow":
            return True, "policy: allow"
        if self.policy == "deny":
            return False, "policy: deny"
        self._activity = f"waiting for your answer to “{title}”…"
        self._update_status(self._activity)
        try:
            return self._ask_person(title, body, cancel)
        finally:
            self._activity = "working…"

    def _ask_person(self, title: str, body: str, cancel: CancelToken) -> tuple[bool, str]:
        if self.target.widgets:
            return self._ask_with_buttons(title, body, cancel)
        if self.target.allow_stdin:
            line = self.target.ask_stdin(f"{title}\n{body}\n{ASK_PROMPT}", cancel)
            return (False, "interrupted") if line is None else typed_answer(line)
        self.target.stream("stderr", f"⚠ ctx.confirm “{title}” was denied: this run cannot ask (no widgets, no "
                                     "stdin). Set `%rienda confirm allow|deny|ask` or $RIENDA_CONFIRM.\n")
        return False, "default-deny (non-interactive)"

    def _ask_with_buttons(self, title: str, body: str, cancel: CancelToken) -> tuple[bool, str]:
        answer: Future[tuple[bool, str]] = Future()
        built: Future[Any] = Future()
        self.target.schedule(lambda: _build_confirm(self.target, title, body, answer, built))
        while not cancel.cancelled:
            try:
                return answer.result(timeout=0.05)
            except TimeoutError:
                continue
        if built.done() and built.exception() is None:
            self.target.schedule(lambda: built.result()("Interrupted"))
        return False, "interrupted"


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


def _build_confirm(target: CellTarget, title: str, body: str, answer: Future[tuple[bool, str]],
                   built: Future[Any]) -> None:
    """Allow once / Allow for this session / Deny buttons; runs on the kernel's thread.
    ``built`` receives a function that closes the request with a message (on interrupt)."""
    try:
        import ipywidgets as widgets

        allow = widgets.Button(description="Allow", button_style="success", icon="check",
                               tooltip="Allow this once")
        always = widgets.Button(description="Allow for this session", button_style="info",
                                layout=widgets.Layout(width="auto"),
                                tooltip="Allow this exact request until the session ends, without asking")
        deny = widgets.Button(description="Deny", button_style="danger", icon="times")
        outcome = widgets.HTML("")
        box = widgets.VBox([
            widgets.HTML(f"<b>{html.escape(title)}</b><pre style='white-space: pre-wrap'>{html.escape(body)}</pre>"),
            widgets.HBox([allow, always, deny]), outcome])

        def close(message: str) -> None:
            allow.disabled = always.disabled = deny.disabled = True
            outcome.value = f"<i>{html.escape(message)}</i>"

        def choose(value: bool, how: str, message: str) -> None:
            if not answer.done():
                answer.set_result((value, how))
                close(message)

        allow.on_click(lambda _: choose(True, "user", "Allowed"))
        always.on_click(lambda _: choose(True, FOR_THIS_SESSION, "Allowed for this session"))
        deny.on_click(lambda _: choose(False, "user", "Denied"))
        target.display(_new_id("confirm"), box._repr_mimebundle_())
        built.set_result(close)
    except Exception as exc:  # noqa: BLE001 - a failed widget must not hang the run
        built.set_exception(exc)
        if not answer.done():
            answer.set_result((False, "could not ask"))
        target.stream("stderr", f"⚠ could not show the confirm buttons ({exc}); denied.\n")


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
        self.target.display(_new_id("result"), {"text/plain": f"{mark}: {text}{plain}",
                                                "text/markdown": _folded(mark, text) + notes})

    def render(self) -> None:
        arguments = json.dumps(self.arguments, ensure_ascii=False)
        lines = [f"🔧 **{_md(self.name)}** `{arguments}`"]
        lines += [f"- {note}" for note in self.notes]
        plain = [f"tool {self.name} {arguments}"] + [f"  {note}" for note in self.notes]
        self.target.display(self.display_id, {"text/plain": "\n".join(plain), "text/markdown": "\n\n".join(lines)},
                            update=self._shown)
        self._shown = True


def _folded(label: str, text: str) -> str:
    """A result as a code block; long ones folded behind their first lines, and very long
    ones shown in part (the model read all of it; the notebook need not store it all)."""
    lines = text.splitlines() or [""]
    if len(lines) <= _FOLD_LINES and len(text) <= 2000:
        return f"{label}:\n\n```\n{text}\n```"
    head = "\n".join(line[:200] for line in lines[:3])
    shown = text if len(text) <= _SHOW_AT_MOST else text[:_SHOW_AT_MOST]
    rest = "" if shown is text else f"\n\n*({len(text) - len(shown):,} more characters not shown)*"
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
