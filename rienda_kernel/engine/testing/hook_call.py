"""Calling one hook point directly, as a run would, and reporting what it did.

:func:`prepare_hook_call` finds hook NAME under the home the way a run does, checks that
it exports POINT, fits the payload to what that point receives (:data:`PAYLOADS`, the
shapes of the hooks documentation), and fills ``ctx`` from an agent and a session id as a
run would (and ``ctx.session.gate`` as recorded, for a call ``rienda gate`` saved in that
session). :meth:`HookInvocation.run` calls that one export through a
:class:`~.hooks.HookChain` holding that hook alone, so the rules for returned fields and
the field-level ``changes`` are the chain's own, and returns a :class:`HookCall`.

Contracts:
- A payload that is not what the point receives raises :class:`PayloadError` naming the
  field; a field left out gets what a run would pass (the agent's system prompt and
  model, the session id, call id ``call_1``, no arguments...). ``afterToolExecute`` takes
  ``{call, result}``: the call and the result its handler receives.
- An unknown point, an unknown hook (or one skipped for a diagnostic, which the message
  quotes) or a hook that does not export the point raises :class:`ConfigError`.
- A throwing handler is not an error here: the :class:`HookCall` says ``threw`` and
  carries the JS error with its location (a hook the agent declares ``fail_closed`` says
  ``refused`` at ``beforeToolExecute``, as a run would, and is not ``ok``). Only
  :class:`Interrupted` escapes ``run``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..common import imports
from ..common.hints import did_you_mean
from ..home.agents import Agent
from ..cancel import CancelToken, run_interruptibly
from ..errors import ConfigError, Interrupted, PayloadError
from ..events import Confirm, Diagnostic, Event, HookDecision, Log, Notify, Output
from ..gate.record import named_session, recorded_gate
from ..runtime.seams import RunHost
from ..tools.model import HOOK_POINTS, Catalog, Hook
from ..hooks import HookChain, HookOutcome, ModelResponse, declared_hooks
from ..ctx.host import RunContext
from ..common import bounded
from ..common.json_value import JSON, JSONObject
from ..sessions.messages import Message, ToolCall
from ..sandbox.protocol import ChainRunner, JSValue
from ..secrets import scrub
from ..sessions.store import new_session_id
from ..tools.model import ToolResult
from ..ui import FrontEnd, RelayUI, ScrubbingUI

if TYPE_CHECKING:
    import jsonschema

__all__ = ["PAYLOADS", "HookCall", "HookInvocation", "prepare_hook_call"]

_TEXT = {"type": "string"}


def _object(properties: JSONObject, required: tuple[str, ...] = ()) -> JSONObject:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


_CALL = _object({"id": _TEXT, "name": _TEXT, "arguments": {"type": "object"}}, ("name",))
_COUNT = {"type": "integer", "minimum": 0}
_MESSAGE = _object({"role": {"enum": ["user", "assistant", "tool"]}, "text": _TEXT}, ("role", "text"))

PAYLOADS: dict[str, JSONObject] = {
    "beforeRun": _object({"sessionId": _TEXT, "agentId": _TEXT, "modelId": _TEXT, "prompt": _TEXT, "context": _TEXT}),
    "afterRun": _object({"reason": {"enum": ["end_turn", "interrupted", "error"]}, "text": _TEXT,
                         "continued": {"type": "boolean"}, "prompt": _TEXT}),
    "beforeModelRequest": _object({"system": _TEXT, "model": _TEXT, "messages": {"type": "array", "items": _MESSAGE}}),
    "afterModelResponse": _object({"text": _TEXT, "thinking": _TEXT, "toolCalls": {"type": "array", "items": _CALL}}),
    "beforeToolExecute": _CALL,
    "afterToolExecute": _object({"call": _CALL, "result": _object({"text": _TEXT, "isError": {"type": "boolean"}},
                                                                   ("text",))}, ("call", "result")),
    "beforeCompact": _object({"reason": {"enum": ["auto", "manual", "overflow"]}, "tokens": _COUNT,
                              "window": {"type": ["integer", "null"], "minimum": 1},
                              "messages": {"type": "array", "items": _MESSAGE}, "instructions": _TEXT}),
    "afterCompact": _object({"summary": _TEXT, "tokensBefore": _COUNT, "tokensAfter": _COUNT}),
}
"""The JSON Schema of what each point receives (``afterToolExecute``: ``{call, result}``)."""


def _defaults(point: str, agent: Agent, session_id: str) -> JSONObject:
    """What a run passes for each field the payload leaves out."""
    call: JSONObject = {"id": "call_1", "arguments": {}}
    defaults: dict[str, JSONObject] = {
        "beforeRun": {"sessionId": session_id, "agentId": agent.id, "modelId": agent.model, "prompt": "",
                      "context": ""},
        "afterRun": {"reason": "end_turn", "text": "", "continued": False, "prompt": ""},
        "beforeModelRequest": {"system": agent.system, "model": agent.model, "messages": []},
        "afterModelResponse": {"text": "", "thinking": "", "toolCalls": []},
        "beforeToolExecute": call,
        "afterToolExecute": {"call": call, "result": {"isError": False}},
        "beforeCompact": {"reason": "manual", "tokens": 0, "window": None, "messages": [], "instructions": ""},
        "afterCompact": {"summary": "", "tokensBefore": 0, "tokensAfter": 0},
    }
    return defaults[point]


@dataclass(frozen=True)
class HookCall:
    """What one call of one hook point did.

    ``returned`` is what the handler returned (None when it threw); ``decision`` is the
    ledger's record of it (effect, field-level changes, reason, error, duration);
    ``outcome`` is what the point passes on now;
    ``events`` are its ``ctx.log`` lines, notices, confirms, diagnostics and command output,
    in order.
    """

    hook: str
    point: str
    payload: JSONObject
    returned: JSValue | None
    decision: HookDecision
    outcome: JSONObject | None
    events: tuple[Event, ...]

    @property
    def ok(self) -> bool:
        """False when the handler threw (fail-closed too) or returned something the point ignores."""
        return self.decision.effect not in ("threw", "invalid") and not self.decision.failed_closed

    def to_dict(self) -> JSONObject:
        """The whole call as JSON, with secrets from the environment scrubbed."""
        decision = self.decision
        data = {
            "hook": self.hook, "point": self.point, "payload": self.payload, "ok": self.ok,
            "returned": None if self.returned is None else {"kind": self.returned.kind, "value": self.returned.value},
            "effect": decision.effect, "changes": decision.changes, "reason": decision.reason,
            "error": decision.error, "duration_ms": decision.duration_ms, "outcome": self.outcome,
            "failed_closed": decision.failed_closed,
            "logs": [e.text for e in self.events if isinstance(e, Log)],
            "notices": [{"title": e.title, "body": e.body} for e in self.events if isinstance(e, Notify)],
            "confirms": [{"title": e.title, "body": e.body, "answer": e.answer, "how": e.how}
                         for e in self.events if isinstance(e, Confirm)],
            "diagnostics": [e.message for e in self.events if isinstance(e, Diagnostic)],
            "output": "".join(e.text for e in self.events if isinstance(e, Output)),
        }
        scrubbed: JSONObject = scrub(data)
        return scrubbed

    def lines(self, activity: bool = True) -> list[str]:
        """The call for a person: what it returned and did, then (with ``activity``) its
        logs, notices, confirms and diagnostics. Secrets are scrubbed."""
        data = self.to_dict()
        out = [f"{self.hook}.{self.point} {_returned(data)} in {data['duration_ms']:.1f} ms", f"  {_effect(data)}"]
        if data["outcome"] is not None and data["effect"] != "refused":
            out.append(f"  now: {_json(data['outcome'])}")
        if activity:
            out += [f"  log: {text}" for text in data["logs"]]
            out += [f"  notice: {n['title']}: {n['body']}" for n in data["notices"]]
            out += [f"  confirm {c['title']!r} ({c['body']}): {'allowed' if c['answer'] else 'denied'} ({c['how']})"
                    for c in data["confirms"]]
            out += [f"  diagnostic: {message}" for message in data["diagnostics"]]
            if data["output"]:
                out.append("  output: " + data["output"].rstrip("\n").replace("\n", "\n          "))
        return out


class HookInvocation:
    """One hook point ready to call: the hook as loaded, the fitted payload, and
    ``run_for``, which makes the ``ctx`` a run would give it (for the UI it reports to)."""

    def __init__(self, hook: Hook, point: str, payload: JSONObject, sandbox: ChainRunner,
                 run_for: Callable[[ScrubbingUI], RunContext]) -> None:
        self.hook = hook
        self.point = point
        self.payload = payload
        self._sandbox = sandbox
        self._run_for = run_for

    def run(self, ui: FrontEnd, cancel: CancelToken | None = None) -> HookCall:
        """Call the export once; ``ui`` sees every event and answers ``ctx.confirm``.
        Raises only :class:`Interrupted` (``cancel`` was set)."""
        events: list[Event] = []
        reported: list[HookOutcome] = []
        run = self._run_for(ScrubbingUI(RelayUI(ui, events.append)))
        chain = HookChain([self.hook], self._sandbox, run, reported.append)
        outcome = _CALLERS[self.point](chain, self.payload, cancel or CancelToken())
        decision = next(e for e in events if isinstance(e, HookDecision))  # as the front end saw it: scrubbed
        return HookCall(self.hook.name, self.point, self.payload, reported[0].returned, decision, outcome,
                        tuple(e for e in events if not isinstance(e, HookDecision)))

    def run_interruptibly(self, ui: FrontEnd) -> HookCall | None:
        """:meth:`run` on a worker thread while the calling (main) thread waits, so Ctrl-C
        stops the hook wherever it is; None when it was stopped."""
        def work(cancel: CancelToken) -> HookCall | None:
            try:
                return self.run(ui, cancel)
            except Interrupted:
                return None

        call, _ = run_interruptibly(work)
        return call


def prepare_hook_call(rienda: RunHost, name: str, point: str, payload: str | JSONObject, *,
                      agent_id: str = "default", session_id: str | None = None) -> HookInvocation:
    """Load hook ``name`` from ``rienda``'s home and fit ``payload`` (JSON text or a dict)
    to ``point``; ``ctx`` gets ``rienda``'s workdir, agent ``agent_id`` and ``session_id``
    (default: a new id). Raises ConfigError or PayloadError (see the module's contract)."""
    if point not in HOOK_POINTS:
        raise ConfigError(f"{point!r} is not a hook point{did_you_mean(point, HOOK_POINTS)}; "
                          f"the points are {', '.join(HOOK_POINTS)}")
    config = rienda.config()
    hook = _usable_hook(rienda.catalog(config=config), name, point)
    agent, _ = rienda.agent(agent_id, config)
    hook = declared_hooks({name: hook}, [name], agent.fail_closed)[0]  # fail-closed as this agent runs it
    session_id = named_session(rienda.store, session_id) if session_id else new_session_id()
    fitted = fit_payload(point, payload, _defaults(point, agent, session_id))
    call = fitted.get("call", fitted)  # a gate's recorded call: ctx.session.gate as the gate gave it
    gate = recorded_gate(rienda.store, session_id, call.get("id")) if point.endswith("ToolExecute") else None
    workdir, session = rienda.workdir, {"id": session_id, **({"gate": gate} if gate else {})}
    agent_ctx, shown_config = agent.to_ctx(), config.for_extensions()

    def run_for(ui: ScrubbingUI) -> RunContext:
        return RunContext(workdir=workdir, ui=ui, session=session, agent=agent_ctx, config=shown_config)

    return HookInvocation(hook, point, fitted, rienda.sandbox, run_for)


def fit_payload(point: str, payload: str | JSONObject, defaults: JSONObject) -> JSONObject:
    """``payload`` checked against :data:`PAYLOADS` and completed with ``defaults``
    (one level into ``call``/``result``/``toolCalls``); PayloadError names the field."""
    value: JSON = payload
    if isinstance(payload, str):
        try:
            value = bounded.loads(payload, unique_keys=True) if payload.strip() else {}
        except bounded.Unreadable as exc:
            raise PayloadError(f"the payload for {point} is {exc}") from exc
    elif bounded.too_deep(payload):
        raise PayloadError(f"the payload for {point} is {bounded.TOO_DEEP}")
    schema = PAYLOADS[point]
    jsonschema = imports.jsonschema()  # here, not at import: the kernel and the magics import this module
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(value))
    if errors:
        unknown = [error for error in errors if error.validator == "additionalProperties"]
        error = unknown[0] if unknown else jsonschema.exceptions.best_match(errors)
        raise PayloadError(f"payload for {point}: {_problem(error)}; {point} receives {_shape(schema)}")
    fitted = _completed(schema, value, defaults)
    if "toolCalls" in value:
        fitted["toolCalls"] = [_completed(_CALL, call, {"id": f"call_{i}", "arguments": {}})
                               for i, call in enumerate(value["toolCalls"], 1)]
    return fitted


