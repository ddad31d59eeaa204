"""The agent loop: one run of one prompt, from ``beforeRun`` to ``afterRun``.

    beforeRun → for each model turn:
        beforeModelRequest (system for this turn only) → the provider, streamed →
        afterModelResponse (rewrites before saving) → the assistant message is saved →
        for each tool call: beforeToolExecute chain → the tool (or the refusal) →
        afterToolExecute chain → the result is saved
    → until a response has no tool calls → afterRun({reason}) (a prompt it gives: once more)

Contracts:
- ``beforeRun`` may refuse the run (``error`` naming the hook; no model called) or add
  ``context`` to this run's system prompt; ``afterRun`` may give a prompt to go on with, once.
- Every message is saved the moment it exists; a run stopped or failed at any point leaves
  the session holding everything produced until then (a partial answer is saved with
  ``meta.interrupted`` or ``meta.error``; calls that never ran get an error result, and
  calls a killed run left unanswered get one when the session resumes, so the conversation
  stays valid for every vendor, whose requests are made from :func:`.pairing.for_vendors`).
- The run ends with ``end_turn``, ``interrupted`` (the cancel token was set) or ``error``
  (provider failure, exhausted script, a session file that cannot be written, a model that
  keeps calling undeclared tools, ``max_turns`` model turns taken without a final answer,
  internal error); ``afterRun`` sees that reason. Nothing but a :class:`RunResult` comes
  out: no exception escapes.
- A stop lets the wind-down run: ``afterRun``, and ``afterModelResponse`` reviewing a
  partial answer, run under :meth:`CancelToken.for_wind_down`, so the next interrupt stops
  them; that is reported and recorded in the session (a ``stopped`` record).
- Each call is labelled for what it is: a call to a tool the agent does not declare gets an
  error result naming the agent's tools (the model can recover), and the other calls of the
  turn run normally; :data:`UNKNOWN_TOOL_TURNS` model turns in a row with such calls end the
  run with ``error``.
- A refused call does not run and gets no ``afterToolExecute`` (no tool returned).
- Everything is reported as events through the run's UI (scrubbed, streamed text re-cut
  so that no secret is split across deltas); hook decisions and confirms are also saved.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..cancel import CancelToken
from ..common.json_value import JSONObject
from ..common.text import repair
from ..ctx.host import RunContext
from ..errors import ContextOverflow, HookStopped, Interrupted, ProviderError, RiendaError, SessionWriteError
from ..events import (Compaction, Diagnostic, MessageSaved, Notify, RunEnd, RunEndReason, RunStart, ToolCallStarted,
                      ToolResultReady)
from ..hooks import HookChain, ModelResponse, RunEnding, chain_hooks, declared_hooks
from ..home.agents import Agent
from ..providers import ModelRequest, Provider
from ..providers.collect import Partial, stream_response
from ..sandbox.protocol import SandboxLike
from ..secrets import scrub_text
from ..sessions.fill import ContextFill
from ..sessions.messages import EMPTY_META, Message, MessageMeta, ToolCall, Usage
from ..sessions.pairing import ended_result, for_vendors, unanswered, unique_calls
from ..sessions.records import Record, RunEndRecord, StoppedRecord
from ..sessions.seen import saw
from ..sessions.writer import SessionWriter
from ..tools.invoke import invoke_tool
from ..tools.model import Catalog, Hook, ToolResult
from ..ui import Approvals, EventSink
from .compactor import CompactionState, Compactor, request_fill, sent_messages, tool_specs
from .run_ui import RunUI

__all__ = ["UNKNOWN_TOOL", "UNKNOWN_TOOL_TURNS", "RunResult", "TurnSetup", "run_prompt"]

UNKNOWN_TOOL = "unknown tool {name!r}; "  # how the result of a call to an undeclared tool starts (replay knows it by it)
UNKNOWN_TOOL_TURNS = 3  # model turns in a row calling undeclared tools before the run ends
STOPPED_CALL = "interrupted before the tool finished"  # the result of a call a stop cut short


@dataclass(frozen=True)
class RunResult:
    """What one run produced: ``messages`` are this run's, the prompt included."""

    session_id: str
    reason: RunEndReason
    messages: list[Message]
    error: str | None = None
    failure: RiendaError | None = None  # what refused the run before it started (bad setup)
    context: ContextFill | None = None  # how full the model's window is now (sessions/fill.py)

    @property
    def text(self) -> str:  # the last assistant text of the run
        return _last_text(self.messages)

    @property
    def tool_calls(self) -> list[tuple[ToolCall, Message | None]]:  # each call and its result message
        results = {m.tool_call_id: m for m in self.messages if m.role == "tool"}
        return [(call, results.get(call.id)) for m in self.messages for call in m.tool_calls]


