"""Showing a Rienda run in a notebook cell, live; shared by the kernel and the magics.

:class:`NotebookUI` turns engine events into Jupyter messages on the cell's
:class:`~rienda_kernel.jupyter.cell.CellTarget`:

- a status line (elapsed time, tokens so far, and how full the model's window is after
  each model turn: ``context 61 % of 8,192``) while the run goes on, which ends as the
  tokens the provider reported for the run and the fill (or empty, when there is neither);
  a batch run gets that last line once, at the end of the cell, without the time (a saved
  notebook keeps it, and changes only with what the run did);
- each compaction as one line (the engine's: tokens before → after, what was pruned and
  folded, the hooks that acted; their own rewrite lines are not repeated);
- the assistant's text streamed into one display, updated in place, ending as Markdown
  (the saved text, after ``afterModelResponse``; or, when the run stops mid-stream, what
  had arrived, without the cursor); thinking folded above it;
- each tool call with its arguments as the tool received them, its result (long results
  folded), and the hooks that refused or rewrote it;
- ``ctx.log`` lines and command output while the tool runs; a flood of log lines folds,
  its last lines in view; notices; diagnostics once per notebook;
- each confirm's static record (:func:`~rienda_kernel.jupyter.confirm.record_bundle`), in place of
  the buttons when a person was asked;
- a sub-agent's run (events with ``depth`` > 0) nested under its ``agent`` call
  (:mod:`~rienda_kernel.jupyter.nested`); its confirms' buttons and records are titled with
  the sub-agent's name.

A front end that watches (its request allows stdin) gets the live view; a batch run
(nbclient, nbconvert, papermill, nbval) gets each display once, final. How a confirm is
answered is not decided here: the UI states its policy and, when stdin is allowed, a
:class:`~rienda_kernel.jupyter.confirm.NotebookPerson`; the engine's ``decide`` picks.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import assert_never

from .cell import CellTarget
from .confirm import ClientViews, NotebookPerson, ShownConfirm, record_bundle
from .nested import Nest
from .views import CallView, LogView, MessageView, compaction_bundle, markdown_text, new_id, status_bundle, usage_bundle
from ..frontend.hook_actions import hook_action, named_by_compaction
from ..engine import (
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
    Waiting,
)

__all__ = ["NotebookUI"]


class NotebookUI(PersonAsker):
    """Renders one run into one cell (the sink of its events, :meth:`emit`). ``policy`` is
    the notebook's confirm setting; ``clients`` is the kernel's memory of which front ends
    display widgets."""

    def __init__(self, target: CellTarget, policy: ConfirmPolicy, seen_diagnostics: set[str],
                 clients: ClientViews) -> None:
        person = NotebookPerson(target, clients, self._confirm_shown) if target.allow_stdin else None
        super().__init__(policy=policy, person=person)
        self.target = target
        self.seen_diagnostics = seen_diagnostics
        self.final_text = ""
        self._status_id = new_id("status")
        self._started = time.monotonic()
        self._chars = 0
        self._message: MessageView | None = None
        self._logs: LogView | None = None
        self._calls: dict[str, CallView] = {}
        self._pending_decisions: dict[str, list[HookDecision]] = {}
        self._shown_confirm: ShownConfirm | None = None
        self._status_lock = threading.Lock()
        self._activity = "working…"
        self._waited: tuple[int, str, str | None] | None = None  # the hook the status line says is running
        self._usage: list[dict[str, int] | None] = []  # what the provider reported, per model turn (None: nothing)
        self._session: str | None = None  # the run's session, named by the line the cell ends with
        self._fill: ContextFill | None = None  # how full the window is after the last model turn
        self._replayed = 0  # model turns of the run a recording answered (they come first)
        # Someone is watching (JupyterLab, VS Code, console): stream, show a status line. A
        # batch run (nbclient, nbconvert, papermill, nbval) gets each display once, final.
        self.live = target.allow_stdin
        self._done = threading.Event()
        self._nest = Nest(target, self.live)

    # -- events ------------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        """Show ``event``; never raises into the run (a display that fails is logged)."""
        try:
            if self._logs is not None and (event.depth or not isinstance(event, (Log, Output, Diagnostic, Waiting))):
                self._end_logs()
            if event.depth:
                self._sub_agent(event)
            else:
                self._show(event)
        except Exception:  # noqa: BLE001 - the run goes on, and ends
            self.target.kernel.log.exception("Rienda: could not show a %s event", type(event).__name__)

    def _show(self, event: Event) -> None:
        """A top-level run's event, each kind its own way."""
        match event:
            case RunStart():
                self._run_start(event)
            case TextDelta():
                self._text(event)
            case ThinkingDelta():
                self._thinking(event)
            case MessageSaved():
                self._saved(event)
            case ToolCallStarted():
                self._tool_call(event)
            case ToolResultReady():
                self._tool_result(event)
            case HookDecision():
                self._decision(event)
            case Log():
                self._log(event)
            case Output():
                self._output(event)
            case Notify():
                self._notify(event)
            case Diagnostic():
                self._diagnostic(event)
            case Confirm():
                self._confirm(event)
            case RunEnd():
                self._run_end(event)
            case Compaction():
                self._compaction(event)
            case Replayed():
                self._replayed_answer(event)
            case Divergence():
                self._divergence(event)
            case Waiting():
                self._waiting(event)
            case _:
                assert_never(event)

    def _sub_agent(self, event: Event) -> None:
        """A sub-agent's event: into its nested box; a diagnostic as any other; a confirm
        also in place of its buttons, titled with the sub-agent's name."""
        if isinstance(event, Diagnostic):
            self._diagnostic(event)
            return
        if isinstance(event, (Waiting, HookDecision)):
            self._waiting(event)
        if isinstance(event, Confirm) and self._shown_confirm is not None:
            self._confirm(replace(event, title=f"{event.title} (sub-agent {self._nest.agent_at(event.depth)})"))
        self._nest.emit(event)

    def _run_start(self, event: RunStart) -> None:
        self._session = event.session_id
        if not self.live:
            return
        self.target.display(self._status_id, status_bundle("working…", 0, 0))
        threading.Thread(target=self._tick, name="rienda-status", daemon=True).start()

    def _tick(self) -> None:
        while not self._done.wait(0.5):
            self._update_status(self._activity)

    def _update_status(self, what: str) -> None:
        with self._status_lock:
            if not self._done.is_set():
                elapsed = time.monotonic() - self._started
                self.target.display(self._status_id, status_bundle(what, elapsed, self._chars // 4, self._fill),
                                    update=True)

    def _text(self, event: TextDelta) -> None:
        self._chars += len(event.text)
        self._view().add_text(event.text)

    def _thinking(self, event: ThinkingDelta) -> None:
        self._chars += len(event.text)
        self._view().add_thinking(event.text)

    def _view(self) -> MessageView:
        if self._message is None:
            self._message = MessageView(self.target, self.live)
        return self._message

    def _saved(self, event: MessageSaved) -> None:
        message = event.message
        view = self._view()
        view.finish(message.get("text", ""), message.get("thinking", ""))
        if message.get("text"):
            self.final_text = message["text"]
        self._usage.append(message.get("usage") or None)
        self._message = None
        if event.context:
            self._fill = event.context
            if self.live:
                self._update_status(self._activity)

    def _replayed_answer(self, event: Replayed) -> None:
        """An answer from the recording: counted for the status line (it streams as any)."""
        if event.purpose == "turn":
            self._replayed += 1

    def _divergence(self, event: Divergence) -> None:
        """The run left its recording: one line, where it happened."""
        line = f"↯ {event.message}"
        self.target.display(new_id("divergence"), {"text/plain": line, "text/markdown": f"> {markdown_text(line)}"})

    def _compaction(self, event: Compaction) -> None:
        """One line; after a compaction the status line's fill is the compacted request's."""
        self.target.display(new_id("compaction"), compaction_bundle(event.message))
        if event.outcome == "compacted" and event.window:
            self._fill = ContextFill(event.tokens_after, event.window, event.tokens_after)
            if self.live:
                self._update_status(self._activity)

    def _tool_call(self, event: ToolCallStarted) -> None:
        view = CallView(self.target, event.name, event.arguments, event.refused_by)
        self._calls[event.id] = view
        for decision in self._pending_decisions.pop(event.id, []):
            view.add_decision(decision)
        view.render()

    def _tool_result(self, event: ToolResultReady) -> None:
        """The result gets its own output, below what the tool printed while it ran."""
        view = self._calls.get(event.id) or CallView(self.target, event.name, None, None)
        view.result(event.text, event.isError)

    def _waiting(self, event: Waiting | HookDecision) -> None:
        """A hook (or a server) still running after a moment: the status line says which,
        live, until its decision comes (a run nobody watches has no status line)."""
        if isinstance(event, Waiting):
            self._waited = (event.depth, event.name, event.point)
            self._activity = f"waiting on {event.subject()}… interrupt the kernel (■) to stop it"
        elif self._waited != (event.depth, event.hook, event.point):
            return
        else:
            self._waited, self._activity = None, "working…"
        if self.live:
            self._update_status(self._activity)

    def _decision(self, event: HookDecision) -> None:
        """Hook effects on a call: before it, shown with the call; after it, with the result.
        A rewrite of a model request or answer is a line of its own (a hook that threw
        there is its diagnostic)."""
        self._waiting(event)
        if event.effect == "none" or named_by_compaction(event):
            return  # a compaction's own line names the hooks that acted
        if event.call_id is None:
            line = hook_action(event)
            if event.effect == "rewrote" and line:
                self.target.display(new_id("hook"), {"text/plain": line,
                                                     "text/markdown": f"<sub>{markdown_text(line)}</sub>"})
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
            self._logs = LogView(self.target, self.live, event.source)
        self._logs.add(event.text)

    def _end_logs(self) -> None:
        if self._logs is not None:
            self._logs.finish()
        self._logs = None

    def _output(self, event: Output) -> None:
        self.target.stream(event.stream if event.stream in ("stdout", "stderr") else "stdout", event.text)

    def _notify(self, event: Notify) -> None:
        self.target.display(new_id("notice"), {
            "text/plain": f"🔔 {event.title}: {event.body}",
            "text/markdown": f"> 🔔 **{markdown_text(event.title)}** — {markdown_text(event.body)}"})

    def _confirm_shown(self, shown: ShownConfirm) -> None:
        self._shown_confirm = shown

    def _confirm(self, event: Confirm) -> None:
        """The record of the answer: in place of the buttons, or as an output of its own."""
        shown, self._shown_confirm = self._shown_confirm, None
        if shown is not None:
            shown.replace(record_bundle(event))
        else:
            self.target.display(new_id("confirm"), record_bundle(event))

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
        ended = usage_bundle(self._usage, time.monotonic() - self._started if self.live else None, event.context,
                             self._session, self._replayed)
        if self.live:
            with self._status_lock:
                self.target.display(self._status_id, ended, update=True)
        elif ended["text/plain"]:  # a batch run: the line once, last, kept in the saved notebook
            self.target.display(self._status_id, ended)

    # -- confirm -------------------------------------------------------------------------
    def ask(self, title: str, body: str, cancel: CancelToken) -> Answer:
        """The strategy (the engine decides, once): ask the person; while a person is
        asked, the status line says so. What the run showed until now is in the cell
        before it asks (updates held back to keep them apart go out first): a confirm
        blocks the thread whose next event would have sent them."""
        self._nest.flush()
        if self._logs is not None:
            self._logs.flush()
        asking = self.interactive
        if asking:
            self._activity = f"waiting for your answer to “{title}”…"
            self._update_status(self._activity)
        try:
            return super().ask(title, body, cancel)
        finally:
            if asking:
                self._activity = "working…"

