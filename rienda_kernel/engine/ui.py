"""What a front end gives the engine: where events go and who answers ``ctx.confirm``.

The engine calls :meth:`UI.emit` for every event (from any thread, possibly the isolate's)
and :meth:`UI.confirm` when an extension asks. A front end subclasses :class:`UI`; the
:class:`NonInteractiveUI` answers confirms from the run's auto-approve setting.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable

from .cancel import CancelToken
from .events import Confirm, Event

__all__ = ["ALLOWED_EARLIER", "ASK_PROMPT", "FOR_THIS_SESSION", "NonInteractiveUI", "RelayUI", "UI", "typed_answer"]

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


class RelayUI(UI):
    """``inner`` unchanged (its confirms, its interactivity), with every event also handed
    to ``observe`` first: how a caller watches what an invocation reports."""

    def __init__(self, inner: UI, observe: Callable[[Event], None]) -> None:
        super().__init__(record_events=False)
        self._inner = inner
        self._observe = observe

    @property
    def interactive(self) -> bool:  # type: ignore[override]
        return self._inner.interactive

    def emit(self, event: Event) -> None:
        self._observe(event)
        self._inner.emit(event)

    def ask(self, title: str, body: str, cancel: CancelToken) -> tuple[bool, str]:
        return self._inner.ask(title, body, cancel)
