"""The agent loop: one run of one prompt, from ``beforeRun`` to ``afterRun``.

    beforeRun → for each model turn:
        beforeModelRequest (system for this turn only) → the provider, streamed →
        afterModelResponse (rewrites before saving) → the assistant message is saved →
        for each tool call: beforeToolExecute chain → the tool (or the refusal) →
        afterToolExecute chain → the result is saved
    → until a response has no tool calls → afterRun({reason})

Contracts:
- Every message is saved the moment it exists; a run stopped or failed at any point leaves
  the session holding everything produced until then (a partial answer is saved with
  ``meta.interrupted`` or ``meta.error``; calls that never ran get an error result, and
  calls a killed run left unanswered get one when the session resumes, so the conversation
  stays valid for every vendor, whose requests are made from :func:`.pairing.for_vendors`).
- The run ends with ``end_turn``, ``interrupted`` (the cancel token was set) or ``error``
  (provider failure, exhausted script, a session file that cannot be written, a model that
  keeps calling undeclared tools, ``max_turns`` model turns taken without a final answer,
  internal error); ``afterRun`` sees that reason. Nothing
  but a :class:`RunResult` comes out: no exception escapes.
- A stop lets the wind-down run: ``afterRun``, and ``afterModelResponse`` reviewing a
  partial answer, run under :meth:`CancelToken.for_wind_down`, so the next interrupt stops
  them; that is reported and recorded in the session (a ``stopped`` record).
- Each call is labelled for what it is: a call to a tool the agent does not declare gets an
  error result naming the agent's tools (the model can recover), and the other calls of the
  turn run normally; :data:`UNKNOWN_TOOL_TURNS` model turns in a row with such calls end the
  run with ``error``.
- A refused call does not run and gets no ``afterToolExecute`` (no tool returned).
- Everything is reported as events through the run's UI (scrubbed of secrets, streamed
  text re-cut so that no secret is split across deltas); hook decisions and confirm
  answers are also saved.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field, replace
from typing import Any

from ..cancel import CancelToken
from ..errors import ContextOverflow, Interrupted, ProviderError, RiendaError, SessionWriteError
from ..events import (
    Compaction,
    Diagnostic,
    MessageSaved,
    Notify,
    RunEnd,
    RunStart,
    ToolCallStarted,
    ToolResultReady,
)
from ..hooks import HookChain, ModelResponse, chain_hooks, declared_hooks
from ..ctx.host import RunContext
from ..home.agents import Agent
from ..sessions.fill import ContextFill
from ..sessions.messages import Message, ToolCall
from ..sessions.writer import SessionWriter
from ..sessions.pairing import ended_result, for_vendors, unanswered, unique_calls
from ..sessions.seen import saw
from ..common.text import repair
from ..providers import ModelRequest, Provider
from .compactor import CompactionState, compact, due, request_fill, sent_messages, tool_specs
from ..providers.collect import Partial, stream_response
from ..providers.overflow import overflow_line
from ..sandbox.protocol import SandboxLike
from ..secrets import scrub_text
from ..tools.invoke import invoke_tool
from ..tools.model import Catalog, Hook, ToolResult
from .run_ui import RunUI
from ..ui import UI, Approvals

__all__ = ["UNKNOWN_TOOL", "UNKNOWN_TOOL_TURNS", "RunResult", "TurnSetup", "run_prompt"]

UNKNOWN_TOOL = "unknown tool {name!r}; "  # how the result of a call to an undeclared tool starts (replay knows it by it)

UNKNOWN_TOOL_TURNS = 3  # model turns in a row calling undeclared tools before the run ends
STOPPED_CALL = "interrupted before the tool finished"  # the result of a call a stop cut short


@dataclass(frozen=True)
class RunResult:
    """What one run produced: ``messages`` are this run's, the prompt included."""

    session_id: str
    reason: str
    messages: list[Message]
    error: str | None = None
    failure: RiendaError | None = None  # what refused the run before it started (bad setup)
    context: ContextFill | None = None  # how full the model's window is now (sessions/fill.py)

    @property
    def text(self) -> str:
        """The last assistant text of the run."""
        for message in reversed(self.messages):
            if message.role == "assistant" and message.text:
                return message.text
        return ""

    @property
    def tool_calls(self) -> list[tuple[ToolCall, Message | None]]:
        """Each call of the run paired with its result message."""
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
    setup.compaction.held, setup.compaction.said_nothing = None, False
    reason, error = "end_turn", None
    try:
        _answer_unanswered(setup, ui)
        save(Message.user(repair(prompt)))  # from argv or a cell: undecodable bytes are lone surrogates
        ui.emit(RunStart(setup.session_id, setup.agent.id, setup.model_id))
        chain.before_run(setup.session_id, setup.agent.id, setup.model_id, cancel)
        _turns(setup, chain, run, save, cancel)
    except Interrupted:
        reason = "interrupted"
    except (ProviderError, RiendaError) as exc:
        reason, error = "error", str(exc)
    except Exception as exc:  # noqa: BLE001 - a bug must end the run, not lose the session
        reason, error = "error", f"internal error: {type(exc).__name__}: {exc}"
        ui.emit(Diagnostic("engine", traceback.format_exc()))
    reason, error = _end(setup, chain, reason, error, cancel)
    error = None if error is None else scrub_text(error)  # front ends show it as it is
    fill = request_fill(setup, cancel)
    ui.emit(RunEnd(reason, error, context=fill.to_dict()))
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
    the agent's hooks; its :class:`Compaction` (``failed`` for a session file that cannot
    be written or an internal error; a stop raises :class:`Interrupted`)."""
    run, chain = _run_chain(setup)
    try:
        return compact(setup, chain, "manual", cancel, instructions)
    except (SessionWriteError, ProviderError) as exc:
        event = Compaction("failed", "manual", 0, 0, message=f"compaction failed: {exc}")
        run.ui.emit(event)
        return event


def _overflow_compaction(setup: TurnSetup, chain: HookChain, partial: Partial, cancel: CancelToken) -> Compaction | None:
    """The compaction a refusal for length gets: none when compaction is off; the run's automatic
    one that was cancelled, rejected or failed, not tried again; else one now."""
    window = partial.cause.window if isinstance(partial.cause, ContextOverflow) else None
    held, auto = setup.compaction.held, setup.compaction.settings.auto
    return (held or compact(setup, chain, "overflow", cancel, refused_window=window)) if auto else None


def _tried(setup: TurnSetup, refused: bool, made: Compaction | None) -> str:
    """What the overflow line says of compaction: off, or what became of the one tried."""
    if not refused:
        return ""  # an answer the window cut short: nothing to compact before it
    if made is None:
        return "and compaction is off (compaction: false in config.yaml)"
    return {"nothing": "and nothing could be compacted", "cancelled": f"and hook {made.by} cancelled its compaction",
            "rejected": "and its compaction did not make it smaller"}.get(made.outcome, "and its compaction failed")


def _overflow(setup: TurnSetup, refused: ContextOverflow, cancel: CancelToken, tried: str) -> ContextOverflow:
    """The one line a run refused for its length ends with: the server's figures where it
    gave them, else Rienda's (the window as known, the fill as estimated)."""
    fill = request_fill(setup, cancel)
    tokens = refused.tokens or fill.tokens
    window = refused.window or fill.window
    _, http, rest = str(refused).partition("HTTP ")  # the server's words, without its URL
    said = http + rest if http else str(refused)
    line = overflow_line(setup.model_id, setup.session_id, tokens, window, refused.tokens is None, said, tried)
    return ContextOverflow(line, tokens=tokens, window=window)


