"""Saving gate decisions as a Rienda session, one per session of the other agent.

The session ``<agent>-<its session id>`` (:func:`session_id_for`) has the deciding Rienda
agent in its header (so ``rienda replay`` takes that agent's hooks) and ``gate: {agent,
session_id}``; it is made by the first decision and appended to by every later one.

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
``meta.saw``, what ``afterToolExecute`` was given) are appended; replay reads the last
result of a call.

Two gate processes of one agent session take turns (a lock file of the gate's own,
``sessions/.<id>.gate-lock``, so that two never both make the session); the turn, and a
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
from ..sessions.store import SessionStore, SessionWriter
from .decision import Decision
from .protocols import CTX_FIELDS, GateEvent

__all__ = ["RECORD_WAIT", "record_decision", "recorded_gate", "session_id_for", "unseen_result"]

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


def session_id_for(event: GateEvent) -> str:
    """The Rienda session of the other agent's session: ``claude-code-<its id>``."""
    own = _UNSAFE.sub("_", event.session_id)[:100] or "unknown"
    return f"{event.agent}-{own}"


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
    """Append ``decision`` to the session ``session_id`` (made if new); see the module's
    contract. SessionBusy after ``wait`` seconds of another writer; SessionError for a
    file there that is not a session; SessionWriteError when the disk refuses."""
    with _turn(store, session_id, wait) as deadline:
        writer = _writer(store, decision, session_id, deadline)
        try:
            if decision.event.phase == "before":
                _before(writer, decision)
            else:
                _after(writer, decision)
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


def _writer(store: SessionStore, decision: Decision, session_id: str, deadline: float) -> SessionWriter:
    """The session's writer: made with its header, or resumed; a run writing it is waited
    for until ``deadline`` (``time.monotonic``)."""
    while True:
        try:
            if (store.directory / f"{session_id}.jsonl").exists():
                return store.resume(session_id)
            event = decision.event
            header = {"gate": {"agent": event.agent, "session_id": event.session_id}}
            writer = store.create(decision.agent_id, f"gate/{event.agent}", session_id=session_id, parent=header)
            writer.append_message(Message.user(f"{event.agent} session {event.session_id or '(none given)'}, "
                                               f"gated by Rienda agent {decision.agent_id}"))
            return writer
        except SessionBusy:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


@contextmanager
def _turn(store: SessionStore, session_id: str, wait: float) -> Iterator[float]:
    """This process's turn at the session among gate processes (a lock file of its own
    beside it, so that no two make the same session at once): yields the deadline."""
    deadline = time.monotonic() + wait
    store.directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(store.directory / f".{session_id}.gate-lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise SessionBusy(f"session {session_id} is being written by another gate process; "
                                      f"waited {wait:g} s") from None  # the OS's EWOULDBLOCK says no more
                time.sleep(0.01)
        yield deadline
    finally:
        os.close(fd)
