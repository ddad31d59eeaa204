"""Saving gate decisions as a Rienda session, one per session of the other agent.

The session of one session of another agent (:func:`gate_session`) is named
``<time>-<agent>-<its session id>`` (``20261204-111616-800000-claude-code-ffd93f0d...``):
its id sorts by creation time like every session's and says whose it is. It is found
again by its name, ``<agent>-<its session id>`` (:func:`gate_name`,
:func:`find_gate_session`): the newest session so named whose header names that agent
session. One whose header cannot be read is passed over, said in a note, and the
decisions go to a new one (whose first line names the one passed over). Its header has
the deciding Rienda agent (so ``rienda replay`` takes that agent's hooks) and ``gate:
{agent, session_id}``; it is made by the first decision and appended to by every later one.

Each decision before a call is saved as a run saves a tool call, so ``rienda show``,
``rienda replay`` and ``pytest --rienda-replay`` read it unchanged:

- an assistant message holding the normalized call (``meta.gate``: the agent, its event,
  its tool name and cwd, the answer given). Its ``tool_calls[0]`` is exactly what
  ``rienda hook NAME beforeToolExecute`` takes as its payload;
- the ledger (``hook_decision`` records) and the ``confirm`` records;
- a tool result: a refusal's reason with ``meta.refused_by`` (``gate`` when a failure
  denied); otherwise a note with ``meta.result_unseen`` (the gate decides before the
  call runs; replay then runs no ``afterToolExecute`` on it) and ``meta.arguments`` when
  the hooks rewrote them.

After the call (Claude Code's PostToolUse...) the ledger and the tool's real result (with
``meta.saw``, what ``afterToolExecute`` was given) are appended; replay reads the result of
a call that came before the next decision on the same call id.

Two gate processes of one agent session take turns (a lock file of the gate's own,
``sessions/.<name>.gate-lock``, so that two never both make the session); the turn, and a
run holding the session's writer lock, are waited for at most ``wait`` seconds in all
(then :class:`~..errors.SessionBusy`, and the decision is not recorded).
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ..common.json_value import JSON, JSONObject
from ..errors import SessionBusy, SessionError
from ..sessions.messages import Message, MessageMeta, ToolCall
from ..sessions.seen import saw
from ..sessions.store import SessionStore, SessionWriter, new_session_id
from .decision import Decision
from .protocols import AGENTS, CTX_FIELDS, GateEvent
from .runs import PointDecision, PointEvent

__all__ = ["RECORD_WAIT", "find_gate_session", "gate_name", "gate_session", "named_session", "record_decision",
           "record_point", "recorded_gate", "unseen_result"]

RECORD_WAIT = 5.0  # seconds a decision waits for another gate process writing the same session
_UNSEEN = {  # what a call the gate let through saved as its result, by the gate's answer
    "allow": "(allowed by the gate; the agent runs the call, and its result is not seen before it runs)",
    "pass": "(no hook objected; the agent decides as it would without the gate, and its result is not seen)",
    "ask": "(the gate told the agent to ask its user; if they allow it the agent runs the call, its result "
           "not seen)",
}


def unseen_result(answer: str) -> str:
    """The text saved as the result of a call the gate answered ``answer`` (not ``deny``):
    what the gate decided, since the agent runs the call after the gate has answered."""
    return _UNSEEN.get(answer, f"(the gate answered {answer}; the agent runs the call, its result not seen)")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_STAMP = re.compile(r"\d{8}-\d{6}-\d{6}")  # new_session_id's time, which every id starts with


def gate_name(agent: str, their_id: str) -> str:
    """The name of the Rienda session of ``agent``'s session ``their_id``:
    ``claude-code-<its id>`` (made safe, short enough for an id with its time before it)."""
    own = _UNSAFE.sub("_", their_id)[:128 - 24 - len(agent)] or "unknown"
    return f"{agent}-{own}"


def find_gate_session(store: SessionStore, name: str,
                      their_id: str | None = None) -> tuple[str | None, list[tuple[str, str]]]:
    """The newest session named ``name`` (:func:`gate_name`) whose header is a gate's (of
    ``their_id``, when given), None when there is none; and each newer one passed over
    because its header cannot be read, with why."""
    passed: list[tuple[str, str]] = []
    if not store.directory.is_dir():
        return None, passed
    stems = (path.stem for path in store.directory.glob(f"*-{name}.jsonl"))
    for session_id in sorted((stem for stem in stems if stem[23:] == name and _STAMP.fullmatch(stem[:22])),
                             reverse=True):
        try:
            gate = store.header(session_id).gate
        except SessionError as exc:
            passed.append((session_id, str(exc)))
            continue
        if gate is not None and (their_id is None or gate.get("session_id") == their_id):
            return session_id, passed
    return None, passed


def named_session(store: SessionStore, session_id: str) -> str:
    """``session_id`` itself, unless no session has that id and it names a gate's session
    (``claude-code-<its id>``): then the newest such session's id."""
    if (store.directory / f"{session_id}.jsonl").is_file() or not session_id.startswith(
            tuple(f"{agent}-" for agent in AGENTS)):
        return session_id
    return find_gate_session(store, session_id)[0] or session_id


