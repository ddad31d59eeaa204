"""What a front end gives the engine: where events go and who answers ``ctx.confirm``.

The engine calls :meth:`UI.emit` for every event (from any thread, possibly the isolate's)
and :meth:`UI.confirm` when an extension asks. A front end subclasses :class:`UI`; the
:class:`NonInteractiveUI` answers confirms from the run's auto-approve setting. The engine
puts every front end's UI behind a :class:`ScrubbingUI`, so what a front end receives
(events, and the title and body of a confirm it asks) never holds a secret.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import fields, replace

from .cancel import CancelToken
from .events import Confirm, Event
from .secrets import scrub

__all__ = ["ALLOWED_EARLIER", "ASK_PROMPT", "FOR_THIS_SESSION", "NonInteractiveUI", "ScrubbingUI", "UI",
           "scrub_event", "typed_answer"]

# ``how`` values with a meaning beyond the event: a person allowed a request for the rest
# of the session (ask() returns it), and a request answered from that memory.
FOR_THIS_SESSION = "allowed for this session"
ALLOWED_EARLIER = "allowed earlier in this session"
ASK_PROMPT = "Allow? [y = once, s = for this session, N = no] "


def typed_answer(line: str) -> tuple[bool, str]:
    """A typed answer to :data:`ASK_PROMPT`: y (once), s (for this session), else no."""
    word = line.strip().lower()
    if word in ("s", "session"):
        return True, FOR_THIS_SESSION
    return word in ("y", "yes"), "user"


class UI(ABC):
    """Base front end: forwards events to ``sink`` and, with ``record_events``, keeps them
    in :attr:`events` (handy for short runs and tests; a long-lived front end turns it off).

    Subclasses override :meth:`ask` to put a confirm in front of a person. ``emit`` must
    not block for long: it runs while an extension waits.
    """

    interactive = False

    def __init__(self, sink: Callable[[Event], None] | None = None, record_events: bool = True) -> None:
        self.events: list[Event] = []
        self._record = record_events
        self._sink = sink
        self._lock = threading.Lock()

    def emit(self, event: Event) -> None:
        if self._record:
            with self._lock:
                self.events.append(event)
        if self._sink is not None:
            self._sink(event)

    def confirm(self, source: str, title: str, body: str, cancel: CancelToken) -> bool:
        """Ask, record the answer as a :class:`Confirm` event, and return it."""
        answer, how = self.ask(title, body, cancel)
        if cancel.cancelled:
            answer, how = False, "interrupted"
        self.emit(Confirm(source=source, title=title, body=body, answer=answer, how=how))
        return answer

    @abstractmethod
    def ask(self, title: str, body: str, cancel: CancelToken) -> tuple[bool, str]:
        """Return ``(answer, how)``; must return promptly once ``cancel`` is set.

        ``how`` is :data:`FOR_THIS_SESSION` when the person allowed this exact request for
        the rest of the session (the engine then answers it without asking).
        """


class NonInteractiveUI(UI):
    """Answers every confirm with ``auto_approve`` (the default is to deny)."""

    def __init__(self, auto_approve: bool = False, sink: Callable[[Event], None] | None = None,
                 record_events: bool = True) -> None:
        super().__init__(sink, record_events)
        self.auto_approve = auto_approve

    def ask(self, title: str, body: str, cancel: CancelToken) -> tuple[bool, str]:
        return (True, "auto-approve") if self.auto_approve else (False, "default-deny")


class ScrubbingUI(UI):
    """A front end's UI as the engine uses it: each event is scrubbed once
    (:func:`scrub_event`) before ``front`` receives it, and so are the title and body of a
    confirm ``front`` asks. Everything else is ``front``'s."""

    def __init__(self, front: UI) -> None:
        super().__init__(record_events=False)
        self.front = front

    @classmethod
    def around(cls, ui: UI) -> ScrubbingUI:
        """``ui`` itself when it already scrubs, else ``ui`` behind a ScrubbingUI."""
        return ui if isinstance(ui, ScrubbingUI) else cls(ui)

    @property
    def interactive(self) -> bool:  # type: ignore[override]
        return self.front.interactive

    def emit(self, event: Event) -> None:
        self.front.emit(scrub_event(event))

    def ask(self, title: str, body: str, cancel: CancelToken) -> tuple[bool, str]:
        return self.front.ask(scrub(title), scrub(body), cancel)


def scrub_event(event: Event) -> Event:
    """``event`` with every field scrubbed (:func:`secrets.scrub`); the same object when
    there was nothing to replace."""
    values = {item.name: getattr(event, item.name) for item in fields(event)}
    clean = scrub(values)
    return event if clean is values else replace(event, **clean)
