"""Compacting a run's context: the rules (:mod:`..sessions.compaction.plan`), the hooks, the
summariser, the record.

:func:`compact` makes one compaction:

1. plan it (what is kept, pruned, folded); nothing to do is one line, no record;
2. ``beforeCompact`` (``{reason, tokens, window, messages, instructions}``): the first
   ``cancel: true`` cancels it; ``summary`` supplies the summary; ``instructions`` are
   given to the summariser;
3. the summary: the hook's, else the summariser's (the agent's model, or ``compaction.model``
   from config.yaml), asked with :func:`..sessions.compaction.summary.summary_prompt` (an
   answer cut off at a length limit is kept as far as it got: it is checked as any other);
4. ``afterCompact`` (``{summary, tokensBefore, tokensAfter}``) may rewrite the summary;
5. a compaction whose request is not smaller than before is rejected;
6. the ``compaction`` record is appended (the session's messages are never changed) and
   the run's requests are made from the new view from then on.

Every outcome (compacted, cancelled, rejected, failed, nothing) is one :class:`Compaction`
event; all but ``nothing`` are recorded. :func:`compact` never raises but for
:class:`Interrupted` and a session file that cannot be written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..cancel import CancelToken
from ..ctx.host import RunContext
from ..errors import AnswerCutOff, Interrupted, ProviderError, RiendaError
from ..events import Compaction, Event, TextDelta, ThinkingDelta
from ..hooks import CompactGate, HookChain
from ..home.agents import Agent
from ..providers import ModelRequest, Provider, ToolSpec
from ..providers.collect import Partial, stream_response
from ..sessions.compaction.plan import Plan, plan_compaction, view_tokens
from ..sessions.compaction.settings import CompactionSettings
from ..sessions.compaction.summary import SYSTEM, summary_prompt
from ..sessions.compaction.view import Compacted, request_messages
from ..sessions.fill import ContextFill, context_fill, estimate_tokens
from ..sessions.messages import Message
from ..sessions.seen import saw
from ..sessions.writer import SessionWriter
from ..secrets import scrub_text
from ..tools.model import Catalog
from ..ui import EventSink

__all__ = ["AUTO_TARGET", "CompactionState", "Compactable", "compact", "due", "request_fill", "sent_messages", "tool_specs",
           "window_of"]

AUTO_TARGET = 0.75  # an automatic compaction that only prunes must bring the request under this share of the threshold


@dataclass
class CompactionState:
    """A conversation's compaction: its ``settings``, the ``view`` its requests are made
    from (None: never compacted), the ``pins`` (message numbers kept verbatim), and the
    summariser when config.yaml names one (``(provider, model name, model id)``)."""

    settings: CompactionSettings = field(default_factory=CompactionSettings)
    view: Compacted | None = None
    pins: set[int] = field(default_factory=set)
    summariser: tuple[Provider, str, str] | None = None
    held: Compaction | None = None  # this run's automatic one that was cancelled, rejected or failed: none again
    said_nothing: bool = False  # "nothing to compact" was said in this run (said once; tried again each turn)


class Compactable(Protocol):
    """What a compaction needs of a run's set-up (:class:`..loop.TurnSetup`)."""

    session_id: str
    agent: Agent
    model_id: str
    provider: Provider
    model_name: str
    catalog: Catalog
    run: RunContext
    writer: SessionWriter
    history: list[Message]
    compaction: CompactionState


def tool_specs(setup: Compactable) -> list[ToolSpec]:
    """The agent's tools as the model sees them."""
    return [ToolSpec(t.name, t.description, t.parameters) for t in (setup.catalog.tools[n] for n in setup.agent.tools)]


def sent_messages(setup: Compactable) -> list[Message]:
    """The messages the next request holds: the session's, through its compaction view."""
    return request_messages(setup.history, setup.compaction.view)


def request_fill(setup: Compactable, cancel: CancelToken) -> ContextFill:
    """How full the window is for the next request (no server is asked after a stop: the
    window is then what is known without asking, or unknown)."""
    return context_fill(sent_messages(setup), window_of(setup, cancel), _besides(setup))


