"""``rienda gate``'s whole answer to one hook event, failing closed.

:func:`answer_hook_event` is what the command does between reading stdin and writing
stdout: read the event (:mod:`.protocols`), decide it in time (:mod:`.decision`), record it
(:mod:`.record`) and shape the answer. It never raises: whatever goes wrong (bad or
oversized input, a missing home, a broken agent file or config.yaml, a hook that did not
load, throws or runs out of memory, the time bound, a bug) is a deny carrying the reason,
in the agent's format, with exit code 0. Only an agent that is none of the four has no
format: exit 2 (the code all four read as "block") and the reason alone.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ..common.json_value import JSON, JSONObject
from ..errors import RiendaError
from ..home.config import rienda_home
from ..secrets import Scrubber
from .decision import Decision, GateTimeout, DecisionProgress, decide_call, decide_within, gate_settings
from .protocols import AGENTS, MAX_EVENT_BYTES, GateEvent, HookPoint, Verdict, answer, parse_event, tool_event
from ..sessions.store import SessionStore, new_session_id
from .record import gate_name, gate_session, record_decision, record_point
from .runs import BLOCKING_POINTS, PointDecision, PointEvent, answer_point, decide_point, read_point

if TYPE_CHECKING:
    from ..cancel import CancelToken
    from ..home.config import Config
    from ..runtime.rienda import Rienda
    from .decision import GateSettings

__all__ = ["GATE_AGENTS", "GATE_EVENT_BYTES", "GateOptions", "GateReply", "answer_hook_event", "refusal"]

GATE_AGENTS = AGENTS
GATE_EVENT_BYTES = MAX_EVENT_BYTES
UNKNOWN_AGENT_EXIT = 2
_ANSWER_MARGIN = 0.05  # seconds kept, after recording, to print the answer before the deadline


@dataclass(frozen=True)
class GateOptions:
    """The command's options: ``home`` (None: ``$RIENDA_HOME`` or ``~/.rienda``), and the
    settings that override config.yaml's ``gate:`` (None: not given). ``cwd`` and ``env``:
    the asking process's working folder and environment, when a server decides for it
    (None: this process's). ``started``: when the asking process started
    (``time.monotonic``; None: now): the whole answer is out within the gate's timeout of
    it. ``announce``, when given, hears the deadline (``time.monotonic``) as soon as the
    settings are known (a server tells its client) and says whether anyone still waits for
    the answer (False: nothing is decided nor recorded; the asker decides itself); it must
    not raise."""

    home: str | None = None
    agent: str | None = None
    timeout: float | None = None
    confirm: str | None = None
    cwd: str | None = None
    env: Mapping[str, str] | None = None
    started: float | None = None
    announce: Callable[[float], bool] | None = None


@dataclass
class GateReply:
    """What the command prints: ``answer`` as JSON on stdout (None: nothing), ``notes``
    one line each on stderr, and exits with ``exit_code``. ``timed_out``: hooks may still
    hold threads, so the process should end without waiting for them."""

    answer: JSONObject | None
    exit_code: int = 0
    notes: list[str] = field(default_factory=list)
    timed_out: bool = False
    verdict: Verdict | None = None  # a tool call's
    said: str = ""  # what was answered, in a word (deny, allow, pass, ask, post; block, context, go-on, rewrite)

    def stdout(self) -> str:
        """What the command prints on stdout: the answer's JSON and a newline, or nothing."""
        return "" if self.answer is None else json.dumps(self.answer, ensure_ascii=False) + "\n"

    def stderr(self) -> str:
        """What it prints on stderr: one ``rienda gate: NOTE`` line per note."""
        return "".join(f"rienda gate: {note}\n" for note in self.notes)


def answer_hook_event(target: str, data: bytes, options: GateOptions) -> GateReply:
    """The reply to the event ``data`` sent by agent ``target``; never raises."""
    started = time.monotonic() if options.started is None else options.started
    if target not in AGENTS:
        return GateReply(None, UNKNOWN_AGENT_EXIT, [f"unknown agent {target!r} (one of {', '.join(AGENTS)}); denied"])
    reply = GateReply(None)
    heard: tuple[str, HookPoint] | None = None
    try:
        value, name, point = parse_event(target, data)
        heard = (name, point)
        if point.endswith("ToolExecute"):
            event = tool_event(target, value, name, point)
            verdict = _decided(event, options, started, reply)
            reply.answer, reply.said, reply.verdict = answer(target, event.phase, verdict), verdict.kind, verdict
            if verdict.kind == "deny":
                reply.notes.append(verdict.reason or "denied")
            return reply
        decision = _decided_point(read_point(target, value, name, point), options, started, reply)
        reply.answer, reply.said = answer_point(decision), decision.outcome
        if decision.failed or decision.outcome == "block":
            reply.notes.append(decision.failed or decision.reason or "blocked")
        return reply
    except Exception as exc:  # noqa: BLE001 - whatever failed, the gate denies (fail closed)
        return _failed(target, heard, _line(exc), reply)
    except BaseException as exc:  # noqa: BLE001 - even an interrupt is a deny, never an exit read as allow
        return _failed(target, heard, f"stopped ({type(exc).__name__})", reply)


def refusal(target: str, data: bytes, reason: str) -> GateReply:
    """A deny of the event ``data`` for ``reason``, decided by no hook (the gate's time
    went before one could decide), in ``target``'s format; never raises."""
    if target not in AGENTS:
        return GateReply(None, UNKNOWN_AGENT_EXIT, [f"unknown agent {target!r} (one of {', '.join(AGENTS)}); denied"])
    try:
        _, name, point = parse_event(target, data)
        heard: tuple[str, HookPoint] | None = (name, point)
    except Exception:  # noqa: BLE001 - an event that cannot be read is answered as a call before it runs
        heard = None
    return _failed(target, heard, reason, GateReply(None))


def _failed(target: str, heard: tuple[str, HookPoint] | None, why: str, reply: GateReply) -> GateReply:
    """``reply`` denying: a tool call's deny, a block where the event can block, else
    ``{}`` (a failure after the fact is said, and changes nothing)."""
    reason = f"denied by the Rienda gate: {why}"
    reply.notes.append(reason)
    reply.said = "deny"
    if heard is None or heard[1].endswith("ToolExecute"):
        reply.verdict = Verdict("deny", reason, failed=True)
        reply.answer = answer(target, "after" if heard and heard[1] == "afterToolExecute" else "before", reply.verdict)
    elif heard[1] in BLOCKING_POINTS:
        blocked = PointDecision(PointEvent(target, heard[0], heard[1], "", None), "gate", "block", reason)
        reply.answer = answer_point(blocked)
    else:
        reply.answer = {}
    return reply


def _engine(options: GateOptions) -> tuple[Rienda, dict[str, str]]:
    """The home's engine, scrubbing the asking process's secrets too, and that environment."""
    from ..runtime.rienda import Rienda  # the front door, which imports the whole engine: only once an event is in hand

    home = rienda_home(options.home)
    if not home.is_dir():
        raise RiendaError(f"the Rienda home {home} does not exist (--home, $RIENDA_HOME or ~/.rienda)")
    engine = Rienda(home=home, workdir=Path(options.cwd) if options.cwd else Path.cwd())
    env = dict(os.environ) if options.env is None else dict(options.env)
    engine.store.scrubber = Scrubber({**os.environ, **env})
    return engine, env


def _decided(event: GateEvent, options: GateOptions, started: float, reply: GateReply) -> Verdict:
    """The verdict on a tool event, recorded (a failure too: a deny)."""
    return _decision(
        event, options, started, reply,
        lambda engine, settings, session_id, cancel, env, config, progress: decide_call(
            engine, event, settings, session_id, cancel, env, config=config, progress=progress),
        lambda settings, exc, progress: Decision(event, settings.agent, _denied(exc), event.arguments, "gate",
                                                 progress.records()),
        record_decision).verdict


def _decided_point(event: PointEvent, options: GateOptions, started: float, reply: GateReply) -> PointDecision:
    """The decision on an event that is not a tool call, recorded (a failure too: a block
    where the event can block, else the event passes)."""
    def failed(settings: GateSettings, exc: Exception, progress: DecisionProgress) -> PointDecision:
        reason = _denied(exc).reason
        blocks = event.point in BLOCKING_POINTS
        return PointDecision(event, settings.agent, "block" if blocks else "pass", reason if blocks else None,
                             failed=reason, records=progress.records())

    return _decision(
        event, options, started, reply,
        lambda engine, settings, session_id, cancel, env, config, progress: decide_point(
            engine, event, settings, session_id, cancel, env, config, progress),
        failed, record_point)


_D = TypeVar("_D", Decision, PointDecision)


def _decision(event: GateEvent | PointEvent, options: GateOptions, started: float, reply: GateReply,
              decide: Callable[[Rienda, GateSettings, str, CancelToken, dict[str, str], Config, DecisionProgress], _D],
              failed: Callable[[GateSettings, Exception, DecisionProgress], _D],
              record: Callable[[SessionStore, _D, str, float], None]) -> _D:
    """``decide`` within the gate's time, ``failed``'s decision if it raised, recorded by
    ``record`` in the event's session (a failure to record is said, never raised)."""
    engine, env = _engine(options)
    try:
        config = engine.config()
        settings = gate_settings(config, options.agent, options.timeout, options.confirm)
        deadline = started + settings.timeout
        if options.announce is not None and not options.announce(deadline):
            raise Abandoned("the asking process went away before the gate could decide")
        session_id, recording = _session(engine.store, event, settings.agent, deadline, reply)
        progress = DecisionProgress()
        try:
            decision = decide_within(lambda cancel: decide(engine, settings, session_id, cancel, env, config, progress),
                                     settings.timeout, deadline, progress)
        except Exception as exc:  # noqa: BLE001 - a failure, recorded like any decision
            decision = failed(settings, exc, progress)
            reply.timed_out = isinstance(exc, GateTimeout)
        _record(lambda wait: record(engine.store, decision, session_id, wait), recording, deadline, reply)
        return decision
    finally:
        engine.close()


def _record(write: Callable[[float], None], recording: bool, deadline: float, reply: GateReply) -> None:
    """``write(wait)`` within what is left of the deadline; a failure is said, never raised."""
    try:
        if recording:
            write(max(0.0, deadline - _ANSWER_MARGIN - time.monotonic()))
    except Exception as exc:  # noqa: BLE001 - the decision stands; that it went unrecorded is said
        reply.notes.append(f"warning: the decision was not recorded: {_line(exc)}")


def _session(store: SessionStore, event: GateEvent | PointEvent, agent_id: str, deadline: float,
             reply: GateReply) -> tuple[str, bool]:
    """The id of the session the decision is recorded in (made now if new) and True; when
    that fails, an id of its own and False: the decision goes unrecorded (said)."""
    try:
        session_id, notes = gate_session(store, event, agent_id, max(0.0, (deadline - time.monotonic()) / 4))
    except Exception as exc:  # noqa: BLE001 - the decision is made all the same; that it is not recorded is said
        reply.notes.append(f"warning: the decision was not recorded: {_line(exc)}")
        return f"{new_session_id()[:22]}-{gate_name(event.agent, event.session_id)}", False
    reply.notes.extend(notes)
    return session_id, True


class Abandoned(RiendaError):
    """No one waits for the answer any more (a server's client left): nothing is decided."""


def _denied(exc: BaseException) -> Verdict:
    return Verdict("deny", f"denied by the Rienda gate: {_line(exc)}", failed=True)


def _line(exc: BaseException) -> str:
    """``exc`` in one line: Rienda's own message, else its type and message."""
    text = str(exc) if isinstance(exc, RiendaError) else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())