@dataclass
class TurnSetup:
    """Everything a run needs, resolved and checked before anything is saved."""

    session_id: str
    agent: Agent
    model_id: str
    provider: Provider
    model_name: str
    catalog: Catalog
    sandbox: SandboxLike
    run: RunContext
    writer: SessionWriter
    history: list[Message] = field(default_factory=list)
    # (title, body) allowed for the session; or, in a sub-agent's run, the top-level run's Approvals
    approvals: set[tuple[str, str]] | Approvals = field(default_factory=set)
    max_turns: int = 50  # model turns one run may take
    inherited_hooks: tuple[Hook, ...] = ()  # a sub-agent's: its lead's whole chain, run before its own hooks
    compaction: CompactionState = field(default_factory=CompactionState)  # its settings, view and pins


def run_prompt(setup: TurnSetup, prompt: str, cancel: CancelToken) -> RunResult:
    """Run ``prompt`` to the end; append to ``setup.history``; never raises."""
    ui = setup.run.ui
    produced: list[Message] = []

    def save(message: Message) -> None:
        setup.writer.append_message(message)
        setup.history.append(message)
        produced.append(message)

    run, chain = _run_chain(setup)
    turn = _Turn(chain, run, save, Compactor(setup, chain))
    reason: RunEndReason = "end_turn"
    error: str | None = None
    ended: RunEnding | None = None  # afterRun's answer at the run's end, once asked
    try:
        _answer_unanswered(setup, ui)
        save(Message.user(repair(prompt)))  # from argv or a cell: undecodable bytes are lone surrogates
        ui.emit(RunStart(setup.session_id, setup.agent.id, setup.model_id))
        gate = chain.before_run(setup.session_id, setup.agent.id, setup.model_id, cancel, repair(prompt))
        if gate.refused_by is not None:
            raise RiendaError(f"hook {gate.refused_by} refused the run: {gate.reason or 'it gave no reason'}")
        if gate.context:  # for the model to read, in this run's system prompt (not saved)
            setup.agent = replace(setup.agent, system=f"{setup.agent.system}\n\n{gate.context}")
        _turns(setup, turn, cancel)
        ended = chain.after_run(reason, cancel, _last_text(produced))
        if ended.prompt is not None:  # a hook keeps the run going, once
            save(Message.user(ended.prompt))
            _turns(setup, turn, cancel)
    except Interrupted:
        reason = "interrupted"
    except (ProviderError, RiendaError) as exc:
        reason, error = "error", str(exc)
    except Exception as exc:  # noqa: BLE001 - a bug must end the run, not lose the session
        reason, error = "error", f"internal error: {type(exc).__name__}: {exc}"
        ui.emit(Diagnostic("engine", traceback.format_exc()))
    after = chain if ended is None or ended.prompt is not None or reason != "end_turn" else None  # None: it ran
    reason, error = _end(setup, after, reason, error, cancel, _last_text(produced), ended is not None)
    error = None if error is None else scrub_text(error)  # front ends show it as it is
    fill = request_fill(setup, cancel)
    ui.emit(RunEnd(reason, error, context=fill))
    return RunResult(setup.session_id, reason, produced, error, context=fill)


def _run_chain(setup: TurnSetup) -> tuple[RunContext, HookChain]:
    """The run's context (its UI saving hook decisions and confirms in the session) and its
    hook chain (a sub-agent's: its lead's hooks first)."""
    depth = (setup.run.subagent or {}).get("depth", 0)
    run = replace(setup.run, ui=RunUI(setup.run.ui, setup.writer.append_record, setup.approvals, depth))
    own = declared_hooks(setup.catalog.hooks, setup.agent.hooks, setup.agent.fail_closed)
    return run, HookChain(chain_hooks(setup.inherited_hooks, own), setup.sandbox, run)


