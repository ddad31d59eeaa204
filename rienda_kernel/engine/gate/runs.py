"""The events that are not a tool call: a prompt submitted, a stop, a compaction, and
Gemini CLI's model request and response, each read into a Rienda point's payload, decided
by its hooks and answered in the agent's format.

Contracts:
- :func:`read_point` reads an event of :data:`.protocols.POINTS` that is not a tool's
  (``beforeRun``: its ``prompt``; ``afterRun``: the last answer's text, and whether the
  agent already went on once; ``beforeCompact``: the trigger and instructions;
  ``afterCompact``: the summary; ``beforeModelRequest``/``afterModelResponse``: Gemini
  CLI's ``llm_request``/``llm_response``). An event without the part its point reads is a
  PayloadError, which the caller denies, as for a tool event without ``tool_input``.
- :func:`decide_point` runs the point's chain (``ctx.session.gate`` says who asked; a
  run's ``ctx`` otherwise) and returns a :class:`PointDecision`. At a point that can
  block (``beforeRun``, ``beforeCompact``, ``beforeModelRequest``) a hook that fails
  blocks; at the others it is said (``failed``) and the agent goes on as it would.
- :func:`answer_point` is the agent's answer: only what the agent was seen to act on
  (docs/gate.md's table); anything else is ``{}``. A stop is never kept going when the
  agent says it already went on once (``continued``): an agent that is kept going by a
  hook that always says so never ends (Codex was seen to).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from ..cancel import CancelToken
from ..common.json_value import JSON, JSONObject
from ..ctx.host import RunContext
from ..errors import PayloadError
from ..events import Confirm, HookDecision
from ..home.config import Config
from ..hooks import HookChain, ModelResponse
from ..runtime.seams import RunHost
from ..sessions.messages import Message
from ..tools.model import Hook
from ..ui import ScrubbingUI
from .decision import DecisionProgress, GateSettings, GateUI, gate_hooks, gate_ledger, gate_workdir, hook_failure
from .protocols import CAN_ASK, HookPoint

__all__ = ["BLOCKING_POINTS", "PointDecision", "PointEvent", "answer_point", "decide_point", "read_point"]

BLOCKING_POINTS = frozenset({"beforeRun", "beforeCompact", "beforeModelRequest"})
PointOutcome = Literal["pass", "block", "context", "go-on", "rewrite"]


@dataclass(frozen=True)
class PointEvent:
    """One event of a point that is not a tool call, as read (see the module's contract)."""

    agent: str
    event: str
    point: HookPoint
    session_id: str
    cwd: str | None
    prompt: str = ""
    text: str = ""
    continued: bool = False
    trigger: str = ""
    instructions: str = ""
    model: str = ""
    messages: tuple[tuple[str, str], ...] = ()
    request: JSONObject = field(default_factory=dict)

    def ctx(self) -> JSONObject:
        """``ctx.session.gate`` for this event (saved too, for replay)."""
        return {"agent": self.agent, "sessionId": self.session_id, "cwd": self.cwd, "event": self.event}


@dataclass
class PointDecision:
    """What the hooks made of ``event``: the ``outcome`` (``pass``; ``block`` with
    ``reason``; ``context`` added; ``go-on`` with the ``prompt``; ``rewrite`` with the
    model request's ``system`` or the response's ``text``), whether a failure made it
    (``failed``: the reason), and the ledger and confirms."""

    event: PointEvent
    agent_id: str
    outcome: PointOutcome = "pass"
    reason: str | None = None
    value: str = ""
    failed: str | None = None
    records: list[HookDecision | Confirm] = field(default_factory=list)
    hooks: Sequence[Hook] = ()


def _text(value: JSONObject, key: str, event: str, required: bool = True) -> str:
    found = value.get(key)
    if isinstance(found, str):
        return found
    if required:
        raise PayloadError(f"the {event} event has no {key}; a gate cannot decide on what it cannot see")
    return ""


def read_point(agent: str, value: JSONObject, event: str, point: HookPoint) -> PointEvent:
    """The event ``value`` (``event`` of ``agent``, answered by ``point``)."""
    session_id, cwd = value.get("session_id"), value.get("cwd")
    base = PointEvent(agent, event, point, session_id if isinstance(session_id, str) else "",
                      cwd if isinstance(cwd, str) else None)
    if point == "beforeRun":
        return replace(base, prompt=_text(value, "prompt", event))
    if point == "afterRun":
        text = _text(value, "last_assistant_message", event, False) or _text(value, "prompt_response", event, False)
        return replace(base, text=text, continued=value.get("stop_hook_active") is True)
    if point == "beforeCompact":
        return replace(base, trigger=_text(value, "trigger", event, False),
                       instructions=_text(value, "custom_instructions", event, False))
    if point == "afterCompact":
        return replace(base, text=_text(value, "compact_summary", event, False))
    key = "llm_request" if point == "beforeModelRequest" else "llm_response"
    part = value.get(key)
    if not isinstance(part, dict):
        raise PayloadError(f"the {event} event has no {key}; a gate cannot decide on what it cannot see")
    if point == "afterModelResponse":
        return replace(base, text=_text(part, "text", event, False))
    messages = part.get("messages")
    if not isinstance(messages, list):
        raise PayloadError(f"the {event} event's llm_request has no messages")
    pairs = tuple((("assistant" if m.get("role") == "model" else str(m.get("role", "user"))),
                   m["content"] if isinstance(m.get("content"), str) else "")
                  for m in messages if isinstance(m, dict))
    return replace(base, model=str(part.get("model", "")), messages=pairs, request=part)


def decide_point(rienda: RunHost, event: PointEvent, settings: GateSettings, session_id: str, cancel: CancelToken,
                 env: Mapping[str, str] | None, config: Config, progress: DecisionProgress) -> PointDecision:
    """The decision on ``event`` (see the module's contract)."""
    agent, _ = rienda.agent(settings.agent, config)
    progress.loading = list(agent.hooks)
    hooks = gate_hooks(rienda, list(agent.hooks), config, cancel)
    ui = GateUI(settings.confirm, event.agent in CAN_ASK)
    progress.ui, progress.point = ui, event.point
    progress.handling = [hook.name for hook in hooks if event.point in hook.points]
    run = RunContext(workdir=gate_workdir(event.cwd, rienda.workdir), ui=ScrubbingUI(ui),
                     session={"id": session_id, "gate": event.ctx()}, agent=agent.to_ctx(),
                     config=config.for_extensions(), env=dict(os.environ) if env is None else dict(env))

    def heard(_: object) -> None:
        progress.returned += 1

    chain = HookChain(hooks, rienda.sandbox, run, heard)
    decision = PointDecision(event, agent.id, hooks=hooks)
    _run_point(chain, event, agent.id, agent.model, decision, cancel)
    decision.records = gate_ledger(ui.events)
    failure = hook_failure(decision.records, event.point)
    if failure is not None:
        decision.failed = failure
        decision.outcome, decision.reason = ("block", failure) if event.point in BLOCKING_POINTS else ("pass", None)
    return decision


def _run_point(chain: HookChain, event: PointEvent, agent_id: str, model: str, decision: PointDecision,
               cancel: CancelToken) -> None:
    point = event.point
    if point == "beforeRun":
        gate = chain.before_run(event.session_id, agent_id, model, cancel, event.prompt)
        if gate.refused_by is not None:
            decision.outcome, decision.reason = "block", gate.reason or f"refused by hook {gate.refused_by}"
        elif gate.context:
            decision.outcome, decision.value = "context", gate.context
    elif point == "afterRun":
        ending = chain.after_run("end_turn", cancel, event.text, event.continued)
        if ending.prompt is not None and not event.continued:
            decision.outcome, decision.value = "go-on", ending.prompt
    elif point == "beforeCompact":
        reason = event.trigger if event.trigger in ("auto", "manual") else "auto"
        compaction = chain.before_compact(reason, 0, None, [], event.instructions or None, cancel)
        if compaction.cancelled_by is not None:
            decision.outcome = "block"
            decision.reason = compaction.reason or f"cancelled by hook {compaction.cancelled_by}"
    elif point == "afterCompact":
        chain.after_compact(event.text, 0, 0, cancel)
    elif point == "beforeModelRequest":
        sent = [Message("assistant" if role == "assistant" else "user", text) for role, text in event.messages]
        system = chain.before_model_request("", event.model, sent, cancel)
        if system:
            decision.outcome, decision.value = "rewrite", system
    elif point == "afterModelResponse":
        now = chain.after_model_response(ModelResponse(event.text, ""), cancel)
        if now.text != event.text and event.text:  # a response without text is a tool call's: never replaced
            decision.outcome, decision.value = "rewrite", now.text


def answer_point(decision: PointDecision) -> JSONObject:
    """The answer the agent reads (see docs/gate.md's table)."""
    event, outcome = decision.event, decision.outcome
    agent, name, point = event.agent, event.event, event.point
    gemini = agent == "gemini-cli"
    if outcome == "block" and point == "beforeCompact" and agent != "claude-code":
        return {}  # only Claude Code was seen to let a hook stop a compaction
    if outcome == "block":
        return {"decision": "deny" if gemini else "block", "reason": decision.reason or "denied by the Rienda gate"}
    if outcome == "context" and agent != "copilot-cli":  # Copilot CLI reads no context from a prompt's hook
        return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": decision.value}}
    if outcome == "go-on":
        return {"decision": "deny" if gemini else "block", "reason": decision.value}
    if outcome == "rewrite" and point == "beforeModelRequest":
        messages = [dict(m) for m in event.request.get("messages", []) if isinstance(m, dict)]
        first = next((m for m in messages if m.get("role") == "user"), None)
        if first is not None:
            first["content"] = f"{decision.value}\n\n{first.get('content', '')}"
        return {"hookSpecificOutput": {"hookEventName": name, "llm_request": {"messages": messages}}}
    if outcome == "rewrite" and point == "afterModelResponse":
        response: JSON = {"text": decision.value, "candidates": [{"content": {"role": "model", "parts": [decision.value]},
                                                                  "finishReason": "STOP", "index": 0}]}
        return {"hookSpecificOutput": {"hookEventName": name, "llm_response": response}}
    return {}
