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
  ``meta.interrupted`` or ``meta.error``; calls that never ran get an error result, so the
  conversation stays valid for every vendor on resume).
- The run ends with ``end_turn``, ``interrupted`` (the cancel token was set) or ``error``
  (provider failure, exhausted script, unknown tool, internal error); ``afterRun`` sees
  that reason. Nothing but a :class:`RunResult` comes out: no exception escapes.
- A refused call does not run and gets no ``afterToolExecute`` (no tool returned).
- Everything is reported as events through the run's UI; hook decisions are also saved.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Any

from .cancel import CancelToken
from .errors import Interrupted, ProviderError, RiendaError
from .events import (
    Diagnostic,
    Event,
    HookDecision,
    MessageSaved,
    RunEnd,
    RunStart,
    TextDelta,
    ThinkingDelta,
    ToolCallStarted,
    ToolResultReady,
)
from .extensions import Catalog
from .hooks import HookChain, ModelResponse
from .host import RunContext
from .messages import Message, ToolCall, Usage
from .providers import (
    ModelRequest,
    Provider,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    ToolSpec,
    UsageChunk,
    VendorStateChunk,
)
from .sandbox import SandboxLike
from .tools import ToolResult, invoke_tool
from .ui import ALLOWED_EARLIER, FOR_THIS_SESSION, UI

__all__ = ["RunResult", "TurnSetup", "run_prompt"]


@dataclass(frozen=True)
class RunResult:
    """What one run produced: ``messages`` are this run's, the prompt included."""

    session_id: str
    reason: str
    messages: list[Message]
    error: str | None = None

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
    agent: Any  # agents.Agent
    model_id: str
    provider: Provider
    model_name: str
    catalog: Catalog
    sandbox: SandboxLike
    run: RunContext
    writer: Any  # sessions.SessionWriter: append_message(Message), append_record(dict)
    history: list[Message] = field(default_factory=list)
    approvals: set[tuple[str, str]] = field(default_factory=set)  # (title, body) allowed for the session


class _RunUI(UI):
    """The front end's UI, plus the session's memory: hook decisions are saved, and a
    request allowed "for this session" (same title and body) is not asked again."""

    def __init__(self, inner: UI, record: Any, approvals: set[tuple[str, str]]) -> None:
        super().__init__(record_events=False)
        self._inner = inner
        self._record = record
        self._approvals = approvals

    @property
    def interactive(self) -> bool:  # type: ignore[override]
        return self._inner.interactive

    def emit(self, event: Event) -> None:
        if isinstance(event, HookDecision):
            self._record(event.to_dict())
        self._inner.emit(event)

    def ask(self, title: str, body: str, cancel: CancelToken) -> tuple[bool, str]:
        if (title, body) in self._approvals:
            return True, ALLOWED_EARLIER
        answer, how = self._inner.ask(title, body, cancel)
        if answer and how == FOR_THIS_SESSION:
            self._approvals.add((title, body))
            self._record({"type": "approval", "title": title, "body": body})
        return answer, how


def run_prompt(setup: TurnSetup, prompt: str, cancel: CancelToken) -> RunResult:
    """Run ``prompt`` to the end; append to ``setup.history``; never raises."""
    ui = setup.run.ui
    produced: list[Message] = []

    def save(message: Message) -> None:
        setup.writer.append_message(message)
        setup.history.append(message)
        produced.append(message)

    run = RunContext(setup.run.workdir, _RunUI(ui, setup.writer.append_record, setup.approvals), setup.run.session,
                     setup.run.agent, setup.run.config, setup.run.env)
    chain = HookChain([setup.catalog.hooks[name] for name in setup.agent.hooks], setup.sandbox, run)
    save(Message.user(prompt))
    ui.emit(RunStart(setup.session_id, setup.agent.id, setup.model_id))
    reason, error = "end_turn", None
    try:
        chain.before_run(setup.session_id, setup.agent.id, setup.model_id, cancel)
        while _model_turn(setup, chain, run, save, cancel):
            pass
    except Interrupted:
        reason = "interrupted"
    except (ProviderError, RiendaError) as exc:
        reason, error = "error", str(exc)
    except Exception as exc:  # noqa: BLE001 - a bug must end the run, not lose the session
        reason, error = "error", f"internal error: {type(exc).__name__}: {exc}"
        ui.emit(Diagnostic("engine", traceback.format_exc()))
    _after_run(chain, reason, ui)
    setup.writer.append_record({"type": "run_end", "reason": reason, "error": error})
    ui.emit(RunEnd(reason, error))
    return RunResult(setup.session_id, reason, produced, error)


def _after_run(chain: HookChain, reason: str, ui: UI) -> None:
    try:
        chain.after_run(reason, CancelToken())
    except Interrupted:
        ui.emit(Diagnostic("engine", "afterRun hooks were stopped"))