def compact_session(setup: TurnSetup, instructions: str | None, cancel: CancelToken) -> Compaction:
    """A manual compaction (``%rienda compact``, ``rienda compact``) outside a run, through
    the agent's hooks (:meth:`.compactor.Compactor.manual`)."""
    _, chain = _run_chain(setup)
    return Compactor(setup, chain).manual(instructions, cancel)


@dataclass(frozen=True)
class _Turn:
    """What each model turn of a run uses: its hook chain, its context (whose UI keeps the
    ledger), how it saves a message, and its compaction's owner."""

    chain: HookChain
    run: RunContext
    save: Callable[[Message], None]
    compactor: Compactor


def _answer_unanswered(setup: TurnSetup, ui: EventSink) -> None:
    """Save an error result for each call an earlier run left without one (it was killed)."""
    missing = unanswered(setup.history)
    for result in map(ended_result, missing):
        setup.writer.append_message(result)
        setup.history.append(result)
    if missing:
        names = ", ".join(f"{call.name} [{call.id}]" for call in missing)
        ui.emit(Notify("engine", "resumed", f"an earlier run ended before {names} finished; saved an error result"))


def _turns(setup: TurnSetup, turn: _Turn, cancel: CancelToken) -> None:
    """Model turns until one calls no tool. ``max_turns`` turns that all called tools, or a
    model that calls tools the agent does not declare in :data:`UNKNOWN_TOOL_TURNS` turns in
    a row, end the run with an error."""
    in_a_row, turns = 0, 1
    while calls := _model_turn(setup, turn, cancel):
        if turns == setup.max_turns:
            limit = setup.max_turns
            raise RiendaError(f"stopped after {limit} model turns without a final answer (max_turns: {limit}); raise "
                              "it with --max-turns N on rienda run, or max_turns: N in the agent's front matter or "
                              "in config.yaml")
        turns += 1
        unknown = sorted({call.name for call in calls if call.name not in setup.agent.tools})
        in_a_row = in_a_row + 1 if unknown else 0
        if in_a_row >= UNKNOWN_TOOL_TURNS:
            raise ProviderError(
                f"the model kept calling tools agent {setup.agent.id} does not declare ({in_a_row} model turns "
                f"in a row, lately {', '.join(map(repr, unknown))}; its tools: {_tool_list(setup.agent)})")


def _end(setup: TurnSetup, chain: HookChain | None, reason: RunEndReason, error: str | None, cancel: CancelToken,
         text: str = "", continued: bool = False) -> tuple[RunEndReason, str | None]:
    """``afterRun`` (which the next interrupt stops; None: it ran already), then the
    ``run_end`` record; the reason and error the run ends with (``error`` if its session
    file could not be written)."""
    try:
        if chain is not None:
            chain.after_run(reason, cancel.for_wind_down(), text, continued)
    except Interrupted as exc:
        _stopped(setup, setup.run.ui, "afterRun", _naming("its hooks did not finish", exc))
    except SessionWriteError:
        pass  # kept as the writer's failure, reported below
    failure = setup.writer.failure
    if failure is not None and error is None:
        reason, error = "error", str(failure)
    _record(setup.writer, RunEndRecord(reason, error))
    return reason, error


def _last_text(produced: list[Message]) -> str:  # the last assistant text
    return next((m.text for m in reversed(produced) if m.role == "assistant" and m.text), "")


def _stopped(setup: TurnSetup, ui: EventSink, point: str, what: str) -> None:
    """Report and record that an interrupt stopped the wind-down at ``point``."""
    message = f"{point} was stopped by another interrupt: {what}"
    ui.emit(Diagnostic("engine", message))
    _record(setup.writer, StoppedRecord(point, message))


def _naming(what: str, stop: Interrupted) -> str:
    """``what``, and the hook that was running when ``stop`` came, if one was."""
    return f"{what} (hook {stop.hook} was running, {stop.seconds:.1f} s)" if isinstance(stop, HookStopped) else what


