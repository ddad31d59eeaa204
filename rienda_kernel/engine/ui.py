"""What a front end gives the engine: where events go and how ``ctx.confirm`` is answered.

A front end is two parts, and the engine depends on each only where it uses it:

- the sink of its events (:class:`EventSink`): the engine calls ``emit`` for every event,
  from any thread (possibly the isolate's). What only reports (the hook chain, a model's
  stream, a compaction) takes a sink and nothing more;
- the one who is asked (:class:`Asker`). A front end never decides how a confirm is
  answered. It states two facts instead (:class:`PersonAsker` holds them):

  - ``policy``: a :data:`ConfirmPolicy`: ``allow`` / ``deny`` (an explicit setting), or
    ``ask``; the same three words everywhere a person sets it (``rienda --confirm``,
    config.yaml's ``confirm``, ``$RIENDA_CONFIRM``, kernel.json, ``%rienda confirm``), read
    by :func:`confirm_policy`;
  - ``person``: a :class:`Person` it can put a question to (buttons, a y/N prompt), or None
    when nobody can be asked (a batch run). ``ask`` is that strategy: it only asks.

A front end that renders events implements ``emit`` on a :class:`PersonAsker`;
:class:`UI` is both parts in one object, with a :class:`Recorder` as its sink (what a
script or a test hands a run; :class:`NonInteractiveUI` has nobody to ask).

:func:`decide` is the one place that turns those facts (and the session's remembered
approvals) into an :class:`Answer`, in this order: an explicit policy; a request allowed
"for this session"; the person; otherwise no. It runs once per confirm, where a run holds
both parts together (:meth:`ScrubbingUI.confirm`): in a run, in the run's own UI (which
holds the session's approvals), never in a front end.

The engine puts every front end behind a :class:`ScrubbingUI`, so what a front end
receives (events, and the title and body of a confirm it is asked) never holds a secret.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import fields, replace
from typing import Literal, NamedTuple, Protocol, get_args

from .cancel import CancelToken
from .common.hints import did_you_mean
from .common.json_value import JSON
from .errors import ConfigError
from .events import Confirm, Event, How, Via
from .secrets import scrub

__all__ = ["ALLOWED_EARLIER", "ASK_PROMPT", "CONFIRM_POLICIES", "FOR_THIS_SESSION", "Answer", "Approvals", "Asker",
           "ConfirmPolicy", "EventSink", "FrontEnd", "How", "NonInteractiveUI", "Person", "PersonAsker", "Recorder",
           "RelayUI", "ScrubbingUI", "UI", "Via", "WrappingUI", "confirm_policy", "decide", "scrub_event",
           "typed_answer"]

ConfirmPolicy = Literal["ask", "allow", "deny"]
CONFIRM_POLICIES: tuple[ConfirmPolicy, ...] = get_args(ConfirmPolicy)

FOR_THIS_SESSION: How = "allowed for this session"
ALLOWED_EARLIER: How = "allowed earlier in this session"
ASK_PROMPT = "Allow? [y = once, s = for this session, N = no] "


class Answer(NamedTuple):
    """An answer to one confirm: ``allowed``, ``how`` it was decided, and ``via`` which
    means a person answered (None when no person did)."""

    allowed: bool
    how: How
    via: Via | None = None


class Person(Protocol):
    """A way to put one confirm in front of a person (a renderer's buttons, a prompt).

    ``ask`` blocks until the person answers or ``cancel`` is set, and then returns at once
    (``how="interrupted"``); it answers each request at most once.
    """

    def ask(self, title: str, body: str, cancel: CancelToken) -> Answer: ...


def typed_answer(line: str) -> Answer:
    """A typed answer to :data:`ASK_PROMPT`: y (once), s (for this session), else no."""
    word = line.strip().lower()
    if word in ("s", "session"):
        return Answer(True, FOR_THIS_SESSION, "y/N")
    return Answer(word in ("y", "yes"), "user", "y/N")


def confirm_policy(value: JSON, where: str) -> ConfirmPolicy:
    """``value`` as a :data:`ConfirmPolicy` (case and spaces ignored); ConfigError naming
    ``where`` (``$RIENDA_CONFIRM``, ``config.yaml:3 confirm``...) when it is not one."""
    word = value.strip().lower() if isinstance(value, str) else value
    for policy in CONFIRM_POLICIES:
        if word == policy:
            return policy
    hint = did_you_mean(word, CONFIRM_POLICIES, cutoff=0.5)
    raise ConfigError(f"{where} must be one of {', '.join(CONFIRM_POLICIES)}, got {value!r}{hint}")


class Approvals:
    """A session's memory of requests a person allowed "for this session" (exact title
    and body); ``on_new`` records each new one (the session file keeps them)."""

    def __init__(self, allowed: set[tuple[str, str]], on_new: Callable[[str, str], None]) -> None:
        self._allowed = allowed
        self._on_new = on_new

    def __contains__(self, request: tuple[str, str]) -> bool:
        return request in self._allowed

    def add(self, title: str, body: str) -> None:
        if (title, body) not in self._allowed:
            self._allowed.add((title, body))
            self._on_new(title, body)


def decide(title: str, body: str, cancel: CancelToken, *, policy: ConfirmPolicy,
           ask: Callable[[str, str, CancelToken], Answer] | None, approvals: Approvals | None = None) -> Answer:
    """How one confirm is answered: the only place that chooses.

    1. an explicit policy answers (``auto-approve`` / ``auto-deny``);
    2. a request allowed for this session is allowed again (``allowed earlier in this session``);
    3. ``ask`` (a person) answers; an allow "for this session" is remembered in ``approvals``;
    4. with nobody to ask, the answer is no (``default-deny``).
    A run stopped while asking answers no (``interrupted``), whatever came back.
    """
    if policy == "allow":
        return Answer(True, "auto-approve")
    if policy == "deny":
        return Answer(False, "auto-deny")
    if approvals is not None and (title, body) in approvals:
        return Answer(True, ALLOWED_EARLIER)
    if ask is None:
        return Answer(False, "default-deny")
    answer = Answer(*ask(title, body, cancel))
    if cancel.cancelled:
        return Answer(False, "interrupted", answer.via)
    if approvals is not None and answer.allowed and answer.how == FOR_THIS_SESSION:
        approvals.add(title, body)
    return answer


class EventSink(Protocol):
    """Where events go: a front end's renderer, a recorder, a filter in front of another.

    ``emit`` is called from any thread (possibly the isolate's) and must not block for
    long: it runs while an extension waits.
    """

    def emit(self, event: Event) -> None: ...


class Asker(Protocol):
    """The one who is asked about a confirm: the ``policy`` a person set, and ``ask``,
    which puts one question to a person and nothing else (the strategy; :func:`decide`
    chooses). ``ask`` returns an :class:`Answer`, promptly once ``cancel`` is set."""

    @property
    def policy(self) -> ConfirmPolicy: ...

    def ask(self, title: str, body: str, cancel: CancelToken) -> Answer: ...


class FrontEnd(EventSink, Asker, Protocol):
    """What a front end gives a run: the sink of its events and the one who is asked."""


class Recorder:
    """An :class:`EventSink` that keeps every event in :attr:`events` (with
    ``record_events``: handy for short runs and tests; a long-lived one turns it off) and
    hands it to ``sink``."""

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


class PersonAsker:
    """An :class:`Asker` made of the two facts a front end states (see the module
    docstring): its ``policy``, and the ``person`` it can put a question to (None when
    nobody can be asked)."""

    def __init__(self, *, policy: ConfirmPolicy = "ask", person: Person | None = None) -> None:
        self.policy: ConfirmPolicy = policy
        self.person = person

    @property
    def interactive(self) -> bool:
        """Whether a confirm would be put to a person."""
        return self.policy == "ask" and self.person is not None

    def ask(self, title: str, body: str, cancel: CancelToken) -> Answer:
        """The strategy: put one confirm to a person, and nothing else (the policy and the
        session's approvals are :func:`decide`'s). By default ``person``; with nobody to
        ask, no (``default-deny``). A subclass may stand for a person (tests do); it
        returns an :class:`Answer` or an ``(allowed, how)`` pair, promptly once ``cancel``
        is set."""
        if self.person is None:
            return Answer(False, "default-deny")
        return self.person.ask(title, body, cancel)


class UI(Recorder, PersonAsker):
    """A front end in one object: a :class:`Recorder` of its events (forwarded to
    ``sink``) and a :class:`PersonAsker` (``policy``, ``person``). What a script or a test
    hands a run; a front end that renders events itself implements ``emit`` on a
    :class:`PersonAsker` instead, and keeps nothing."""

    def __init__(self, sink: Callable[[Event], None] | None = None, record_events: bool = True, *,
                 policy: ConfirmPolicy = "ask", person: Person | None = None) -> None:
        Recorder.__init__(self, sink, record_events)
        PersonAsker.__init__(self, policy=policy, person=person)


class NonInteractiveUI(UI):
    """Nobody to ask: every confirm is answered from ``policy`` (``allow``, ``deny``, or
    ``ask``, which with nobody to ask is no); ``auto_approve=True`` is ``policy="allow"``."""

    def __init__(self, auto_approve: bool = False, sink: Callable[[Event], None] | None = None,
                 record_events: bool = True, *, policy: ConfirmPolicy | None = None) -> None:
        super().__init__(sink, record_events, policy=policy or ("allow" if auto_approve else "ask"))


class WrappingUI:
    """A front end in front of another, ``front``: events and questions go to ``front``,
    whose policy is this one's (read from it, never copied). Subclasses add what they do
    on the way."""

    def __init__(self, front: FrontEnd) -> None:
        self.front = front

    @property
    def policy(self) -> ConfirmPolicy:
        return self.front.policy

    def emit(self, event: Event) -> None:
        self.front.emit(event)

    def ask(self, title: str, body: str, cancel: CancelToken) -> Answer:
        return Answer(*self.front.ask(title, body, cancel))


class RelayUI(WrappingUI):
    """``front`` unchanged, with every event also handed to ``observe`` first: how a
    caller watches what an invocation reports."""

    def __init__(self, front: FrontEnd, observe: Callable[[Event], None]) -> None:
        super().__init__(front)
        self._observe = observe

    def emit(self, event: Event) -> None:
        self._observe(event)
        self.front.emit(event)


class ScrubbingUI(WrappingUI):
    """A front end as a run holds it, where the two parts meet: each event is scrubbed
    once (:func:`scrub_event`) before ``front`` receives it, and so are the title and body
    of a confirm ``front`` is asked; :meth:`confirm` decides (:func:`decide`, once) with
    ``front``'s policy, this UI's :attr:`approvals` and :meth:`ask`, and reports the answer
    as a :class:`Confirm` event."""

    @classmethod
    def around(cls, ui: FrontEnd) -> ScrubbingUI:
        """``ui`` itself when it already scrubs, else ``ui`` behind a ScrubbingUI."""
        return ui if isinstance(ui, ScrubbingUI) else cls(ui)

    @property
    def approvals(self) -> Approvals | None:
        """The session's remembered approvals, where this UI has a session (a run's)."""
        return None

    def emit(self, event: Event) -> None:
        self.front.emit(scrub_event(event))

    def ask(self, title: str, body: str, cancel: CancelToken) -> Answer:
        return Answer(*self.front.ask(scrub(title), scrub(body), cancel))

    def confirm(self, source: str, title: str, body: str, cancel: CancelToken) -> bool:
        """Decide (:func:`decide`, once), report the answer as a :class:`Confirm` event,
        and return it."""
        answer = decide(title, body, cancel, policy=self.policy, ask=self.ask, approvals=self.approvals)
        self.emit(Confirm(source=source, title=title, body=body, answer=answer.allowed, how=answer.how,
                          via=answer.via))
        return answer.allowed


def scrub_event(event: Event) -> Event:
    """``event`` with every field scrubbed (:func:`secrets.scrub`); the same object when
    there was nothing to replace."""
    values = {item.name: getattr(event, item.name) for item in fields(event)}
    clean = scrub(values)
    return event if clean is values else replace(event, **clean)