def _answer_unanswered(setup: TurnSetup, ui: UI) -> None:
    """Save an error result for each call an earlier run left without one (it was killed)."""
    missing = unanswered(setup.history)
    for result in map(ended_result, missing):
        setup.writer.append_message(result)
        setup.history.append(result)
    if missing:
        names = ", ".join(f"{call.name} [{call.id}]" for call in missing)
        ui.emit(Notify("engine", "resumed", f"an earlier run ended before {names} finished; saved an error result"))


def _turns(setup: TurnSetup, chain: HookChain, run: RunContext, save: Any, cancel: CancelToken) -> None:
    """Model turns until one calls no tool. ``max_turns`` turns that all called tools, or a
    model that calls tools the agent does not declare in :data:`UNKNOWN_TOOL_TURNS` turns in
    a row, end the run with an error."""
    in_a_row, turns = 0, 1
    while calls := _model_turn(setup, chain, run, save, cancel):
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


def _end(setup: TurnSetup, chain: HookChain, reason: str, error: str | None,
         cancel: CancelToken) -> tuple[str, str | None]:
    """``afterRun`` (which the next interrupt stops), then the ``run_end`` record; the
    reason and error the run ends with (``error`` if its session file could not be written)."""
    try:
        chain.after_run(reason, cancel.for_wind_down())
    except Interrupted:
        _stopped(setup, chain.run.ui, "afterRun", "its hooks did not finish")
    except SessionWriteError:
        pass  # kept as the writer's failure, reported below
    failure = setup.writer.failure
    if failure is not None and error is None:
        reason, error = "error", str(failure)
    _record(setup.writer, {"type": "run_end", "reason": reason, "error": error})
    return reason, error