def _record(writer: SessionWriter, record: Record) -> None:
    """Append a record while the run ends; a write failure is already the writer's ``failure``."""
    try:
        writer.append_record(record)
    except SessionWriteError:
        pass


def _tool_list(agent: Agent) -> str:
    return ", ".join(agent.tools) or "none"


def _model_turn(setup: TurnSetup, turn: _Turn, cancel: CancelToken) -> tuple[ToolCall, ...]:
    """One model call and its tool calls; the calls (none: the run is done)."""
    chain, run = turn.chain, turn.run
    turn.compactor.before_request(cancel)
    try:
        streamed, usage, vendor = _request(setup, chain, run, cancel)
    except Partial as partial:
        streamed, usage, vendor = _after_refusal(setup, turn, partial, cancel)
    streamed = ModelResponse(streamed.text, streamed.thinking, tuple(unique_calls(streamed.tool_calls, setup.history)))
    try:
        response = chain.after_model_response(streamed, cancel)
    except Interrupted as exc:
        turn.save(Message("assistant", meta=MessageMeta(interrupted=True, withheld=_naming(
            "stopped during afterModelResponse; the text those hooks had not reviewed was not saved", exc))))
        raise
    calls = tuple(response.tool_calls)
    kept = vendor if vendor and response.thinking == streamed.thinking else None
    message = Message("assistant", response.text, response.thinking, calls, usage=usage,
                      meta=MessageMeta(vendor=kept, saw=_answer_saw(chain, streamed, response)))
    turn.save(message)
    run.ui.emit(MessageSaved(message.to_dict(), context=request_fill(setup, cancel)))
    start = len(setup.history)
    try:
        for call in calls:
            (_tool_call if call.name in setup.agent.tools else _unknown_tool_call)(setup, turn, call, cancel)
    except BaseException as exc:  # whatever ended the run, every call keeps a result
        answered = {m.tool_call_id for m in setup.history[start:] if m.role == "tool"}
        text = (STOPPED_CALL if isinstance(exc, Interrupted)
                else "the session file could not be written while this call ran; its result is unknown"
                if isinstance(exc, SessionWriteError) else "the run ended with an error before this tool call finished")
        try:
            for pending in (call for call in calls if call.id not in answered):
                own = exc.call_result() if isinstance(exc, HookStopped) and exc.call_id == pending.id else None
                _save_result(pending, ToolResult(own or text, True), run.ui, turn.save)  # own: its hook was stopped
        except SessionWriteError:
            pass  # the writer keeps the failure; the resume answers them
        raise
    return calls


def _after_refusal(setup: TurnSetup, turn: _Turn, partial: Partial,
                   cancel: CancelToken) -> tuple[ModelResponse, Usage | None, JSONObject | None]:
    """A request that failed: a refusal for length (nothing answered) compacted once and
    asked again, a second refusal the one line; any other failure ends the run, once what
    arrived is saved."""
    cause = partial.cause
    refused = isinstance(cause, ContextOverflow) and not (partial.response.text or partial.response.thinking)
    if not isinstance(cause, ContextOverflow) or not refused:
        raise _ended(setup, turn, partial, cancel, None) from None  # the error as raised, not as a Partial's cause
    made = turn.compactor.after_refusal(cause, cancel)
    if made is None or made.outcome != "compacted":
        raise _ended(setup, turn, partial, cancel, made) from None  # the one line, not a Partial's cause
    try:  # once: a second refusal for the length is the one line, never another compaction
        return _request(setup, turn.chain, turn.run, cancel)
    except Partial as again:
        raise _ended(setup, turn, again, cancel, made, again=True) from again.cause


def _request(setup: TurnSetup, chain: HookChain, run: RunContext,
             cancel: CancelToken) -> tuple[ModelResponse, Usage | None, JSONObject | None]:
    """One model request, made from the session through its compaction view."""
    sent = sent_messages(setup)
    system = chain.before_model_request(setup.agent.system, setup.model_id, sent, cancel)
    request = ModelRequest(setup.model_name, system, for_vendors(sent), tool_specs(setup), run.workdir,
                           setup.agent.options)
    return stream_response(setup.provider, request, run.ui, cancel)


