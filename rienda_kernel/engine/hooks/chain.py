"""The hook chain: running an agent's hooks at each point, in order, with their rules
(what each point comes to is :mod:`.outcomes`).

Contracts (Rienda's hooks documentation):
- Hooks run in the order the agent lists them; a hook without the point is passed over.
- Within a point one hook's output is the next one's input; the last writer wins.
- Every returned field is optional and replaces only itself; a field left out,
  ``undefined`` or ``null`` keeps its value. A field of the wrong type is ignored with a
  diagnostic.
- ``beforeToolExecute``: the first ``allow: false`` refuses the call with ``reason`` and
  no further hook is consulted.
- A hook that throws is reported (a :class:`Diagnostic`) and skipped, as if it returned
  nothing; it never fails the run. So is each hook the sandbox could not run at all (no
  V8 worker would start, e.g. when a signal to the process group ended them all). Only
  :class:`Interrupted` escapes: :class:`HookStopped`, naming the hook, when one was running
  (its decision, ``stopped``, recorded first).
- A hook still running :data:`.common.watch.NOTICE_AFTER_S` seconds after it started is
  said once (a :class:`Waiting` event, from a watch that never outlives the point's chain),
  except while it waits on ``ctx.confirm`` (a person is asked).
- ``beforeCompact``: the first ``cancel: true`` cancels the compaction and no further hook
  is consulted; ``summary`` and ``instructions`` chain like any rewrite.
- ``beforeRun`` (decided, issue 38: H07's return was ignored) also gets the run's
  ``prompt``; the first ``allow: false`` refuses the run with ``reason`` (no model is
  called) and no further hook is consulted; ``context`` chains like any rewrite and is
  added for the model to read. ``afterRun`` also gets the run's last assistant ``text``
  and whether the run already went on once (``continued``); a returned ``prompt`` chains,
  and the run goes on with it, once. A hook written to the seed's contract returns
  nothing at either point, and changes nothing.
- Except a fail-closed hook (:attr:`Hook.fail_closed`) at ``beforeToolExecute``: its
  failure (a throw, running out of memory, a value that cannot be read, a sandbox that
  could not run it) refuses the call with a reason naming the hook and the error, and no
  further hook is consulted (the sandbox stops the chain there: the rule it runs names the
  fail-closed links). At the other points it is skipped like any other.
- Every hook call is recorded as a :class:`HookDecision` event (the decision ledger), as
  soon as its outcome is known, and then reported to the chain's ``on_outcome``, if any,
  as a :class:`HookOutcome`: the hook, what its handler returned or failed with, and that
  decision. A caller that needs more than the ledger (the gate: did a hook say ``allow:
  true``; ``rienda hook``: the value returned) reads it there.

The rules of what a returned field replaces live in :mod:`.sandbox.chain`, which the
sandbox follows too: the sandbox's ``call_chain`` runs one point's hooks (the product's as
one job: one round trip to a worker process, each hook still in a fresh runtime of its own).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..cancel import CancelToken
from ..common.json_value import JSON, JSONObject
from ..common.watch import Watch
from ..errors import HookStopped, Interrupted, SandboxError
from ..events import Diagnostic, Event, HookDecision, HookEffect, Waiting
from ..home.agents import AGENT_SOURCE
from ..ctx.host import Host, RunContext
from ..sessions.messages import Message
from ..sandbox.chain import ChainRule, JSValue, Outcome, field_changes, merge, refuses
from ..sandbox.protocol import ChainRunner
from ..tools.model import Hook, ToolResult
from .outcomes import CompactGate, ModelResponse, RunEnding, RunGate, ToolGate

__all__ = ["HookChain", "HookOutcome", "chain_hooks", "declared_hooks", "inert_fail_closed"]


def declared_hooks(hooks: Mapping[str, Hook], names: Sequence[str], fail_closed: Collection[str] = ()) -> list[Hook]:
    """The hooks ``names`` of a catalog's ``hooks``, in order, those in ``fail_closed`` marked so."""
    return [replace(hooks[name], fail_closed=True) if name in fail_closed else hooks[name] for name in names]


