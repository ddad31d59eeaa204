"""A confirm in a notebook cell: buttons first, a y/N prompt when no view shows them, and a
static record once it is answered. Shared by the kernel and the magics.

Which front ends render widgets is decided from what the front end does, not guessed:

- a confirm is only put to a person when the execute request allows stdin (JupyterLab,
  Notebook 7, VS Code, ``jupyter console`` do; nbclient, nbval, papermill do not);
- the buttons go out at once, as a widget whose ``_view_count`` starts at 0: a front end's
  widget manager raises it and syncs it back when it displays the view (ipywidgets'
  ``WidgetView``; VS Code's manager builds on the same classes). A view reported by the
  client that ran the cell (its ``header.session``) means the person sees the buttons;
- if none is reported within :data:`VIEW_WAIT` seconds (four times that for a client that
  displayed views before), a y/N input request goes out too (``jupyter console``); both
  stay live and the first answer wins, the other is ignored;
- :class:`ClientViews` remembers, per client connection, that it showed no view, so such a
  client gets the y/N prompt at once the next time.

Once answered, the display is replaced (``update_display_data``) by :func:`record_bundle`:
HTML and text/plain saying what was asked and how it was answered, so a saved notebook
shows the record, not "Error displaying widget: model not found".
"""

from __future__ import annotations

import html
import threading
import uuid
from collections.abc import Callable
from typing import Protocol

from .cell import CellTarget, sender_session
from ..engine import ASK_PROMPT, Answer, CancelToken, Confirm, JSONObject, typed_answer

__all__ = ["VIEW_WAIT", "ClientViews", "NotebookPerson", "ShownConfirm", "record_bundle"]

VIEW_WAIT = 2.0  # seconds a shown confirm waits for a widget view before asking y/N as well
KNOWN_VIEW_FACTOR = 4  # ...times this, for a client that has displayed views before (a busy page)


class ClientViews:
    """Per front-end connection (``header.session``): whether it displayed a widget view
    (True), asked for one and showed none (False), or is not known yet (None)."""

    def __init__(self) -> None:
        self._renders: dict[str, bool] = {}
        self._lock = threading.Lock()

    def renders(self, client: str) -> bool | None:
        with self._lock:
            return self._renders.get(client)

    def mark(self, client: str, renders: bool) -> None:
        with self._lock:
            self._renders[client] = renders


class _Race:
    """The answers to one confirm: the first one wins, later ones are ignored. Whoever
    waits is woken by an answer, a reported view, a failed widget, or ``cancel``."""

    def __init__(self, cancel: CancelToken) -> None:
        self._cond = threading.Condition()
        self.cancel = cancel
        self.answer: Answer | None = None
        self.viewed = False
        self.no_buttons = False
        self._unhook = cancel.on_cancel(self._wake)

    def offer(self, answer: Answer) -> bool:
        with self._cond:
            if self.answer is not None:
                return False
            self.answer = answer
            self._cond.notify_all()
            return True

    def view_shown(self) -> None:
        with self._cond:
            self.viewed = True
            self._cond.notify_all()

    def buttons_failed(self) -> None:
        with self._cond:
            self.no_buttons = True
            self._cond.notify_all()

    @property
    def over(self) -> bool:
        return self.answer is not None or self.cancel.cancelled

    def wait(self, also: Callable[[], bool] = lambda: False, timeout: float | None = None) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self.over or also(), timeout)

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def close(self) -> None:
        self._unhook()


class _Closable(Protocol):
    """A widget (or its layout, its style): what is closed once the confirm is answered."""

    def close(self) -> None: ...


class ShownConfirm:
    """A confirm's display in the cell. Building it and replacing it both run on the
    kernel's thread, in that order, so the record never races the buttons."""

    def __init__(self, target: CellTarget) -> None:
        self.target = target
        self.display_id = f"rienda-confirm-{uuid.uuid4().hex[:12]}"
        self.widgets: list[_Closable] = []
        self.shown = False

    def replace(self, bundle: dict[str, str]) -> None:
        """Put ``bundle`` where the buttons are (or below, if they never showed); close them."""
        def swap() -> None:
            self.target.display(self.display_id, bundle, update=self.shown)
            for widget in self.widgets:
                widget.close()
            self.widgets.clear()

        self.target.schedule(swap)