def _stopped(setup: TurnSetup, ui: UI, point: str, what: str) -> None:
    """Report and record that an interrupt stopped the wind-down at ``point``."""
    message = f"{point} was stopped by another interrupt: {what}"
    ui.emit(Diagnostic("engine", message))
    _record(setup.writer, {"type": "stopped", "point": point, "message": message})


def _record(writer: Any, record: dict[str, Any]) -> None:
    """Append a record while the run ends; a write failure is already the writer's ``failure``."""
    try:
        writer.append_record(record)
    except SessionWriteError:
        pass


def _tool_list(agent: Any) -> str:
    return ", ".join(agent.tools) or "none"


def _model_turn(setup: TurnSetup, chain: HookChain, run: RunContext, save: Any,
                cancel: CancelToken) -> tuple[ToolCall, ...]:
    """One model call and its tool calls; the calls (none: the run is done)."""
    agent = setup.agent
    if due(setup, cancel) and (made := compact(setup, chain, "auto", cancel)).outcome in ("cancelled", "rejected", "failed"):
        setup.compaction.held = made
    try:
        streamed, usage, vendor = _request(setup, chain, run, cancel)
    except Partial as partial:
        refused = isinstance(partial.cause, ContextOverflow) and not (partial.response.text or partial.response.thinking)
        made = _overflow_compaction(setup, chain, partial, cancel) if refused else None
        if made is None or made.outcome != "compacted":
            raise _ended(setup, chain, partial, save, cancel, _tried(setup, refused, made)) from None  # as raised
        try:  # once: a second refusal for the length is the one line, never another compaction
            streamed, usage, vendor = _request(setup, chain, run, cancel)
        except Partial as again:
            raise _ended(setup, chain, again, save, cancel, "even after compacting it once") from again.cause
    streamed = ModelResponse(streamed.text, streamed.thinking, tuple(unique_calls(streamed.tool_calls, setup.history)))
    try:
        response = chain.after_model_response(streamed, cancel)
    except Interrupted:
        save(Message("assistant", meta={"interrupted": True, "withheld": "stopped during afterModelResponse; "
                                        "the text those hooks had not reviewed was not saved"}))
        raise
    calls = tuple(response.tool_calls)
    meta = {"vendor": vendor} if vendor and response.thinking == streamed.thinking else {}
    message = Message("assistant", response.text, response.thinking, calls, usage=usage,
                      meta=_answer_saw(chain, streamed, response, meta))
    save(message)
    run.ui.emit(MessageSaved(message.to_dict(), context=request_fill(setup, cancel).to_dict()))
    start = len(setup.history)
    try:
        for call in calls:
            (_tool_call if call.name in agent.tools else _unknown_tool_call)(setup, chain, run, save, call, cancel)
    except BaseException as exc:  # whatever ended the run, every call keeps a result
        answered = {m.tool_call_id for m in setup.history[start:] if m.role == "tool"}
        text = (STOPPED_CALL if isinstance(exc, Interrupted)
                else "the session file could not be written while this call ran; its result is unknown"
                if isinstance(exc, SessionWriteError) else "the run ended with an error before this tool call finished")
        try:
            for pending in (call for call in calls if call.id not in answered):
                _save_result(pending, ToolResult(text, True), run.ui, save)
        except SessionWriteError:
            pass  # the writer keeps the failure; the resume answers them
        raise
    return calls


