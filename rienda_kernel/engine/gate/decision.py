"""One gate decision: a Rienda agent's hook chain on one other agent's tool call.

Contracts:
- :func:`decide_call` runs the ``beforeToolExecute`` chain (after the call: ``afterToolExecute``)
  of the agent :attr:`GateSettings.agent` through the engine's own :class:`~..hooks.HookChain`
  and returns a :class:`Decision`. ``ctx`` is a run's, with ``ctx.session.gate`` saying
  who asked (:meth:`.protocols.GateEvent.ctx`) and ``ctx.workdir`` the agent's ``cwd``
  (the gate's own folder when that is not a folder here).
- Failing closed, unlike a run (contract H19): a hook that throws (out of memory
  included), that the sandbox cannot run, or that returns what the point ignores makes
  the decision a deny naming it. A missing or broken agent file, a declared hook that did
  not load, a config.yaml that cannot be read raise :class:`~..errors.ConfigError`, which
  the caller turns into a deny as well.
- ``ctx.confirm``: :class:`GateUI` answers from :attr:`GateSettings.confirm`. With
  ``ask`` (the default) an agent that can put the question to a person
  (:data:`.protocols.CAN_ASK`) gets the answer ``ask`` (the hook is told yes, so its
  rewrite goes with the question); any other agent gets no, so the call is denied when the
  hook refuses without a yes.
- :func:`decide_within` bounds a decision in time: the hooks are cancelled when the
  deadline comes near (:func:`stop_reserve` before it, the time to stop them, record the
  deny and print it) and :class:`GateTimeout` is raised, naming the hook that did not
  return (the caller denies).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar
from pathlib import Path

from ..common.json_value import JSON, JSONObject
from ..cancel import CancelToken, on_thread, wait_for
from ..ctx.host import RunContext
from ..errors import ConfigError, RiendaError
from ..events import Confirm, Event, HookDecision
from ..home.config import DEFAULT_GATE_TIMEOUT as DEFAULT_TIMEOUT, Config
from ..hooks import HookChain, HookOutcome
from ..runtime.seams import RunHost
from ..tools.model import Hook, ToolResult
from ..ui import UI, Answer, ConfirmPolicy, ScrubbingUI, confirm_policy
from .protocols import CAN_ASK, GateEvent, Verdict, agent_arguments

__all__ = ["DEFAULT_TIMEOUT", "MAX_TIMEOUT", "Decision", "DecisionProgress", "GateSettings", "GateTimeout", "GateUI",
           "decide_call", "decide_within", "gate_hooks", "gate_ledger", "gate_settings", "gate_workdir", "hook_failure",
           "stop_reserve"]

MAX_TIMEOUT = 3600.0  # a gate's timeout past an hour is a typo (1e10, inf): every agent's own hook timeout is far below
_GRACE = 2.0  # after a timeout, the most the cancelled hooks get to stop before the deny goes out anyway


_D = TypeVar("_D")


class GateTimeout(RiendaError):
    """The decision did not come within the gate's bound."""


@dataclass(frozen=True)
class GateSettings:
    """Which Rienda agent decides, within how many seconds, and how ``ctx.confirm`` is
    answered (``ask``: by the other agent's person where it can ask, else no)."""

    agent: str = "gate"
    timeout: float = DEFAULT_TIMEOUT
    confirm: ConfirmPolicy = "ask"


def gate_settings(config: Config, agent: str | None, timeout: float | None,
                  confirm: str | None) -> GateSettings:
    """The settings: the command's options, else config.yaml's ``gate:`` mapping
    (``agent``, ``timeout``, ``confirm``: :attr:`.Config.gate`), else the defaults.
    ConfigError for a bad value."""
    section = config.gate
    if section.unknown:
        raise ConfigError(f"config.yaml: gate has unknown settings {', '.join(section.unknown)} "
                          "(agent, timeout, confirm)")
    chosen_timeout = timeout if timeout is not None else section.timeout
    if isinstance(chosen_timeout, bool) or not isinstance(chosen_timeout, (int, float)) \
            or not math.isfinite(chosen_timeout) or not 0 < chosen_timeout <= MAX_TIMEOUT:
        where = "--timeout" if timeout is not None else "config.yaml: gate.timeout"
        shown = f"{chosen_timeout:g}" if isinstance(chosen_timeout, float) else repr(chosen_timeout)
        raise ConfigError(f"{where} must be a positive number of seconds up to {MAX_TIMEOUT:g}, got {shown}")
    policy = confirm_policy(confirm or section.confirm, "the gate's confirm policy")
    return GateSettings(agent or section.agent or "gate", float(chosen_timeout), policy)