class NotebookPerson:
    """The person at the front end that ran the cell (see the module docstring).

    ``on_shown`` receives each :class:`ShownConfirm` before its buttons are built; the
    renderer replaces it with the record when the :class:`Confirm` event arrives.
    """

    def __init__(self, target: CellTarget, clients: ClientViews, on_shown: Callable[[ShownConfirm], None],
                 view_wait: float = VIEW_WAIT) -> None:
        self.target = target
        self.clients = clients
        self.on_shown = on_shown
        self.view_wait = view_wait

    def ask(self, title: str, body: str, cancel: CancelToken) -> Answer:
        race = _Race(cancel)
        typed = False
        try:
            renders = self.clients.renders(self.target.client)
            buttons = renders is not False
            if buttons:
                shown = ShownConfirm(self.target)
                self.on_shown(shown)
                self.target.schedule(lambda: _build_buttons(shown, title, body, race))
                wait = self.view_wait * (KNOWN_VIEW_FACTOR if renders else 1)
                race.wait(lambda: race.viewed or race.no_buttons, timeout=wait)
            if not (race.over or race.viewed):
                typed = True
                line = self.target.input_line(f"{title}\n{body}\n{ASK_PROMPT}", until=lambda: race.over)
                if line is not None:
                    race.offer(typed_answer(line))
            race.wait()
            self._learn(buttons and not race.no_buttons, race)
            if race.answer is None or cancel.cancelled:
                return Answer(False, "interrupted", "y/N" if typed and not race.viewed else "buttons")
            return race.answer
        finally:
            race.close()

    def _learn(self, showed_buttons: bool, race: _Race) -> None:
        """A client that displayed a view renders widgets; one that answered y/N to shown
        buttons without displaying them does not."""
        if race.viewed:
            self.clients.mark(self.target.client, True)
        elif showed_buttons and race.answer is not None and race.answer.via == "y/N":
            self.clients.mark(self.target.client, False)


def _build_buttons(shown: ShownConfirm, title: str, body: str, race: _Race) -> None:
    """Allow once / Allow for this session / Deny; runs on the kernel's thread."""
    target = shown.target
    try:
        import ipywidgets as widgets  # type: ignore[import-untyped]  # ipywidgets ships no types

        allow = widgets.Button(description="Allow", button_style="success", icon="check", tooltip="Allow this once")
        always = widgets.Button(description="Allow for this session", button_style="info",
                                layout=widgets.Layout(width="auto"),
                                tooltip="Allow this exact request until the session ends, without asking")
        deny = widgets.Button(description="Deny", button_style="danger", icon="times")
        question = widgets.HTML(f"<b>{html.escape(title)}</b><pre style='white-space: pre-wrap'>"
                                f"{html.escape(body)}</pre>")
        row = widgets.HBox([allow, always, deny])
        box = widgets.VBox([question, row], _view_count=0)
        for button, answer in ((allow, Answer(True, "user", "buttons")),
                               (always, Answer(True, "allowed for this session", "buttons")),
                               (deny, Answer(False, "user", "buttons"))):
            button.on_click(lambda _, answer=answer: race.offer(answer))

        def viewed(change: JSONObject) -> None:  # traitlets' change: the widget's value, synced from the page
            sender = sender_session(target.kernel)
            if (change["new"] or 0) > 0 and (not target.client or sender in (target.client, "", None)):
                race.view_shown()

        box.observe(viewed, names="_view_count")
        shown.widgets = [box, question, row, allow, always, deny]
        shown.widgets += [part for w in list(shown.widgets) for part in (getattr(w, "layout", None),
                                                                          getattr(w, "style", None)) if part]
        bundle = {**box._repr_mimebundle_(), "text/plain": f"? {title}\n  {body}"}
        target.display(shown.display_id, bundle)
        shown.shown = True
    except Exception as exc:  # noqa: BLE001 - no buttons: the y/N prompt asks instead
        target.stream("stderr", f"⚠ could not show the confirm buttons ({exc}); asking y/N instead.\n")
        race.buttons_failed()


_VERDICT_DETAIL = {
    "user": "answered with {via}",
    "allowed for this session": "for the rest of this session, answered with {via}",
    "allowed earlier in this session": "allowed earlier in this session",
    "auto-approve": "by the confirm policy: allow",
    "auto-deny": "by the confirm policy: deny",
    "default-deny": "nobody could be asked (no stdin in this run); set %rienda confirm allow|deny or $RIENDA_CONFIRM",
    "interrupted": "not answered: the turn was interrupted",
}
_VIA = {"buttons": "the buttons", "y/N": "y/N", None: "no one"}


def record_bundle(event: Confirm) -> dict[str, str]:
    """The static record of an answered confirm: title, body, answer and how it was given."""
    verdict = "allowed" if event.answer else "denied"
    detail = _VERDICT_DETAIL[event.how].format(via=_VIA[event.via])
    mark, color = ("✓", "#2e7d32") if event.answer else ("✗", "#c62828")
    plain = f"{mark} {event.title}: {verdict} ({detail}); asked by {event.source}\n  {event.body}"
    markup = (f"<div style='border-left: 3px solid {color}; padding: 2px 10px; margin: 2px 0'>"
              f"<div><b>{mark} {html.escape(event.title)}</b>: {verdict} "
              f"<span style='opacity: 0.7'>({html.escape(detail)}; asked by {html.escape(event.source)})</span></div>"
              f"<pre style='white-space: pre-wrap; margin: 4px 0 0 0'>{html.escape(event.body)}</pre></div>")
    return {"text/plain": plain, "text/html": markup}