def gate_session(store: SessionStore, event: GateEvent | PointEvent, agent_id: str,
                 wait: float) -> tuple[str, list[str]]:
    """The id of the session holding the decisions of ``event``'s agent session (see the
    module's docstring), made now with the deciding agent ``agent_id`` when there is none;
    and the notes of sessions passed over. SessionBusy when another gate process held the
    turn for ``wait`` seconds; SessionError or SessionWriteError when it cannot be made."""
    name = gate_name(event.agent, event.session_id)
    with _turn(store, name, wait):
        found, passed = find_gate_session(store, name, event.session_id)
        if found is None:
            found = f"{new_session_id()[:22]}-{name}"
            _create(store, event, agent_id, found, passed[0][0] if passed else None).close()
        return found, [f"warning: {why}; {event.agent}'s decisions go on in session {found}" for _, why in passed]


def _create(store: SessionStore, event: GateEvent | PointEvent, agent_id: str, session_id: str,
            unreadable: str | None = None) -> SessionWriter:
    """The session ``session_id`` made for ``event``'s agent session, its first line saying
    whose it is (and the session before it whose header cannot be read)."""
    header = {"gate": {"agent": event.agent, "session_id": event.session_id}}
    writer = store.create(agent_id, f"gate/{event.agent}", session_id=session_id, parent=header)
    writer.append_message(Message.user(
        f"{event.agent} session {event.session_id or '(none given)'}, gated by Rienda agent {agent_id}"
        + (f" (the session before, {unreadable}, cannot be read)" if unreadable else "")))
    return writer


def recorded_gate(store: SessionStore, session_id: str, call_id: JSON) -> JSONObject | None:
    """``ctx.session.gate`` as the gate gave it for call ``call_id`` of the saved session
    ``session_id``; None when there is no such session or call (``rienda hook`` then
    gives none)."""
    if not isinstance(call_id, str) or not (store.directory / f"{session_id}.jsonl").is_file():
        return None
    try:
        loaded = store.load(session_id)
    except SessionError:
        return None
    for message in loaded.messages:
        saved = message.meta.gate
        if saved is not None and any(call.id == call_id for call in message.tool_calls):
            return {key: saved.get(key) for key in CTX_FIELDS}
    return None


def record_decision(store: SessionStore, decision: Decision, session_id: str, wait: float = RECORD_WAIT) -> None:
    """Append ``decision`` to the session ``session_id`` (:func:`gate_session`; made if it
    is gone); see the module's contract. SessionBusy after ``wait`` seconds of another
    writer; SessionError for a file there that is not a session; SessionWriteError when the
    disk refuses."""
    with _turn(store, gate_name(decision.event.agent, decision.event.session_id), wait) as deadline:
        writer = _writer(store, decision.event, decision.agent_id, session_id, deadline)
        try:
            if decision.event.phase == "before":
                _before(writer, decision)
            else:
                _after(writer, decision)
        finally:
            writer.close()