def inert_fail_closed(where: str, names: Sequence[str], hooks: Mapping[str, Hook]) -> list[Diagnostic]:
    """A diagnostic for each of ``names`` (the ``fail_closed`` of the agent file ``where``)
    whose hook has no ``beforeToolExecute``: failing closed changes nothing for it."""
    return [Diagnostic(AGENT_SOURCE, f"{where}: fail_closed lists {name!r}, which has no beforeToolExecute; "
                       "only there does a failing hook refuse the call, so this changes nothing", path=where)
            for name in names if name in hooks and "beforeToolExecute" not in hooks[name].points]


def chain_hooks(inherited: Sequence[Hook], own: Sequence[Hook]) -> list[Hook]:
    """A run's chain: the hooks its lead passes down, in order, then its own not among them.
    A hook both declare is fail-closed when either says so (a sub-agent may make its lead's
    hook stricter, never laxer)."""
    names = {hook.name for hook in inherited}
    closed = {hook.name for hook in own if hook.fail_closed}
    return [*(replace(hook, fail_closed=True) if hook.name in closed else hook for hook in inherited),
            *(hook for hook in own if hook.name not in names)]


class HookChain:
    """The hooks one agent declares, bound to a run's context and what runs them.

    ``sandbox`` is only what the chain calls (:class:`.sandbox.protocol.ChainRunner`: every
    sandbox is one); ``on_outcome``, when given, hears each hook's :class:`HookOutcome`
    right after its decision is recorded, before the next hook's outcome is judged, on the
    thread that runs the chain; it must not raise.
    """

    def __init__(self, hooks: Sequence[Hook], sandbox: ChainRunner, run: RunContext,
                 on_outcome: Callable[[HookOutcome], None] | None = None) -> None:
        self.hooks = list(hooks)
        self.sandbox = sandbox
        self.run = run
        self.on_outcome = on_outcome

    # -- the eight points --------------------------------------------------------------
    def before_run(self, session_id: str, agent_id: str, model_id: str, cancel: CancelToken,
                   prompt: str = "") -> RunGate:
        """``{sessionId, agentId, modelId, prompt}`` (and ``context``, "" until a hook adds
        some) → the run refused, or the context added."""
        payload = {"sessionId": session_id, "agentId": agent_id, "modelId": model_id, "prompt": prompt,
                   "context": ""}
        end = self._point("beforeRun", [payload], _RUN, cancel)
        if end.refused_by is not None:
            return RunGate(end.refused_by, end.reason)
        return RunGate(context=str(end.fields["context"]))

    def after_run(self, reason: str, cancel: CancelToken, text: str = "", continued: bool = False) -> RunEnding:
        """``{reason, text, continued}`` (and ``prompt``, "" until a hook gives one) → the
        prompt the run goes on with."""
        payload = {"reason": reason, "text": text, "continued": continued, "prompt": ""}
        end = self._point("afterRun", [payload], _RUN_END, cancel)
        prompt = end.fields["prompt"]
        return RunEnding(prompt, end.writers.get("prompt")) if isinstance(prompt, str) and prompt else RunEnding()

    def before_model_request(
        self, system: str, model: str, messages: Sequence[Message], cancel: CancelToken
    ) -> str:
        """The system prompt for this turn only."""
        snapshot = [{"role": m.role, "text": m.text} for m in messages]
        request = {"system": system, "model": model, "messages": snapshot}
        return str(self._point("beforeModelRequest", [request], _SYSTEM, cancel, frozen=[(0, "messages")])
                   .fields["system"])

    def after_model_response(self, response: ModelResponse, cancel: CancelToken) -> ModelResponse:
        payload = {"text": response.text, "thinking": response.thinking,
                   "toolCalls": [c.to_dict() for c in response.tool_calls]}
        fields = self._point("afterModelResponse", [payload], _RESPONSE, cancel, frozen=[(0, "toolCalls")]).fields
        return ModelResponse(fields["text"], fields["thinking"], response.tool_calls)

    def before_tool_execute(self, call_id: str, name: str, arguments: JSON, cancel: CancelToken) -> ToolGate:
        call = {"id": call_id, "name": name, "arguments": arguments}
        end = self._point("beforeToolExecute", [call], _GATE, cancel, call_id=call_id)
        if end.refused_by is not None:
            return ToolGate(False, end.fields["arguments"], end.reason, end.refused_by, end.failed)
        return ToolGate(True, end.fields["arguments"])

    def after_tool_execute(
        self, call_id: str, name: str, arguments: JSON, result: ToolResult, cancel: CancelToken
    ) -> ToolResult:
        call = {"id": call_id, "name": name, "arguments": arguments}
        fields = self._point("afterToolExecute", [call, result.to_js()], _RESULT, cancel, call_id=call_id).fields
        return ToolResult(fields["text"], fields["isError"])

    def before_compact(self, reason: str, tokens: int, window: int | None, messages: Sequence[Message],
                       instructions: str | None, cancel: CancelToken) -> CompactGate:
        """``{reason, tokens, window, messages, instructions}`` (``messages`` the read-only
        snapshot of the request as it is; ``summary`` too, "" until a hook supplies one, so a
        later hook sees it) → cancel, a summary, instructions."""
        snapshot = [{"role": m.role, "text": m.text} for m in messages]
        payload = {"reason": reason, "tokens": tokens, "window": window, "messages": snapshot,
                   "instructions": instructions or "", "summary": ""}
        end = self._point("beforeCompact", [payload], _COMPACT, cancel, frozen=[(0, "messages")])
        if end.refused_by is not None:
            return CompactGate(cancelled_by=end.refused_by, reason=end.reason)
        by = end.supplied.get("summary")  # a summary supplied is the summary, even an empty one (H24)
        return CompactGate(None, str(end.fields["summary"]) if by else None, end.fields["instructions"] or None,
                           by, end.writers.get("instructions"))

    def after_compact(self, summary: str, tokens_before: int, tokens_after: int, cancel: CancelToken) -> str:
        """``{summary, tokensBefore, tokensAfter}`` → the summary the session keeps."""
        payload = {"summary": summary, "tokensBefore": tokens_before, "tokensAfter": tokens_after}
        return str(self._point("afterCompact", [payload], _SUMMARY, cancel).fields["summary"])

    # -- machinery -----------------------------------------------------------------------
    def _handling(self, point: str) -> list[Hook]:
        return [hook for hook in self.hooks if point in hook.points]

    def _point(
        self, point: str, payload: list[JSON], rule: ChainRule, cancel: CancelToken,
        frozen: Sequence[tuple[int, str]] = (), call_id: str | None = None,
    ) -> _End:
        """Run the point's hooks in order; each outcome is judged, recorded and reported as
        it comes.

        The sandbox's ``call_chain`` runs it (the product's as one job, each hook still in a
        runtime of its own; the in-process one a ``call`` at a time); every sandbox follows
        :func:`.sandbox.chain.run_chain`, so the input each hook sees is the same.
        """
        hooks = self._handling(point)
        end = _End(rule.current(payload))
        if not hooks:
            return end
        if rule.closable:
            rule = replace(rule, fail_closed=frozenset(i for i, hook in enumerate(hooks) if hook.fail_closed))
        types = rule.python_types()
        clock = [time.perf_counter()]
        heard = [0]  # how many hooks' outcomes came

        def judged(index: int, outcome: Outcome) -> HookDecision:
            """Hook ``index``'s outcome judged, its decision recorded."""
            hook = hooks[index]
            if isinstance(outcome, SandboxError) and rule.closes_on_failure(index):
                return self._failed_closed(hook, point, outcome, _ms_since(clock[0]), call_id, end)
            reply = self._judge(hook, point, outcome, clock[0], call_id)
            clock[0] = time.perf_counter()
            if isinstance(reply, HookDecision):
                return reply
            if rule.refusable and refuses(reply.value, rule.stop):
                reason = reply.value.get("reason")
                end.reason = reason if isinstance(reason, str) and reason else None
                end.refused_by = hook.name
                return self._decided(hook, point, reply.duration_ms, "refused", call_id=call_id, reason=end.reason)
            updated, decision = self._apply(hook, point, reply, end.fields, types, call_id)
            end.writers.update({key: hook.name for key in updated if updated[key] != end.fields[key]})
            end.supplied.update({key: hook.name for key in updated if reply.value.get(key) is not None})
            end.fields = updated
            return decision

        def on_step(index: int, outcome: Outcome) -> None:
            watch.disarm()  # before its decision: a notice never follows the hook's end
            heard[0] = index + 1
            decision = judged(index, outcome)
            if self.on_outcome is not None:
                self.on_outcome(HookOutcome(hooks[index], outcome, decision))
            if index + 1 < len(hooks) and end.refused_by is None:
                watch.arm(notice(index + 1))

        def notice(index: int) -> Callable[[], None]:
            """Hook ``index`` is still running (the watch's notice)."""
            return lambda: self._emit(Waiting("hook", hooks[index].name, watch.after, point, call_id))

        def host(index: int) -> Host:
            return _WatchedHost(self.run, f"hook:{hooks[index].name}.{point}", cancel, watch, notice(index))

        links = [(hook.path, hook.source) for hook in hooks]
        with Watch(name="rienda-hook-watch") as watch:
            watch.arm(notice(0))
            try:
                self.sandbox.call_chain(links, point, payload, rule, host, cancel, frozen, on_step)
            except SandboxError as exc:  # the sandbox could not run the rest (no worker would start): each is skipped
                for index in range(heard[0], len(hooks)):
                    if end.refused_by is None:
                        on_step(index, exc)
            except Interrupted as exc:  # the hook that was running is named, in the ledger and in what is raised
                watch.disarm()
                if heard[0] >= len(hooks) or end.refused_by is not None:
                    raise
                hook, ms = hooks[heard[0]], _ms_since(clock[0])
                self._decided(hook, point, ms, "stopped", call_id=call_id, error="the run was stopped while it ran")
                raise HookStopped(hook.name, point, ms / 1000, call_id) from exc
        return end

    def _failed_closed(self, hook: Hook, point: str, error: SandboxError, duration_ms: float, call_id: str | None,
                       end: _End) -> HookDecision:
        """A fail-closed hook failed: the call is refused, saying which hook and why."""
        end.refused_by, end.failed = hook.name, str(error)
        end.reason = f"hook {hook.name} failed and fails closed, so the call is refused: {error}"
        self._emit(Diagnostic(f"hook:{hook.name}.{point}", f"hook {hook.name} failed in {point}; it fails closed, "
                              f"so the call was refused: {error}", path=hook.path))
        return self._decided(hook, point, duration_ms, "refused", call_id=call_id, reason=end.reason,
                             error=end.failed, failed_closed=True)

    def _judge(self, hook: Hook, point: str, outcome: Outcome, started: float,
               call_id: str | None) -> _Reply | HookDecision:
        """A handler's outcome: the object it returned, still to apply (a :class:`_Reply`),
        or the decision recorded for anything else (a failure, reported; nothing; a value
        that is not an object, reported)."""
        source = f"hook:{hook.name}.{point}"
        duration_ms = _ms_since(started)
        if isinstance(outcome, SandboxError):
            self._emit(Diagnostic(source, f"hook {hook.name} threw in {point} and was skipped: {outcome}",
                                  path=hook.path))
            return self._decided(hook, point, duration_ms, "threw", call_id=call_id, error=str(outcome))
        if outcome.kind == "object":
            return _Reply(outcome.value, duration_ms)
        if outcome.kind in ("undefined", "null"):
            return self._decided(hook, point, duration_ms, "none", call_id=call_id)
        self._emit(Diagnostic(source, f"hook {hook.name} returned {outcome.kind} from {point}; "
                              "expected an object or nothing; ignored", path=hook.path))
        return self._decided(hook, point, duration_ms, "invalid", call_id=call_id, error=f"returned {outcome.kind}")

    def _apply(
        self, hook: Hook, point: str, reply: _Reply, current: JSONObject,
        types: dict[str, type], call_id: str | None,
    ) -> tuple[JSONObject, HookDecision]:
        """``current`` with the fields the reply replaces, and the decision recorded."""
        updated, problems = merge(current, reply.value, types)
        if problems:
            self._emit(Diagnostic(f"hook:{hook.name}.{point}",
                                  f"hook {hook.name} {point}: {'; '.join(problems)}; ignored", path=hook.path))
        changes = field_changes(current, updated)
        decision = self._decided(hook, point, reply.duration_ms,
                                 "rewrote" if changes else ("invalid" if problems else "none"),
                                 call_id=call_id, changes=changes, error="; ".join(problems) or None)
        return updated, decision

    def _decided(self, hook: Hook, point: str, duration_ms: float, effect: HookEffect, *, call_id: str | None,
                 changes: JSONObject | None = None, reason: str | None = None, error: str | None = None,
                 failed_closed: bool = False) -> HookDecision:
        """The decision on one hook's outcome, recorded (the ledger) and returned."""
        decision = HookDecision(hook=hook.name, point=point, effect=effect, changes=changes or {}, reason=reason,
                                error=error, duration_ms=duration_ms, call_id=call_id, failed_closed=failed_closed)
        self._emit(decision)
        return decision

    def _emit(self, event: Event) -> None:
        self.run.ui.emit(event)