@dataclass
class Decision:
    """What the gate decided on ``event`` and why: the :class:`.protocols.Verdict`, the
    arguments the hooks left (normalized), who refused, the ledger and confirms
    (``records``), and after the call the tool's result as given and as the hooks made it."""

    event: GateEvent
    agent_id: str
    verdict: Verdict
    arguments: JSONObject
    refused_by: str | None = None
    records: list[HookDecision | Confirm] = field(default_factory=list)
    hooks: Sequence[Hook] = ()
    given: ToolResult | None = None
    result: ToolResult | None = None


class GateUI(UI):
    """Keeps every event (the ledger among them); answers ``ctx.confirm`` from ``policy``,
    and with ``ask`` leaves the question to the agent where it can ask (``asked``)."""

    def __init__(self, policy: ConfirmPolicy, can_ask: bool) -> None:
        super().__init__(policy=policy)
        self.can_ask = can_ask
        self.asked: list[tuple[str, str]] = []

    def ask(self, title: str, body: str, cancel: CancelToken) -> Answer:
        if not self.can_ask:
            return Answer(False, "default-deny")
        self.asked.append((title, body))
        return Answer(True, "left to the agent")


def decide_call(rienda: RunHost, event: GateEvent, settings: GateSettings, session_id: str,
                cancel: CancelToken, env: Mapping[str, str] | None = None, *, config: Config | None = None,
                progress: DecisionProgress | None = None) -> Decision:
    """The decision on ``event`` (see the module's contracts); ``session_id`` is the
    Rienda session it is recorded in (``ctx.session.id``), ``env`` what ``ctx.env``
    shows (None: this process's environment), ``config`` the config.yaml ``settings``
    came from (None: read now); ``progress``, when given, follows it."""
    config = rienda.config() if config is None else config
    progress = DecisionProgress() if progress is None else progress
    agent, _ = rienda.agent(settings.agent, config)
    progress.loading = list(agent.hooks)
    hooks = gate_hooks(rienda, list(agent.hooks), config, cancel)
    ui = GateUI(settings.confirm, event.agent in CAN_ASK)
    progress.ui = ui
    point = "beforeToolExecute" if event.phase == "before" else "afterToolExecute"
    progress.handling = [hook.name for hook in hooks if point in hook.points]
    progress.point = point
    run = RunContext(workdir=gate_workdir(event.cwd, rienda.workdir), ui=ScrubbingUI(ui),
                     session={"id": session_id, "gate": event.ctx()}, agent=agent.to_ctx(),
                     config=config.for_extensions(), env=dict(os.environ) if env is None else dict(env))
    outcomes: list[HookOutcome] = []

    def heard(outcome: HookOutcome) -> None:
        outcomes.append(outcome)
        progress.returned += 1

    chain = HookChain(hooks, rienda.sandbox, run, heard)
    if event.phase == "after":
        return _after(chain, event, agent.id, ui, cancel)
    gate = chain.before_tool_execute(event.call_id, event.name, event.arguments, cancel)
    records = gate_ledger(ui.events)
    decision = Decision(event, agent.id, Verdict("pass"), gate.arguments, gate.refused_by, records, hooks)
    failure = hook_failure(records, "beforeToolExecute")
    if not gate.allowed:
        decision.verdict = Verdict("deny", gate.reason or f"refused by hook {gate.refused_by}")
    elif failure:
        decision.verdict, decision.refused_by = Verdict("deny", failure, failed=True), "gate"
    else:
        rewritten = gate.arguments != event.arguments
        shaped = agent_arguments(event, gate.arguments) if rewritten else None
        if ui.asked:
            question = "; ".join(f"{title}: {body}" if body else title for title, body in ui.asked)
            decision.verdict = Verdict("ask", question, shaped)
        elif rewritten or any(_allows(outcome) for outcome in outcomes):
            decision.verdict = Verdict("allow", None, shaped)
    return decision


def _after(chain: HookChain, event: GateEvent, agent_id: str, ui: GateUI, cancel: CancelToken) -> Decision:
    given = ToolResult(_result_text(event.response), _result_failed(event.response))
    result = chain.after_tool_execute(event.call_id, event.name, event.arguments, given, cancel)
    records = gate_ledger(ui.events)
    decision = Decision(event, agent_id, Verdict("post"), event.arguments, None, records, chain.hooks, given, result)
    failure = hook_failure(records, "afterToolExecute")
    if failure:
        decision.verdict = Verdict("deny", failure, failed=True)
    elif result != given and event.is_mcp:
        decision.verdict = Verdict("post", output=[{"type": "text", "text": result.text}])
    elif result != given:
        error = " (the hooks mark it as an error)" if result.is_error and not given.is_error else ""
        decision.verdict = Verdict("post", context=f"The tool's result as the Rienda gate's hooks rewrote it{error}:\n"
                                                   f"{result.text}")
    return decision


def stop_reserve(timeout: float) -> float:
    """How long before a decision's deadline its hooks are stopped: the time to stop them,
    record the deny and print it (a fifth of the timeout, at most a second)."""
    return min(1.0, timeout / 5)