def _completed(schema: JSONObject, value: JSONObject, defaults: JSONObject) -> JSONObject:
    """``value`` with the fields it leaves out taken from ``defaults``, one level into
    nested objects (``call``, ``result``), in the schema's order."""
    out: JSONObject = {}
    for key, sub in schema["properties"].items():
        if key in value and isinstance(defaults.get(key), dict) and "properties" in sub:
            out[key] = _completed(sub, value[key], defaults[key])
        elif key in value or key in defaults:
            out[key] = value.get(key, defaults.get(key))
    return out


def _problem(error: jsonschema.ValidationError) -> str:
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
    # The (sub)schema and the object an error of additionalProperties or required is about.
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    given = error.instance if isinstance(error.instance, Mapping) else {}
    if error.validator == "additionalProperties":
        known = list(schema["properties"])
        unknown = sorted(set(given) - set(known))[0]
        field = f"{where}.{unknown}" if where else unknown
        return f"unknown field {field!r}{did_you_mean(unknown, known)}"
    if error.validator == "required":
        missing = next(key for key in schema["required"] if key not in given)
        return f"field {f'{where}.{missing}' if where else missing!r} is missing"
    if not where:
        return f"the payload must be a JSON object, got {_json(error.instance)}"
    return f"field {where!r}: {error.message}"