def _ended(setup: TurnSetup, turn: _Turn, partial: Partial, cancel: CancelToken, made: Compaction | None,
           again: bool = False) -> BaseException:
    """What a failed request ends the run with, once what arrived is saved: the provider's
    own error, or the one overflow line (``made``: what compaction did; ``again``: refused
    after compacting once)."""
    _save_partial(setup, turn, partial, cancel)
    cause = partial.cause
    if isinstance(cause, ContextOverflow):
        cut_short = bool(partial.response.text or partial.response.thinking)
        return turn.compactor.overflow(cause, cancel, made, again=again, cut_short=cut_short)
    return cause  # the provider's own error, as it was raised


def _save_partial(setup: TurnSetup, turn: _Turn, partial: Partial, cancel: CancelToken) -> None:
    """Save a partial answer, reviewed by afterModelResponse first (as every answer is);
    the next interrupt stops the review, and then nothing of the answer is saved."""
    response = partial.response
    if not (response.text or response.thinking):
        return
    cut = isinstance(partial.cause, Interrupted)
    try:
        response = turn.chain.after_model_response(response, cancel.for_wind_down())
    except Interrupted as exc:
        _stopped(setup, turn.run.ui, "afterModelResponse",
                 _naming("the partial answer it was reviewing was not saved", exc))
        return
    turn.save(Message("assistant", response.text, response.thinking, meta=MessageMeta(
        interrupted=cut, error=not cut, saw=_answer_saw(turn.chain, partial.response, response))))


def _answer_saw(chain: HookChain, given: ModelResponse, made: ModelResponse) -> JSONObject | None:
    """What afterModelResponse saw (:mod:`..sessions.seen`), for replay."""
    return saw(chain.hooks, "afterModelResponse", {"text": (given.text, made.text),
                                                   "thinking": (given.thinking, made.thinking)})


def _tool_call(setup: TurnSetup, turn: _Turn, call: ToolCall, cancel: CancelToken) -> None:
    chain, run = turn.chain, turn.run
    gate = chain.before_tool_execute(call.id, call.name, call.arguments, cancel)
    run.ui.emit(ToolCallStarted(call.id, call.name, gate.arguments, gate.refused_by))
    if not gate.allowed:
        _save_result(call, gate.refusal(), run.ui, turn.save, MessageMeta(refused_by=gate.refused_by))
        return
    given = invoke_tool(setup.catalog.tools[call.name], gate.arguments, run, setup.sandbox, cancel, call.id)
    if given.interrupted:  # a sub-agent's run was stopped: its session is linked, then the run stops
        _save_result(call, ToolResult(STOPPED_CALL, True), run.ui, turn.save, given.meta)
        raise Interrupted(given.text)
    result = chain.after_tool_execute(call.id, call.name, gate.arguments, given, cancel)
    seen = saw(chain.hooks, "afterToolExecute", {"text": (given.text, result.text),
                                                 "isError": (given.is_error, result.is_error)})
    rewritten = gate.arguments if gate.arguments != call.arguments else None
    meta = replace(given.meta or EMPTY_META, arguments=rewritten, saw=seen)  # the agent tool's: its sub-agent's session
    _save_result(call, result, run.ui, turn.save, meta)


def _unknown_tool_call(setup: TurnSetup, turn: _Turn, call: ToolCall, cancel: CancelToken) -> None:
    """A call to a tool the agent does not declare: an error result the model can act on."""
    turn.run.ui.emit(ToolCallStarted(call.id, call.name, call.arguments))
    _save_result(call, ToolResult(UNKNOWN_TOOL.format(name=call.name) + f"this agent's tools: {_tool_list(setup.agent)}",
                                  True), turn.run.ui, turn.save)


def _save_result(call: ToolCall, result: ToolResult, ui: EventSink, save: Callable[[Message], None],
                 meta: MessageMeta | None = None) -> None:
    save(Message.tool_result(call, result.text, result.is_error, meta))
    link = meta.subagent if meta else None
    ui.emit(ToolResultReady(call.id, call.name, result.text, result.is_error, link.session_id if link else None))