def decide_within(work: Callable[[CancelToken], _D], timeout: float, deadline: float | None = None,
                  progress: DecisionProgress | None = None) -> _D:
    """``work(cancel)`` on a thread of its own, bounded: its Decision, what it raised, or
    :class:`GateTimeout` once the hooks must stop to answer by ``deadline``
    (``time.monotonic``; None: ``timeout`` seconds from now), the hooks cancelled then.
    ``progress`` says which hook did not return (for the message)."""
    deadline = time.monotonic() + timeout if deadline is None else deadline
    reserve = stop_reserve(timeout)
    cancel = CancelToken()
    decision = on_thread(lambda: work(cancel), name="rienda-gate")
    if not wait_for(decision, timeout=max(0.0, deadline - reserve - time.monotonic())):
        cancel.cancel()
        wait_for(decision, timeout=max(0.0, min(_GRACE, deadline - reserve / 2 - time.monotonic())))
        what = (progress.stuck() if progress is not None else "") or "the decision did not come"
        raise GateTimeout(f"no decision within {timeout:g} s (the gate's timeout): {what}; the hooks were stopped")
    return decision.result()


class DecisionProgress:
    """How far a decision got, for the message when it runs out of time: the hooks being
    loaded, then the point whose hooks run and how many of them returned; the ledger so far
    (:meth:`records`). Written by the deciding thread, read by the waiting one."""

    def __init__(self) -> None:
        self.loading: list[str] = []
        self.point = ""
        self.handling: list[str] = []
        self.returned = 0
        self.ui: GateUI | None = None

    def stuck(self) -> str:
        """What had not returned: ``hook NAME did not return from POINT``, the hooks still
        loading, or ""."""
        if self.point and self.returned < len(self.handling):
            return f"hook {self.handling[self.returned]} did not return from {self.point}"
        if self.loading and not self.point:
            return f"hook {', '.join(self.loading)} had not finished loading"
        return ""

    def records(self) -> list[HookDecision | Confirm]:
        """The ledger and confirms recorded so far."""
        return gate_ledger(list(self.ui.events)) if self.ui is not None else []


def gate_hooks(rienda: RunHost, names: list[str], config: Config, cancel: CancelToken) -> list[Hook]:
    catalog = rienda.catalog(tools=[], hooks=names, cancel=cancel, config=config)
    missing = [name for name in names if name not in catalog.hooks]
    if missing:
        why = "; ".join(message for name in missing for message in catalog.diagnostics_of("hooks", name))
        raise ConfigError(f"hook {', '.join(missing)} did not load" + (f": {why}" if why else
                          f" (no {catalog.home / 'hooks' / missing[0] / 'index.js'})"))
    return [catalog.hooks[name] for name in names]


def gate_workdir(cwd: str | None, fallback: Path) -> Path:
    """The agent's working folder ``cwd`` when it is a folder here, else ``fallback``."""
    if cwd and Path(cwd).is_dir():
        return Path(cwd).resolve()
    return fallback


def gate_ledger(events: Sequence[Event]) -> list[HookDecision | Confirm]:
    return [e for e in events if isinstance(e, (HookDecision, Confirm))]


def hook_failure(records: Sequence[HookDecision | Confirm], point: str) -> str | None:
    """The reason to deny when a hook failed: it threw, or returned what ``point`` ignores."""
    for record in records:
        if isinstance(record, HookDecision) and record.effect in ("threw", "invalid"):
            what = "threw" if record.effect == "threw" else "returned what it ignores"
            return (f"denied by the Rienda gate: hook {record.hook} {what} in {point}: {record.error}; "
                    "a gate denies when a hook fails")
    return None


def _result_text(response: JSON) -> str:
    """The text of an agent's ``tool_response``: a string as it is, a shell's stdout and
    stderr, MCP content blocks' text, anything else as JSON."""
    if isinstance(response, str):
        return response
    if isinstance(response, dict):  # Copilot CLI's text for the model, Gemini CLI's
        for key in ("text_result_for_llm", "llmContent"):
            if isinstance(response.get(key), str):
                return str(response[key])
    if isinstance(response, dict) and ("stdout" in response or "stderr" in response):
        parts = [response.get("stdout"), response.get("stderr")]
        return "\n".join(part for part in parts if isinstance(part, str) and part)
    if isinstance(response, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in response):
        return "\n".join(str(block.get("text", "")) for block in response)
    return "" if response is None else json.dumps(response, ensure_ascii=False)


def _result_failed(response: JSON) -> bool:
    return isinstance(response, dict) and (response.get("is_error") is True or response.get("isError") is True
                                           or response.get("result_type") in ("failure", "error"))


def _allows(outcome: HookOutcome) -> bool:
    """Whether the hook returned ``allow: true``: an explicit allow, which the chain itself
    carries no further."""
    returned = outcome.returned
    return (returned is not None and returned.kind == "object" and isinstance(returned.value, dict)
            and returned.value.get("allow") is True)