def _shape(schema: JSONObject) -> str:
    """A schema as the documentation writes shapes: ``{call: {id, name, arguments}, ...}``."""
    parts = [f"{key}: {_shape(sub)}" if sub.get("type") == "object" and "properties" in sub else key
             for key, sub in schema["properties"].items()]
    return "{" + ", ".join(parts) + "}"


def _usable_hook(catalog: Catalog, name: str, point: str) -> Hook:
    hook = catalog.hooks.get(name)
    if hook is None:
        skipped = catalog.diagnostics_of("hooks", name)
        detail = f"it was skipped: {'; '.join(skipped)}" if skipped else f"no {catalog.home / 'hooks' / name / 'index.js'}"
        raise ConfigError(f"no usable hook named {name!r} ({detail}); hooks: {', '.join(sorted(catalog.hooks)) or 'none'}")
    if point not in hook.points:
        raise ConfigError(f"hook {name} ({hook.path}) does not export {point}; it handles {', '.join(hook.points)}")
    return hook


# -- calling each point through the chain ---------------------------------------------------
def _before_run(chain: HookChain, p: JSONObject, cancel: CancelToken) -> JSONObject:
    gate = chain.before_run(p["sessionId"], p["agentId"], p["modelId"], cancel, p["prompt"])
    if gate.refused_by is not None:
        return {"allow": False, **({"reason": gate.reason} if gate.reason else {})}
    return {"allow": True, "context": gate.context}