def _model_turn(setup: TurnSetup, chain: HookChain, run: RunContext, save: Any, cancel: CancelToken) -> bool:
    """One model call and its tool calls; True when another turn is needed."""
    agent = setup.agent
    system = chain.before_model_request(agent.system, setup.model_id, setup.history, cancel)
    tools = [ToolSpec(t.name, t.description, t.parameters) for t in (setup.catalog.tools[n] for n in agent.tools)]
    request = ModelRequest(setup.model_name, system, list(setup.history), tools, run.workdir)
    try:
        streamed, usage, vendor = _stream(setup.provider, request, run.ui, cancel)
    except _Partial as partial:
        _save_partial(chain, partial, save)
        raise partial.cause from None
    try:
        response = chain.after_model_response(streamed, cancel)
    except Interrupted:
        save(Message("assistant", meta={"interrupted": True, "withheld": "stopped during afterModelResponse; "
                                        "the text those hooks had not reviewed was not saved"}))
        raise
    calls = tuple(response.tool_calls)
    meta = {"vendor": vendor} if vendor and response.thinking == streamed.thinking else {}
    message = Message("assistant", response.text, response.thinking, calls, usage=usage, meta=meta)
    save(message)
    run.ui.emit(MessageSaved(message.to_dict()))
    unknown = [call.name for call in calls if call.name not in agent.tools]
    if unknown:
        for call in calls:
            _save_result(call, ToolResult(f"unknown tool {call.name!r}; this agent's tools: "
                                          f"{', '.join(agent.tools) or 'none'}", True), run.ui, save)
        raise ProviderError(f"the model called {', '.join(map(repr, unknown))}, which agent "
                            f"{agent.id} does not declare (its tools: {', '.join(agent.tools) or 'none'})")
    for index, call in enumerate(calls):
        try:
            _tool_call(setup, chain, run, save, call, cancel)
        except Interrupted:
            for pending in calls[index:]:
                _save_result(pending, ToolResult("interrupted before the tool finished", True), run.ui, save)
            raise
    return bool(calls)


class _Partial(Exception):
    """A stream that stopped early: what arrived, and why it stopped."""

    def __init__(self, response: ModelResponse, cause: Exception) -> None:
        super().__init__(str(cause))
        self.response = response
        self.cause = cause


def _stream(provider: Provider, request: ModelRequest, ui: UI,
            cancel: CancelToken) -> tuple[ModelResponse, Usage | None, dict[str, Any]]:
    """Stream one response: the response, its usage and its vendor state; a stop or
    failure raises :class:`_Partial`."""
    text: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    usage: Usage | None = None
    vendor: dict[str, Any] = {}
    try:
        for chunk in provider.stream(request, cancel):
            cancel.raise_if_cancelled()
            if isinstance(chunk, TextChunk):
                text.append(chunk.text)
                ui.emit(TextDelta(chunk.text))
            elif isinstance(chunk, ThinkingChunk):
                thinking.append(chunk.text)
                ui.emit(ThinkingDelta(chunk.text))
            elif isinstance(chunk, ToolCallChunk):
                calls.append(chunk.call)
            elif isinstance(chunk, UsageChunk):
                usage = chunk.usage
            elif isinstance(chunk, VendorStateChunk):
                vendor.update(chunk.state)
        cancel.raise_if_cancelled()
    except (Interrupted, RiendaError) as exc:
        raise _Partial(ModelResponse("".join(text), "".join(thinking)), exc) from exc
    return ModelResponse("".join(text), "".join(thinking), tuple(calls)), usage, vendor


def _save_partial(chain: HookChain, partial: _Partial, save: Any) -> None:
    """Save a partial answer, reviewed by afterModelResponse first (as every answer is)."""
    response = partial.response
    if not (response.text or response.thinking):
        return
    flag = "interrupted" if isinstance(partial.cause, Interrupted) else "error"
    try:
        response = chain.after_model_response(response, CancelToken())
    except Interrupted:
        return
    save(Message("assistant", response.text, response.thinking, meta={flag: True}))


def _tool_call(setup: TurnSetup, chain: HookChain, run: RunContext, save: Any, call: ToolCall,
               cancel: CancelToken) -> None:
    gate = chain.before_tool_execute(call.id, call.name, call.arguments, cancel)
    run.ui.emit(ToolCallStarted(call.id, call.name, gate.arguments, gate.refused_by))
    if not gate.allowed:
        _save_result(call, gate.refusal(), run.ui, save, {"refused_by": gate.refused_by})
        return
    result = invoke_tool(setup.catalog.tools[call.name], gate.arguments, run, setup.sandbox, cancel)
    result = chain.after_tool_execute(call.id, call.name, gate.arguments, result, cancel)
    _save_result(call, result, run.ui, save, {"arguments": gate.arguments} if gate.arguments != call.arguments else None)


def _save_result(call: ToolCall, result: ToolResult, ui: UI, save: Any, meta: dict[str, Any] | None = None) -> None:
    save(Message.tool_result(call, result.text, result.is_error, meta))
    ui.emit(ToolResultReady(call.id, call.name, result.text, result.is_error))