def window_of(setup: Compactable, cancel: CancelToken) -> int | None:
    """The model's context window (None: unknown, or not asked after a stop)."""
    if cancel.cancelled:
        return None
    try:
        found = setup.provider.context_window(setup.model_name, setup.agent.options)
    except RiendaError:  # a provider of a user's that breaks its "never raises": the window is unknown
        return None
    return found.tokens if found else None


def due(setup: Compactable, cancel: CancelToken) -> bool:
    """Whether the next request passes ``window - reserve`` (and automatic compaction is on,
    and no automatic compaction of this run was cancelled, rejected or failed: those are
    not tried again turn after turn, burning tokens; one that found nothing to compact is,
    since each turn adds messages a later one may fold)."""
    settings = setup.compaction.settings
    if not settings.auto or setup.compaction.held:
        return False
    fill = request_fill(setup, cancel)
    return fill.window is not None and fill.tokens > settings.threshold(fill.window)


def compact(setup: Compactable, chain: HookChain, reason: str, cancel: CancelToken,
            instructions: str | None = None, refused_window: int | None = None) -> Compaction:
    """Make one compaction (see the module docstring); the :class:`Compaction` it came to.
    ``refused_window``: the window a server that refused the request said it has, which
    rules over a larger one configured or assumed (what is kept must fit the real one)."""
    state = setup.compaction
    fill = request_fill(setup, cancel)
    window, before, besides = fill.window, fill.tokens, _besides_tokens(setup)
    if refused_window is not None and (window is None or refused_window < window):
        window = refused_window
    keep = state.settings.keep_recent_for(window)
    target = None if window is None else int(state.settings.threshold(window) * AUTO_TARGET)
    plan = plan_compaction(setup.history, state.view, state.pins, keep, fold=reason != "auto", target=target,
                           besides=besides)
    if plan.empty:
        nothing = Compaction("nothing", reason, before, before, window, message=(
            f"nothing to compact: the first prompt, the pinned ones and the last {keep:,} tokens are kept as they are"))
        if reason == "auto" and state.said_nothing:
            return nothing  # said once in this run already
        state.said_nothing = reason == "auto" or state.said_nothing
        return _said(setup, nothing)
    current = sent_messages(setup)
    gate = chain.before_compact(reason, before, window, current, instructions, cancel)
    acted = _gate_lines(gate)
    if gate.cancelled_by is not None:
        why = f" ({gate.reason})" if gate.reason else ""
        return _recorded(setup, Compaction("cancelled", reason, before, before, window, by=gate.cancelled_by,
                                           hooks=acted, message=f"compaction cancelled by hook {gate.cancelled_by}{why}"),
                         instructions)
    try:
        made = _summary(setup, plan, gate, window, cancel)
    except ProviderError as exc:
        return _recorded(setup, Compaction("failed", reason, before, before, window, hooks=acted,
                                           message=f"compaction failed: the summariser's model failed: {exc}"),
                         instructions)
    draft = view_tokens(setup.history, plan.view.with_summary(made), besides)
    summary = scrub_text(chain.after_compact(made or "", before, draft, cancel)) or None  # as the record keeps it
    if summary != made:
        acted.append(f"{_writer(chain, 'afterCompact')}: rewrote the summary")
    view = plan.view.with_summary(summary)
    after = view_tokens(setup.history, view, besides)
    counts = {"pruned": len(plan.pruned), "folded": len(plan.folded)}
    estimated = view_tokens(setup.history, state.view, besides)  # compared estimate against estimate
    if after >= estimated:
        return _recorded(setup, Compaction("rejected", reason, before, after, window, hooks=acted, **counts, message=(
            f"compaction rejected: its summary did not make the context smaller (about {estimated:,} → {after:,} "
            "tokens); the session is left as it was")), instructions)
    event = Compaction("compacted", reason, before, after, window, hooks=acted, **counts,
                       message=_compacted_line(reason, before, after, window, plan, acted))
    seen = saw(chain.hooks, "afterCompact", {"summary": (made or "", summary or "")})
    extra = {"view": view.to_record(), "instructions": gate.instructions or instructions,
             "summary_by": gate.summary_by, "tokens_draft": draft, **({} if seen is None else {"saw": seen})}
    _recorded(setup, event, instructions, extra)
    state.view = view
    return event


