"""Compacting a run's context: the rules (:mod:`..sessions.compaction.plan`), the hooks, the
summariser, the record. A :class:`Compactor` (one per run) is its one owner: it decides when
(before a request, on a refusal for length, by hand) and makes each compaction:

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
event (said and recorded by a :class:`_Report`); all but ``nothing`` are recorded (a :class:`CompactionRecord`). A
compaction never raises but for :class:`Interrupted` and a session file that cannot be
written (a manual one says that as ``failed`` too).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Protocol

from ..cancel import CancelToken
from ..common.json_value import JSONObject
from ..ctx.host import RunContext
from ..errors import AnswerCutOff, ContextOverflow, Interrupted, ProviderError, RiendaError, SessionWriteError
from ..events import Compaction, CompactionOutcome, CompactionReason, Event, Notify, TextDelta, ThinkingDelta
from ..hooks import CompactGate, HookChain
from ..home.agents import Agent
from ..providers import ModelRequest, Provider, ToolSpec
from ..providers.collect import Partial, stream_response
from ..providers.overflow import overflow_line
from ..sessions.compaction.plan import Plan, plan_compaction, pruned_and_folded, view_tokens
from ..sessions.compaction.settings import CompactionSettings
from ..sessions.compaction.summary import SYSTEM, summary_prompt
from ..sessions.compaction.view import Compacted, request_messages
from ..sessions.fill import ContextFill, context_fill, estimate_tokens
from ..sessions.messages import Message
from ..sessions.records import CompactionRecord
from ..sessions.seen import saw
from ..sessions.writer import SessionWriter
from ..secrets import scrub_text
from ..tools.model import Catalog
from ..ui import EventSink

__all__ = ["AUTO_TARGET", "CompactionState", "Compactable", "Compactor", "request_fill", "said_failed",
           "sent_messages", "tool_specs", "window_of"]

SUMMARY_MAX_TOKENS = 4096  # what a summariser may write (its request's max_tokens)
CHARACTERS_PER_TOKEN_AT_MOST = 16  # past this many characters a token, a summary stream is cut off (unread)
AUTO_TARGET = 0.75  # an automatic compaction that only prunes must bring the request under this share of the threshold


@dataclass
class CompactionState:
    """A conversation's compaction: its ``settings``, the ``view`` its requests are made
    from (None: never compacted), the ``pins`` (message numbers kept verbatim), and the
    summariser when config.yaml names one (``(provider, model name, model id)``). The
    conversation sets it from config and the session; only a :class:`Compactor` changes
    the view."""

    settings: CompactionSettings = field(default_factory=CompactionSettings)
    view: Compacted | None = None
    pins: set[int] = field(default_factory=set)
    summariser: tuple[Provider, str, str] | None = None


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


class Compactor:
    """A run's compaction, and its one owner: whether to compact before a request
    (:meth:`before_request`), on a refusal for length (:meth:`after_refusal`) and the line
    that refusal ends the run with (:meth:`overflow`), by hand (:meth:`manual`), and every
    outcome's event and record. It holds the run's flags: an automatic compaction that was
    cancelled, rejected or failed is not tried again in the run (turn after turn, burning
    tokens), nor on a refusal; "nothing to compact" is said once a run (each turn adds
    messages a later one may fold, so it is tried again). Made once per run (or per manual
    compaction) with the run's set-up and hook chain."""

    def __init__(self, setup: Compactable, chain: HookChain) -> None:
        self.setup = setup
        self.chain = chain
        self._held: Compaction | None = None  # this run's automatic one that went wrong: none again
        self._said_nothing = False

    def before_request(self, cancel: CancelToken) -> None:
        """Compact (``auto``) when the next request passes ``window - reserve``, automatic
        compaction is on and none of this run went wrong; then, when the request is still
        larger than the whole window (nothing could be compacted, or compaction is off), say
        so before it is sent: the model may refuse it."""
        settings = self.setup.compaction.settings
        fill = request_fill(self.setup, cancel)
        if fill.window is None:
            return
        if settings.auto and self._held is None and fill.tokens > settings.threshold(fill.window):
            made = self._compact("auto", cancel)
            if made.outcome in ("cancelled", "rejected", "failed"):
                self._held = made
            fill = request_fill(self.setup, cancel)
        if fill.window is not None and fill.tokens > fill.window:
            self.setup.run.ui.emit(Notify("rienda", "context", (
                f"the request holds {'about ' if fill.estimated else ''}{fill.tokens:,} tokens, {fill.percent} % of "
                f"{self.setup.model_id}'s window of {fill.window:,}: it is sent as it is, and the model may refuse it")))

    def after_refusal(self, refused: ContextOverflow, cancel: CancelToken) -> Compaction | None:
        """The compaction a refusal for length gets (reason ``overflow``): none when automatic
        compaction is off; this run's automatic one that went wrong, not tried again; else
        one now, fitted to the window the server said it has."""
        if not self.setup.compaction.settings.auto:
            return None
        return self._held or self._compact("overflow", cancel, refused_window=refused.window)

    def manual(self, instructions: str | None, cancel: CancelToken) -> Compaction:
        """A compaction by hand (``manual``), with the user's ``instructions``: ``failed``
        for a session file that cannot be written or a summariser that fails (a stop
        raises :class:`Interrupted`)."""
        try:
            return self._compact("manual", cancel, instructions)
        except (SessionWriteError, ProviderError) as exc:
            return said_failed(self.setup.run.ui, str(exc))

    def overflow(self, refused: ContextOverflow, cancel: CancelToken, made: Compaction | None, *,
                 again: bool = False, cut_short: bool = False) -> ContextOverflow:
        """The one line a run refused for its length ends with: the server's figures where
        it gave them, else Rienda's (the window as known, the fill as estimated), and what
        compaction did (``made``; ``again``: the request was refused after compacting it
        once; ``cut_short``: an answer the window cut off, which nothing compacted before)."""
        fill = request_fill(self.setup, cancel)
        tokens = refused.tokens or fill.tokens
        window = refused.window or fill.window
        _, http, rest = str(refused).partition("HTTP ")  # the server's words, without its URL
        said = http + rest if http else str(refused)
        tried = "" if cut_short else "even after compacting it once" if again else _tried(made)
        line = overflow_line(self.setup.model_id, self.setup.session_id, tokens, window, refused.tokens is None, said,
                             tried)
        return ContextOverflow(line, tokens=tokens, window=window)

    def _compact(self, reason: CompactionReason, cancel: CancelToken, instructions: str | None = None,
                 refused_window: int | None = None) -> Compaction:
        """Make one compaction (see the module docstring); the :class:`Compaction` it came
        to. ``refused_window``: the window a server that refused the request said it has,
        which rules over a larger one configured or assumed (what is kept must fit it)."""
        setup, state = self.setup, self.setup.compaction
        fill = request_fill(setup, cancel)
        window, before, besides = fill.window, fill.tokens, _besides_tokens(setup)
        if refused_window is not None and (window is None or refused_window < window):
            window = refused_window
        keep = state.settings.keep_recent_for(window)
        target = None if window is None else int(state.settings.threshold(window) * AUTO_TARGET)
        plan = plan_compaction(setup.history, state.view, state.pins, keep, fold=reason != "auto", target=target,
                               besides=besides)
        if plan.empty:
            return self._nothing(reason, before, window, keep)
        gate = self.chain.before_compact(reason, before, window, sent_messages(setup), instructions, cancel)
        acted = _gate_lines(gate)
        outcome = _Report(setup, reason, before, window, acted, instructions)
        if gate.cancelled_by is not None:
            why = f" ({gate.reason})" if gate.reason else ""
            return outcome.recorded("cancelled", before, f"compaction cancelled by hook {gate.cancelled_by}{why}",
                                    by=gate.cancelled_by)
        try:
            made = _summary(setup, plan, gate, window, cancel)
        except ProviderError as exc:
            return outcome.recorded("failed", before, f"compaction failed: the summariser's model failed: {exc}")
        return self._check_and_keep(outcome, plan, gate, made, cancel)

    def _check_and_keep(self, outcome: _Report, plan: Plan, gate: CompactGate, made: str | None,
                        cancel: CancelToken) -> Compaction:
        """``afterCompact`` on the summary ``made``, then the new view kept, or rejected when
        it does not make the request smaller."""
        setup, besides = self.setup, _besides_tokens(self.setup)
        draft = view_tokens(setup.history, plan.view.with_summary(made), besides)
        summary = scrub_text(self.chain.after_compact(made or "", outcome.before, draft, cancel)) or None
        if summary != (made or None):  # as the record keeps it (an empty summary is none)
            outcome.acted.append(f"{_writer(self.chain, 'afterCompact')}: rewrote the summary")
        view = plan.view.with_summary(summary)
        after = view_tokens(setup.history, view, besides)
        pruned, folded = len(plan.pruned), len(plan.folded)
        estimated = view_tokens(setup.history, setup.compaction.view, besides)  # compared estimate against estimate
        if after >= estimated:
            return outcome.recorded("rejected", after, (
                f"compaction rejected: its summary did not make the context smaller (about {estimated:,} → {after:,} "
                "tokens); the session is left as it was"), pruned=pruned, folded=folded)
        seen = saw(self.chain.hooks, "afterCompact", {"summary": (made or "", summary or "")})
        message = _compacted_line(outcome.reason, outcome.before, after, outcome.window, plan, outcome.acted)
        event = outcome.recorded("compacted", after, message, view=view, instructions=gate.instructions or
                                 outcome.asked, summary_by=gate.summary_by, tokens_draft=draft, saw=seen, pruned=pruned,
                                 folded=folded)
        setup.compaction.view = view
        return event

    def _nothing(self, reason: CompactionReason, before: int, window: int | None, keep: int) -> Compaction:
        """Nothing to compact: said (no record), once per run for the automatic ones."""
        nothing = Compaction("nothing", reason, before, before, window, message=(
            f"nothing to compact: the first prompt, the pinned ones and the last {keep:,} tokens are kept as they are"))
        if reason == "auto":
            if self._said_nothing:
                return nothing
            self._said_nothing = True
        self.setup.run.ui.emit(nothing)
        return nothing


