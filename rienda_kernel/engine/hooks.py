"""The hook chain: running an agent's hooks at each point, in order, with their rules.

Contracts (Rienda's hooks documentation):
- Hooks run in the order the agent lists them; a hook without the point is passed over.
- Within a point one hook's output is the next one's input; the last writer wins.
- Every returned field is optional and replaces only itself; a field left out,
  ``undefined`` or ``null`` keeps its value. A field of the wrong type is ignored with a
  diagnostic.
- ``beforeToolExecute``: the first ``allow: false`` refuses the call with ``reason`` and
  no further hook is consulted.
- A hook that throws is reported (a :class:`Diagnostic`) and skipped, as if it returned
  nothing; it never fails the run. Only :class:`Interrupted` escapes.
- Every hook call is recorded as a :class:`HookDecision` event (the decision ledger).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .cancel import CancelToken
from .errors import Interrupted, SandboxError
from .events import Diagnostic, HookDecision
from .home.extensions import Hook
from .ctx.host import Host, RunContext
from .sessions.messages import Message, ToolCall
from .sandbox.protocol import SandboxLike
from .tools.invoke import ToolResult

__all__ = ["HookChain", "ModelResponse", "ToolGate"]


@dataclass(frozen=True)
class ToolGate:
    """The outcome of ``beforeToolExecute``: run with ``arguments``, or refuse."""

    allowed: bool
    arguments: Any
    reason: str | None = None
    refused_by: str | None = None

    def refusal(self) -> ToolResult:
        """The error result the model receives for a refused call."""
        return ToolResult(self.reason or f"refused by hook {self.refused_by}", True)


@dataclass(frozen=True)
class ModelResponse:
    """What ``afterModelResponse`` may rewrite (``tool_calls`` is read-only)."""

    text: str
    thinking: str
    tool_calls: Sequence[ToolCall] = ()


class HookChain:
    """The hooks one agent declares, bound to a run's context and the sandbox."""

    def __init__(self, hooks: Sequence[Hook], sandbox: SandboxLike, run: RunContext) -> None:
        self.hooks = list(hooks)
        self.sandbox = sandbox
        self.run = run

    # -- the six points ----------------------------------------------------------------
    def before_run(self, session_id: str, agent_id: str, model_id: str, cancel: CancelToken) -> None:
        payload = {"sessionId": session_id, "agentId": agent_id, "modelId": model_id}
        for hook in self._handling("beforeRun"):
            self._apply(hook, "beforeRun", self._call(hook, "beforeRun", [payload], cancel), {}, {})

    def after_run(self, reason: str, cancel: CancelToken) -> None:
        for hook in self._handling("afterRun"):
            self._apply(hook, "afterRun", self._call(hook, "afterRun", [{"reason": reason}], cancel), {}, {})

    def before_model_request(
        self, system: str, model: str, messages: Sequence[Message], cancel: CancelToken
    ) -> str:
        """The system prompt for this turn only."""
        snapshot = [{"role": m.role, "text": m.text} for m in messages]
        for hook in self._handling("beforeModelRequest"):
            request = {"system": system, "model": model, "messages": snapshot}
            reply = self._call(hook, "beforeModelRequest", [request], cancel, frozen=[(0, "messages")])
            system = self._apply(hook, "beforeModelRequest", reply, {"system": system}, {"system": str})["system"]
        return system

    def after_model_response(self, response: ModelResponse, cancel: CancelToken) -> ModelResponse:
        for hook in self._handling("afterModelResponse"):
            payload = {"text": response.text, "thinking": response.thinking, "toolCalls": [c.to_dict() for c in response.tool_calls]}
            reply = self._call(hook, "afterModelResponse", [payload], cancel, frozen=[(0, "toolCalls")])
            fields = self._apply(hook, "afterModelResponse", reply,
                                 {"text": response.text, "thinking": response.thinking},
                                 {"text": str, "thinking": str})
            response = ModelResponse(fields["text"], fields["thinking"], response.tool_calls)
        return response

    def before_tool_execute(self, call_id: str, name: str, arguments: Any, cancel: CancelToken) -> ToolGate:
        for hook in self._handling("beforeToolExecute"):
            call = {"id": call_id, "name": name, "arguments": arguments}
            reply = self._call(hook, "beforeToolExecute", [call], cancel, call_id=call_id)
            if reply.value and reply.value.get("allow") is False:
                reason = reply.value.get("reason")
                reason = reason if isinstance(reason, str) and reason else None
                self._decided(hook, "beforeToolExecute", reply, "refused", call_id=call_id, reason=reason)
                return ToolGate(False, arguments, reason, hook.name)
            fields = self._apply(hook, "beforeToolExecute", reply, {"arguments": arguments},
                                 {"arguments": dict, "allow": bool, "reason": str}, call_id=call_id)
            arguments = fields["arguments"]
        return ToolGate(True, arguments)

    def after_tool_execute(
        self, call_id: str, name: str, arguments: Any, result: ToolResult, cancel: CancelToken
    ) -> ToolResult:
        for hook in self._handling("afterToolExecute"):
            call = {"id": call_id, "name": name, "arguments": arguments}
            reply = self._call(hook, "afterToolExecute", [call, result.to_js()], cancel, call_id=call_id)
            fields = self._apply(hook, "afterToolExecute", reply,
                                 {"text": result.text, "isError": result.is_error},
                                 {"text": str, "isError": bool}, call_id=call_id)
            result = ToolResult(fields["text"], fields["isError"])
        return result

    # -- machinery -----------------------------------------------------------------------
    def _handling(self, point: str) -> list[Hook]:
        return [hook for hook in self.hooks if point in hook.points]

    def _call(
        self, hook: Hook, point: str, payload: list[Any], cancel: CancelToken,
        frozen: Sequence[tuple[int, str]] = (), call_id: str | None = None,
    ) -> _Reply:
        """Run one handler; its returned object, or None for no opinion (or a throw)."""
        source = f"hook:{hook.name}.{point}"
        started = time.perf_counter()
        try:
            returned = self.sandbox.call(hook.path, hook.source, point, payload,
                                         Host(self.run, source, cancel), cancel, frozen)
        except Interrupted:
            raise
        except SandboxError as exc:
            reply = _Reply(None, _ms_since(started))
            self._emit(Diagnostic(source, f"hook {hook.name} threw in {point} and was skipped: {exc}", path=hook.path))
            self._decided(hook, point, reply, "threw", call_id=call_id, error=str(exc))
            return reply
        reply = _Reply(returned.value if returned.kind == "object" else None, _ms_since(started))
        if returned.kind in ("undefined", "null"):
            self._decided(hook, point, reply, "none", call_id=call_id)
        elif returned.kind != "object":
            self._emit(Diagnostic(source, f"hook {hook.name} returned {returned.kind} from {point}; "
                                  "expected an object or nothing; ignored", path=hook.path))
            self._decided(hook, point, reply, "invalid", call_id=call_id, error=f"returned {returned.kind}")
        return reply

    def _apply(
        self, hook: Hook, point: str, reply: _Reply, current: dict[str, Any],
        types: dict[str, type], call_id: str | None = None,
    ) -> dict[str, Any]:
        """``current`` with the fields the reply replaces; records the decision."""
        returned = reply.value
        if returned is None:
            return current
        updated = dict(current)
        problems = []
        for key, value in returned.items():
            if value is None or key not in types:
                continue
            if not isinstance(value, types[key]) or (types[key] is not bool and isinstance(value, bool)):
                problems.append(f"{key} must be {_type_name(types[key])}, got {_js_type(value)}")
            elif key in updated:
                updated[key] = value
        unknown = sorted(set(returned) - set(types))
        if unknown:
            problems.append(f"unknown field(s) {', '.join(unknown)}")
        if problems:
            self._emit(Diagnostic(f"hook:{hook.name}.{point}",
                                  f"hook {hook.name} {point}: {'; '.join(problems)}; ignored", path=hook.path))
        changes = _changes(current, updated)
        self._decided(hook, point, reply, "rewrote" if changes else ("invalid" if problems else "none"),
                      call_id=call_id, changes=changes, error="; ".join(problems) or None)
        return updated

    def _decided(self, hook: Hook, point: str, reply: _Reply, effect: str, **details: Any) -> None:
        self._emit(HookDecision(hook=hook.name, point=point, effect=effect, duration_ms=reply.duration_ms, **details))

    def _emit(self, event: Any) -> None:
        self.run.ui.emit(event)