def record_point(store: SessionStore, decision: PointDecision, session_id: str, wait: float = RECORD_WAIT) -> None:
    """Append the decision on an event that is not a tool call to the session
    ``session_id``: a submitted prompt as the user's message, a prompt the hooks keep the
    agent going with as one too, a model's answer (Gemini CLI's AfterModel) as the
    assistant's message with what ``afterModelResponse`` saw (so replay runs it again), and
    the ledger of every one. Errors as :func:`record_decision`'s."""
    event = decision.event
    with _turn(store, gate_name(event.agent, event.session_id), wait) as deadline:
        writer = _writer(store, event, decision.agent_id, session_id, deadline)
        try:
            about = {**event.ctx(), "answer": decision.outcome, **({"failed": True} if decision.failed else {})}
            if event.point == "beforeRun":
                writer.append_message(Message("user", event.prompt, meta=MessageMeta(gate=about)))
            for record in decision.records:
                writer.append_record(record)
            if decision.outcome == "go-on":
                writer.append_message(Message("user", decision.value, meta=MessageMeta(gate=about)))
            if event.point == "afterModelResponse":
                made = decision.value if decision.outcome == "rewrite" else event.text
                seen = saw(decision.hooks, "afterModelResponse", {"text": (event.text, made), "thinking": ("", "")})
                writer.append_message(Message("assistant", made, meta=MessageMeta(gate=about, saw=seen)))
        finally:
            writer.close()


def _before(writer: SessionWriter, decision: Decision) -> None:
    event, verdict = decision.event, decision.verdict
    call = ToolCall(event.call_id, event.name, event.arguments)
    writer.append_message(Message("assistant", "", tool_calls=(call,), meta=MessageMeta(gate=_about(event, verdict.kind))))
    _ledger(writer, decision)
    if verdict.kind == "deny":
        refused = MessageMeta(refused_by=decision.refused_by or "gate", gate={"answer": "deny", "failed": verdict.failed})
        writer.append_message(Message.tool_result(call, verdict.reason or "denied", True, refused))
        return
    rewritten = decision.arguments if decision.arguments != event.arguments else None
    meta = MessageMeta(result_unseen=True, gate={"answer": verdict.kind}, arguments=rewritten)
    writer.append_message(Message.tool_result(call, unseen_result(verdict.kind), False, meta))


def _after(writer: SessionWriter, decision: Decision) -> None:
    event = decision.event
    _ledger(writer, decision)
    given, result = decision.given, decision.result
    if given is None or result is None:  # a failure before the hooks ran: the ledger says what there is
        return
    seen = saw(decision.hooks, "afterToolExecute", {"text": (given.text, result.text),
                                                    "isError": (given.is_error, result.is_error)})
    meta = MessageMeta(arguments=event.arguments, gate=_about(event, decision.verdict.kind), saw=seen)
    call = ToolCall(event.call_id, event.name, event.arguments)
    writer.append_message(Message.tool_result(call, result.text, result.is_error, meta))


def _ledger(writer: SessionWriter, decision: Decision) -> None:
    for record in decision.records:
        writer.append_record(record)


def _about(event: GateEvent, answer: str) -> JSONObject:
    return {**event.ctx(), "answer": answer}


def _writer(store: SessionStore, event: GateEvent | PointEvent, agent_id: str, session_id: str,
            deadline: float) -> SessionWriter:
    """The session's writer: made with its header, or resumed; a run writing it is waited
    for until ``deadline`` (``time.monotonic``)."""
    while True:
        try:
            if (store.directory / f"{session_id}.jsonl").exists():
                return store.resume(session_id)
            return _create(store, event, agent_id, session_id)
        except SessionBusy:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


@contextmanager
def _turn(store: SessionStore, name: str, wait: float) -> Iterator[float]:
    """This process's turn at the sessions named ``name`` among gate processes (a lock file
    of its own beside them, so that no two make one at once): yields the deadline."""
    deadline = time.monotonic() + wait
    store.directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(store.directory / f".{name}.gate-lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise SessionBusy(f"the session {name} is being written by another gate process; "
                                      f"waited {wait:g} s") from None  # the OS's EWOULDBLOCK says no more
                time.sleep(0.01)
        yield deadline
    finally:
        os.close(fd)