def said_failed(ui: EventSink, why: str) -> Compaction:
    """A manual compaction that could not be made (``why``), said to ``ui``: its event."""
    event = Compaction("failed", "manual", 0, 0, message=f"compaction failed: {why}")
    ui.emit(event)
    return event


def _tried(made: Compaction | None) -> str:
    """What the overflow line says of the compaction a refusal got: off, or what became of it."""
    if made is None:
        return "and compaction is off (compaction: false in config.yaml)"
    return {"nothing": "and nothing could be compacted", "cancelled": f"and hook {made.by} cancelled its compaction",
            "rejected": "and its compaction did not make it smaller"}.get(made.outcome, "and its compaction failed")


class _Report:
    """What one compaction came to, said and recorded: the event every front end gets and
    the ``compaction`` record (all but ``nothing``). Every record says how many messages
    the session held (``upto``) and the instructions it was ``asked`` with (a manual
    one's), so a replay gives ``beforeCompact`` what it was given."""

    def __init__(self, setup: Compactable, reason: CompactionReason, before: int, window: int | None,
                 acted: list[str], asked: str | None) -> None:
        self.setup, self.reason, self.before, self.window = setup, reason, before, window
        self.acted, self.asked = acted, asked

    def recorded(self, outcome: CompactionOutcome, after: int, message: str, *, by: str | None = None,
                 pruned: int = 0, folded: int = 0, view: Compacted | None = None, instructions: str | None = None,
                 summary_by: str | None = None, tokens_draft: int | None = None,
                 saw: JSONObject | None = None) -> Compaction:
        event = Compaction(outcome, self.reason, self.before, after, self.window, pruned, folded, by, self.acted,
                           message)
        self.setup.writer.append_record(CompactionRecord(
            outcome, self.reason, self.before, after, self.window, pruned, folded, by, tuple(self.acted),
            len(self.setup.history), self.asked, view, instructions, summary_by, tokens_draft, saw))
        self.setup.run.ui.emit(event)
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
    # What the summary may take: SUMMARY_MAX_TOKENS, at most an eighth of the window (a summary
    # is to free the window for the conversation that goes on) and what the request leaves of
    # it; never under 256.
    room = SUMMARY_MAX_TOKENS if window is None else min(
        window // 8, window - estimate_tokens(SYSTEM) - estimate_tokens(prompt) - 64)
    most = max(256, min(SUMMARY_MAX_TOKENS, room))
    options = {**(setup.agent.options if model_id == setup.model_id else {}), "max_tokens": most}
    request = ModelRequest(model, SYSTEM, [Message.user(prompt)], [], setup.run.workdir, options, purpose="compaction")
    try:
        response, _, _ = stream_response(provider, request, _Quiet(setup.run.ui), cancel,
                                         limit=most * CHARACTERS_PER_TOKEN_AT_MOST)
    except Partial as partial:
        if isinstance(partial.cause, Interrupted):
            raise partial.cause from None  # a stop, as it was raised, without the Partial carrying it
        if isinstance(partial.cause, (AnswerCutOff, ContextOverflow)) and partial.response.text.strip():
            return partial.response.text.strip()  # cut at a length limit or a full window: what it wrote summarises
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


def _compacted_line(reason: CompactionReason, before: int, after: int, window: int | None, plan: Plan, acted: list[str]) -> str:
    """``compacted (auto): 1,850 → 620 tokens of 2,048; pruned 3 tool results, folded 12
    messages into a summary; team-rules: added instructions``."""
    of = f" of {window:,}" if window else ""
    done = pruned_and_folded(len(plan.pruned), len(plan.folded))
    return "; ".join([f"compacted ({reason}): {before:,} → {after:,} tokens{of}", done, *acted])


def _besides(setup: Compactable) -> list[str]:
    return [setup.agent.system, json.dumps([tool.as_function() for tool in tool_specs(setup)])]


def _besides_tokens(setup: Compactable) -> int:
    return sum(estimate_tokens(text) for text in _besides(setup))