def _summary(setup: Compactable, plan: Plan, gate: CompactGate, window: int | None, cancel: CancelToken) -> str | None:
    """The summary of the new view: a hook's, else the summariser's when messages are
    folded, else the previous one (a compaction that only prunes)."""
    if not plan.folded:
        return plan.view.summary
    if gate.summary is not None:
        return gate.summary
    folded = [setup.history[index] for index in plan.folded]
    provider, model, model_id = setup.compaction.summariser or (setup.provider, setup.model_name, setup.model_id)
    budget = max(256, (window or 16_384) // 2 - estimate_tokens(SYSTEM) - 200)
    prompt = summary_prompt(plan.view.summary, folded, gate.instructions, budget)
    options = setup.agent.options if model_id == setup.model_id else {}
    request = ModelRequest(model, SYSTEM, [Message.user(prompt)], [], setup.run.workdir, options, purpose="compaction")
    try:
        response, _, _ = stream_response(provider, request, _Quiet(setup.run.ui), cancel)
    except Partial as partial:
        if isinstance(partial.cause, Interrupted):
            raise partial.cause from None  # a stop, as it was raised, without the Partial carrying it
        if isinstance(partial.cause, AnswerCutOff) and partial.response.text.strip():
            return partial.response.text.strip()  # cut at a length limit, what it wrote still summarises
        raise ProviderError(str(partial.cause)) from partial.cause
    if not response.text.strip():
        raise ProviderError(f"{model_id} answered with no text")
    return response.text.strip()


class _Quiet:
    """The run's events without the summariser's streamed text (it is not the agent's answer)."""

    def __init__(self, front: EventSink) -> None:
        self.front = front

    def emit(self, event: Event) -> None:
        if not isinstance(event, (TextDelta, ThinkingDelta)):
            self.front.emit(event)


def _recorded(setup: Compactable, event: Compaction, asked: str | None,
              extra: dict[str, Any] | None = None) -> Compaction:
    """Append the ``compaction`` record of ``event`` and report it. Every record says how
    many messages the session held (``upto``) and the instructions it was ``asked`` with
    (a manual compaction's), so a replay gives ``beforeCompact`` what it was given."""
    record = {"type": "compaction", "outcome": event.outcome, "reason": event.reason,
              "tokens_before": event.tokens_before, "tokens_after": event.tokens_after, "window": event.window,
              "pruned_count": event.pruned, "folded_count": event.folded, "by": event.by, "hooks": event.hooks,
              "upto": len(setup.history), "asked_instructions": asked}
    if extra:
        record.update(extra.pop("view"))
        record.update(extra)
    setup.writer.append_record(record)
    return _said(setup, event)


def _said(setup: Compactable, event: Compaction) -> Compaction:
    setup.run.ui.emit(event)
    return event


def _gate_lines(gate: CompactGate) -> list[str]:
    acted = []
    if gate.cancelled_by:
        acted.append(f"{gate.cancelled_by}: cancelled")
    if gate.summary_by:
        acted.append(f"{gate.summary_by}: supplied the summary")
    if gate.instructions_by:
        acted.append(f"{gate.instructions_by}: added instructions")
    return acted


def _writer(chain: HookChain, point: str) -> str:
    names = [hook.name for hook in chain.hooks if point in hook.points]
    return names[-1] if len(names) == 1 else "afterCompact hooks"


def _compacted_line(reason: str, before: int, after: int, window: int | None, plan: Plan, acted: list[str]) -> str:
    """``compacted (auto): 1,850 → 620 tokens of 2,048; pruned 3 tool results, folded 12
    messages into a summary; team-rules: added instructions``."""
    of = f" of {window:,}" if window else ""
    done = []
    if plan.pruned:
        done.append(f"pruned {len(plan.pruned)} tool result{'s' * (len(plan.pruned) != 1)}")
    if plan.folded:
        done.append(f"folded {len(plan.folded)} message{'s' * (len(plan.folded) != 1)} into a summary")
    return "; ".join([f"compacted ({reason}): {before:,} → {after:,} tokens{of}", ", ".join(done), *acted])


def _besides(setup: Compactable) -> list[str]:
    return [setup.agent.system, json.dumps([tool.as_function() for tool in tool_specs(setup)])]


def _besides_tokens(setup: Compactable) -> int:
    return sum(estimate_tokens(text) for text in _besides(setup))