def _after_run(chain: HookChain, p: JSONObject, cancel: CancelToken) -> JSONObject:
    return {"prompt": chain.after_run(p["reason"], cancel, p["text"], p["continued"]).prompt}


def _before_model_request(chain: HookChain, p: JSONObject, cancel: CancelToken) -> JSONObject:
    messages = [Message(m["role"], m["text"]) for m in p["messages"]]
    return {"system": chain.before_model_request(p["system"], p["model"], messages, cancel)}


def _after_model_response(chain: HookChain, p: JSONObject, cancel: CancelToken) -> JSONObject:
    calls = tuple(ToolCall.from_dict(call) for call in p["toolCalls"])
    response = chain.after_model_response(ModelResponse(p["text"], p["thinking"], calls), cancel)
    return {"text": response.text, "thinking": response.thinking}


def _before_tool_execute(chain: HookChain, p: JSONObject, cancel: CancelToken) -> JSONObject:
    gate = chain.before_tool_execute(p["id"], p["name"], p["arguments"], cancel)
    return {"allow": True, "arguments": gate.arguments} if gate.allowed else {"allow": False, "reason": gate.refusal().text}


def _after_tool_execute(chain: HookChain, p: JSONObject, cancel: CancelToken) -> JSONObject:
    call, result = p["call"], p["result"]
    now = chain.after_tool_execute(call["id"], call["name"], call["arguments"],
                                   ToolResult(result["text"], result["isError"]), cancel)
    return now.to_js()