class _WatchedHost(Host):
    """A hook's ``ctx``, whose ``ctx.confirm`` pauses the chain's watch: a hook waiting
    for a person's answer is not a silence to report (the person is asked)."""

    def __init__(self, run: RunContext, source: str, cancel: CancelToken, watch: Watch,
                 notice: Callable[[], None]) -> None:
        super().__init__(run, source, cancel)
        self._watch, self._notice = watch, notice

    def _confirm(self, args: JSON) -> bool:
        self._watch.disarm()
        try:
            return super()._confirm(args)
        finally:
            self._watch.arm(self._notice)


@dataclass(frozen=True)
class HookOutcome:
    """What one hook came to at one point, as the chain reports it (``on_outcome``): the
    ``hook``, its ``outcome`` (the :class:`JSValue` its handler returned, or the
    :class:`SandboxError` it failed with) and the ``decision`` the ledger recorded of it
    (effect, changes, reason, error, ``duration_ms``)."""

    hook: Hook
    outcome: Outcome
    decision: HookDecision

    @property
    def returned(self) -> JSValue | None:
        """What the handler returned; None when it failed."""
        return None if isinstance(self.outcome, SandboxError) else self.outcome


# What each point carries from one hook to the next (field -> payload argument), and the
# types of the fields its hooks may return.
_RUN = ChainRule({"context": 0}, {"context": "string", "allow": "boolean", "reason": "string"}, refusable=True)
_RUN_END = ChainRule({"prompt": 0}, {"prompt": "string"})
_SYSTEM = ChainRule({"system": 0}, {"system": "string"})
_RESPONSE = ChainRule({"text": 0, "thinking": 0}, {"text": "string", "thinking": "string"})
_GATE = ChainRule({"arguments": 0}, {"arguments": "object", "allow": "boolean", "reason": "string"}, refusable=True,
                  closable=True)
_COMPACT = ChainRule({"summary": 0, "instructions": 0}, {"summary": "string", "instructions": "string",
                                                         "cancel": "boolean", "reason": "string"},
                     refusable=True, stop=("cancel", True))
_SUMMARY = ChainRule({"summary": 0}, {"summary": "string"})
_RESULT = ChainRule({"text": 1, "isError": 1}, {"text": "string", "isError": "boolean"})


@dataclass
class _End:
    """Where a point's chain ended: the carried fields, and who refused (if anyone)."""

    fields: JSONObject
    refused_by: str | None = None
    reason: str | None = None
    failed: str | None = None  # a fail-closed hook's error, when that refused
    writers: dict[str, str] = field(default_factory=dict)  # field -> the last hook that changed it
    supplied: dict[str, str] = field(default_factory=dict)  # field -> the last hook that returned it (same or not)


@dataclass(frozen=True)
class _Reply:
    """The object a handler returned, and how long it took."""

    value: JSONObject
    duration_ms: float


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