def _request(setup: TurnSetup, chain: HookChain, run: RunContext,
             cancel: CancelToken) -> tuple[ModelResponse, Any, dict[str, Any]]:
    """One model request, made from the session through its compaction view."""
    sent = sent_messages(setup)
    system = chain.before_model_request(setup.agent.system, setup.model_id, sent, cancel)
    request = ModelRequest(setup.model_name, system, for_vendors(sent), tool_specs(setup), run.workdir,
                           setup.agent.options)
    return stream_response(setup.provider, request, run.ui, cancel)


def _ended(setup: TurnSetup, chain: HookChain, partial: Partial, save: Any, cancel: CancelToken,
           tried: str) -> BaseException:
    """What a failed request ends the run with, once what arrived is saved: the provider's
    own error, or the one overflow line (``tried``: what compaction did)."""
    _save_partial(setup, chain, partial, save, cancel)
    if isinstance(partial.cause, ContextOverflow):
        return _overflow(setup, partial.cause, cancel, tried)
    return partial.cause  # the provider's own error, as it was raised


def _save_partial(setup: TurnSetup, chain: HookChain, partial: Partial, save: Any, cancel: CancelToken) -> None:
    """Save a partial answer, reviewed by afterModelResponse first (as every answer is);
    the next interrupt stops the review, and then nothing of the answer is saved."""
    response = partial.response
    if not (response.text or response.thinking):
        return
    flag = "interrupted" if isinstance(partial.cause, Interrupted) else "error"
    try:
        response = chain.after_model_response(response, cancel.for_wind_down())
    except Interrupted:
        _stopped(setup, chain.run.ui, "afterModelResponse", "the partial answer it was reviewing was not saved")
        return
    save(Message("assistant", response.text, response.thinking, meta=_answer_saw(chain, partial.response, response,
                                                                                 {flag: True})))


def _answer_saw(chain: HookChain, given: ModelResponse, made: ModelResponse, meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with what afterModelResponse saw (:mod:`.sessions.seen`), for replay."""
    seen = saw(chain.hooks, "afterModelResponse", {"text": (given.text, made.text),
                                                   "thinking": (given.thinking, made.thinking)})
    return meta if seen is None else {**meta, "saw": seen}


def _tool_call(setup: TurnSetup, chain: HookChain, run: RunContext, save: Any, call: ToolCall,
               cancel: CancelToken) -> None:
    gate = chain.before_tool_execute(call.id, call.name, call.arguments, cancel)
    run.ui.emit(ToolCallStarted(call.id, call.name, gate.arguments, gate.refused_by))
    if not gate.allowed:
        _save_result(call, gate.refusal(), run.ui, save, {"refused_by": gate.refused_by})
        return
    given = invoke_tool(setup.catalog.tools[call.name], gate.arguments, run, setup.sandbox, cancel, call.id)
    if given.interrupted:  # a sub-agent's run was stopped: its session is linked, then the run stops
        _save_result(call, ToolResult(STOPPED_CALL, True), run.ui, save, given.meta)
        raise Interrupted(given.text)
    result = chain.after_tool_execute(call.id, call.name, gate.arguments, given, cancel)
    meta: dict[str, Any] = {"arguments": gate.arguments} if gate.arguments != call.arguments else {}
    meta.update(given.meta or {})  # the agent tool: the sub-agent's session
    seen = saw(chain.hooks, "afterToolExecute", {"text": (given.text, result.text),
                                                 "isError": (given.is_error, result.is_error)})
    _save_result(call, result, run.ui, save, (meta if seen is None else {**meta, "saw": seen}) or None)


def _unknown_tool_call(setup: TurnSetup, chain: HookChain, run: RunContext, save: Any, call: ToolCall,
                      cancel: CancelToken) -> None:
    """A call to a tool the agent does not declare: an error result the model can act on."""
    run.ui.emit(ToolCallStarted(call.id, call.name, call.arguments))
    _save_result(call, ToolResult(UNKNOWN_TOOL.format(name=call.name) + f"this agent's tools: {_tool_list(setup.agent)}",
                                  True), run.ui, save)


def _save_result(call: ToolCall, result: ToolResult, ui: UI, save: Any, meta: dict[str, Any] | None = None) -> None:
    save(Message.tool_result(call, result.text, result.is_error, meta))
    child = (meta or {}).get("subagent") or {}
    ui.emit(ToolResultReady(call.id, call.name, result.text, result.is_error, child.get("session_id")))