def _changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Field-level differences, safe to save.

    Arguments are compared key by key (``arguments.url``) with both values: the model's
    arguments are in the session anyway. Text fields (``system``, ``text``, ``thinking``)
    record only their sizes: the text a hook replaced is often what it meant to keep out
    of the session (a redacted secret, a per-turn system prompt).
    """
    changes: dict[str, Any] = {}
    for key, old in before.items():
        new = after[key]
        if old == new and type(old) is type(new):
            continue
        if key == "arguments" and isinstance(old, dict) and isinstance(new, dict):
            for name in sorted(set(old) | set(new)):
                if old.get(name, _MISSING) != new.get(name, _MISSING):
                    changes[f"arguments.{name}"] = {"before": old.get(name), "after": new.get(name)}
        elif isinstance(old, str) and isinstance(new, str):
            changes[key] = {"before_chars": len(old), "after_chars": len(new)}
        else:
            changes[key] = {"before": old, "after": new}
    return changes


_MISSING = object()


@dataclass(frozen=True)
class _Reply:
    """A handler's returned object (None: no opinion) and how long it took."""

    value: dict[str, Any] | None
    duration_ms: float


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _type_name(kind: type) -> str:
    return {str: "a string", bool: "a boolean", dict: "an object"}[kind]


def _js_type(value: Any) -> str:
    return {str: "a string", bool: "a boolean", dict: "an object", list: "an array",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)