def _before_compact(chain: HookChain, p: JSONObject, cancel: CancelToken) -> JSONObject:
    messages = [Message(m["role"], m["text"]) for m in p["messages"]]
    gate = chain.before_compact(p["reason"], p["tokens"], p["window"], messages, p["instructions"] or None, cancel)
    if gate.cancelled_by is not None:
        return {"cancel": True, **({"reason": gate.reason} if gate.reason else {})}
    return {"cancel": False, "summary": gate.summary, "instructions": gate.instructions}


def _after_compact(chain: HookChain, p: JSONObject, cancel: CancelToken) -> JSONObject:
    return {"summary": chain.after_compact(p["summary"], p["tokensBefore"], p["tokensAfter"], cancel)}


_CALLERS: dict[str, Callable[[HookChain, JSONObject, CancelToken], JSONObject | None]] = {
    "beforeRun": _before_run, "afterRun": _after_run, "beforeModelRequest": _before_model_request,
    "afterModelResponse": _after_model_response, "beforeToolExecute": _before_tool_execute,
    "afterToolExecute": _after_tool_execute, "beforeCompact": _before_compact, "afterCompact": _after_compact,
}


# -- rendering --------------------------------------------------------------------------------
def _json(value: JSON) -> str:
    return json.dumps(value, ensure_ascii=False)


def _returned(data: JSONObject) -> str:
    returned = data["returned"]
    if returned is None:
        return f"threw {data['error']}"
    if returned["kind"] in ("undefined", "null"):
        return "returned nothing" if returned["kind"] == "undefined" else "returned null"
    return f"returned {_json(returned['value'])}"


def _effect(data: JSONObject) -> str:
    effect = data["effect"]
    if effect == "refused" and data["failed_closed"]:
        return "threw, and the agent declares it fail_closed: a run refuses the call"
    if effect == "refused" and data["point"] == "beforeCompact":
        reason = (data["outcome"] or {}).get("reason")
        return "cancelled the compaction" + (f": {reason}" if reason else "")
    if effect == "refused" and data["point"] == "beforeRun":
        reason = (data["outcome"] or {}).get("reason")
        return "refused the run" + (f": {reason}" if reason else "")
    if effect == "refused":
        return f"refused the call: {data['outcome']['reason']}"
    if effect == "threw":
        return "threw: a run reports it and goes on as if the hook returned nothing"
    if effect == "invalid":
        return f"ignored: {data['error']}"
    if effect == "rewrote":
        text = "rewrote " + "; ".join(_change(key, change) for key, change in data["changes"].items())
        return text + (f" (ignored: {data['error']})" if data["error"] else "")
    return "changed nothing"


def _change(key: str, change: JSONObject) -> str:
    if "before_chars" in change:
        return f"{key} ({change['before_chars']} → {change['after_chars']} characters)"
    return f"{key}: {_json(change['before'])} → {_json(change['after'])}"
