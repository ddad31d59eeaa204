"""The closed set of events the engine reports; front ends only render these.

Every event is a frozen dataclass with a ``type`` class attribute (its wire name, as
``rienda run --json`` prints it) and :meth:`to_dict`. ``source`` names who produced it:
``"tool:<name>"``, ``"hook:<name>.<point>"``, or ``"extensions"`` for loading.

Every event also has ``depth`` (keyword only): 0 for what the top-level run reports, 1 for
a sub-agent it started with the ``agent`` tool, 2 for a sub-agent of that one... A child
run's events reach the same front end, between its ``agent`` call's :class:`ToolCallStarted`
and :class:`ToolResultReady`, each tagged with the child's depth and ``session_id``, the session
its run is saved in; its :class:`RunStart` names the parent session and call. What a child
reports while it is set up, before its session exists (diagnostics of loading its agent, the
default-model notice), is held until its ``RunStart`` and then goes out with that session's
id, in its order; when the setup fails no session exists, and those events and the child's
``RunEnd`` go out with ``session_id`` None. A top-level run's events have ``session_id``
None (its ``RunStart`` names the session). Fields are only ever added, so ``--json``
readers keep working.

:data:`Event` is the closed union of every kind: a renderer that switches over it ends in
``assert_never`` (``typing``), so a kind it forgets is a type error, not a silent drop.
The ``Literal`` types name the words a field may hold (:data:`RunEndReason`,
:data:`HookEffect`, :data:`CompactionOutcome`, :data:`CompactionReason`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import ClassVar, Literal, TypeAlias, get_args

from .common.json_value import JSON, JSONObject
from .sessions.fill import ContextFill

__all__ = [
    "COMPACTION_OUTCOMES",
    "COMPACTION_REASONS",
    "HOOK_EFFECTS",
    "HOWS",
    "RUN_END_REASONS",
    "VIAS",
    "Compaction",
    "CompactionOutcome",
    "CompactionReason",
    "Confirm",
    "Diagnostic",
    "Divergence",
    "Event",
    "HookDecision",
    "HookEffect",
    "How",
    "Log",
    "MessageSaved",
    "Notify",
    "Output",
    "Replayed",
    "RunEnd",
    "RunEndReason",
    "RunStart",
    "StreamName",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallStarted",
    "ToolResultReady",
    "Via",
    "Waiting",
    "WaitingOn",
]

How = Literal[
    "user",                             # a person answered, for this request only
    "allowed for this session",         # a person allowed this exact request for the rest of the session
    "allowed earlier in this session",  # ...so it was allowed again without asking
    "auto-approve",                     # the explicit policy allows (--yes, auto_approve: true, confirm allow)
    "auto-deny",                        # the explicit policy denies (auto_approve: false, confirm deny)
    "default-deny",                     # no policy, and nobody could be asked (a batch run)
    "interrupted",                      # the run was stopped while asking
    "as recorded",                      # a replay answered as the session's recording was answered
    "left to the agent",                # rienda gate: the other agent (Claude Code...) asks its person
]
Via = Literal["buttons", "y/N"]  # how a person answered: a front end's buttons, or a typed y/N
RunEndReason = Literal["end_turn", "interrupted", "error"]  # how a run ended
# What one hook did at one point ("stopped": the run was stopped while the hook ran; it never returned).
HookEffect = Literal["none", "refused", "rewrote", "threw", "invalid", "stopped"]
CompactionOutcome = Literal["compacted", "cancelled", "rejected", "failed", "nothing"]
CompactionReason = Literal["auto", "manual", "overflow"]  # before a request, on a refusal for length, by hand
StreamName = Literal["stdout", "stderr"]  # which of a command's streams printed it
WaitingOn = Literal["hook", "mcp_server"]  # what a run waits on when it says so (Waiting)

# Each Literal's words, for the readers that check a word read from a file.
HOWS: tuple[How, ...] = get_args(How)
VIAS: tuple[Via, ...] = get_args(Via)
RUN_END_REASONS: tuple[RunEndReason, ...] = get_args(RunEndReason)
HOOK_EFFECTS: tuple[HookEffect, ...] = get_args(HookEffect)
COMPACTION_OUTCOMES: tuple[CompactionOutcome, ...] = get_args(CompactionOutcome)
COMPACTION_REASONS: tuple[CompactionReason, ...] = get_args(CompactionReason)


@dataclass(frozen=True)
class _Event:
    """What every kind of :data:`Event` has: its wire name, its depth and session."""

    type: ClassVar[str] = "event"
    depth: int = field(default=0, kw_only=True)  # 0: the top-level run; n: a sub-agent n levels down
    session_id: str | None = field(default=None, kw_only=True)  # a sub-agent's event: its run's session

    def to_dict(self) -> JSONObject:
        """The event as ``rienda run --json`` prints it: ``{"type": ..., **fields}``."""
        return {"type": self.type, **asdict(self)}


@dataclass(frozen=True)
class Log(_Event):
    """A line from ``ctx.log`` or ``console.*``, delivered while the extension runs."""

    type: ClassVar[str] = "log"
    source: str
    text: str


@dataclass(frozen=True)
class Output(_Event):
    """A chunk a running command printed (``ctx.system.exec``, the ``shell`` tool)."""

    type: ClassVar[str] = "output"
    source: str
    stream: StreamName
    text: str


@dataclass(frozen=True)
class Notify(_Event):
    """A notice from ``ctx.notify``."""

    type: ClassVar[str] = "notify"
    source: str
    title: str
    body: str


@dataclass(frozen=True)
class Confirm(_Event):
    """A ``ctx.confirm`` request and its answer.

    ``how`` says who or what decided, one of :data:`How`: ``user``, ``allowed for this
    session`` (a person, for the rest of the session), ``allowed earlier in this session``,
    ``auto-approve`` / ``auto-deny`` (an explicit policy), ``default-deny`` (nobody could
    be asked), ``interrupted``. ``via`` is how a person was asked (``buttons`` or ``y/N``),
    None when nobody was.
    """

    type: ClassVar[str] = "confirm"
    source: str
    title: str
    body: str
    answer: bool
    how: How
    via: Via | None = None

    @property
    def verdict(self) -> str:
        """The answer as a person reads it: ``allowed`` or ``denied``; for a gate that left
        the question to the other agent (``how`` ``left to the agent``: the hook was told yes
        so its rewrite goes with the question), ``asked of the agent's user``."""
        if self.how == "left to the agent":
            return "asked of the agent's user"
        return "allowed" if self.answer else "denied"

    @property
    def mark(self) -> str:
        """``✓`` allowed, ``✗`` denied, ``?`` asked of the other agent's user."""
        return "?" if self.how == "left to the agent" else ("✓" if self.answer else "✗")


@dataclass(frozen=True)
class Diagnostic(_Event):
    """Something wrong with an extension or a hook's behaviour; never fatal.

    ``path`` and ``line`` locate it in a file when known.
    """

    type: ClassVar[str] = "diagnostic"
    source: str
    message: str
    path: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class HookDecision(_Event):
    """What one hook did at one point: ``effect`` is one of "none", "refused",
    "rewrote", "threw", "invalid", "stopped" (the run was stopped while it ran: ``error``
    says so, ``duration_ms`` how long it had run); ``changes`` maps each field it replaced to
    ``{"before": ..., "after": ...}``. ``failed_closed``: a refusal that is a fail-closed
    hook's failure (``error`` says what failed; ``reason`` is what the model read)."""

    type: ClassVar[str] = "hook_decision"
    hook: str
    point: str
    effect: HookEffect
    changes: dict[str, JSON] = field(default_factory=dict)
    reason: str | None = None
    error: str | None = None
    duration_ms: float = 0.0
    call_id: str | None = None
    failed_closed: bool = False


@dataclass(frozen=True)
class Waiting(_Event):
    """The run has waited ``seconds`` on an extension that has not returned, and still waits:
    a hook (``on`` "hook": hook ``name`` at ``point``, for the tool call ``call_id`` where
    the point is a call's) or an MCP server starting (``on`` "mcp_server": server ``name``).
    Said once per wait, live, so a run that waits is never silent; what ends the wait comes
    as its own event (the hook's :class:`HookDecision`, a ``stopped`` one when the run was
    stopped during it). Never saved in the session."""

    type: ClassVar[str] = "waiting"
    on: WaitingOn
    name: str
    seconds: float
    point: str | None = None
    call_id: str | None = None

    def subject(self) -> str:
        """What is waited on, for a person: ``hook loop (beforeToolExecute)``, ``MCP server git
        to start``."""
        if self.on == "hook":
            return f"hook {self.name} ({self.point})"
        return f"MCP server {self.name} to start"


@dataclass(frozen=True)
class RunStart(_Event):
    """A run began in ``session_id`` (its user message is already saved). A sub-agent's
    run (``depth`` > 0) names the session and the ``agent`` call that started it."""

    type: ClassVar[str] = "run_start"
    session_id: str = field()  # the base class's field, required here: every run names its session
    agent: str
    model: str
    parent_session_id: str | None = None
    parent_call_id: str | None = None


@dataclass(frozen=True)
class TextDelta(_Event):
    """A streamed piece of the assistant's text, as the model produced it (before
    ``afterModelResponse``; the saved message is in :class:`MessageSaved`)."""

    type: ClassVar[str] = "text"
    text: str


@dataclass(frozen=True)
class ThinkingDelta(_Event):
    """A streamed piece of the model's thinking."""

    type: ClassVar[str] = "thinking"
    text: str


@dataclass(frozen=True)
class MessageSaved(_Event):
    """An assistant message as saved to the session (after ``afterModelResponse``);
    ``context``: how full the model's window is for the request after it, as in
    :class:`RunEnd` (front ends show the fill live, turn after turn)."""

    type: ClassVar[str] = "message"
    message: JSONObject  # the saved message's JSON form (Message.to_dict)
    context: ContextFill | None = None


@dataclass(frozen=True)
class ToolCallStarted(_Event):
    """A tool call about to run, with the arguments the tool receives (after the
    ``beforeToolExecute`` chain); ``refused_by`` names the hook that refused it."""

    type: ClassVar[str] = "tool_call"
    id: str
    name: str
    arguments: JSON
    refused_by: str | None = None


@dataclass(frozen=True)
class ToolResultReady(_Event):
    """A tool call's result as the model reads it (after ``afterToolExecute``); for an
    ``agent`` call, ``subagent_session_id`` is the session the sub-agent's run was saved in."""

    type: ClassVar[str] = "tool_result"
    id: str
    name: str
    text: str
    isError: bool
    subagent_session_id: str | None = None


@dataclass(frozen=True)
class RunEnd(_Event):
    """The run ended: ``reason`` is ``end_turn``, ``interrupted`` or ``error``; ``context``:
    ``{tokens, window, estimated}``, how full the model's context window is for the next
    request (``window`` None: unknown), None when the run never reached its model."""

    type: ClassVar[str] = "run_end"
    reason: RunEndReason
    error: str | None = None
    context: ContextFill | None = None  # how full the model's window is for the next request


@dataclass(frozen=True)
class Compaction(_Event):
    """A compaction of the session's context (or one that did not happen): ``outcome`` is
    ``compacted``, ``cancelled`` (a ``beforeCompact`` hook, ``by``), ``rejected`` (its
    summary did not make the context smaller), ``failed`` (the summariser failed) or
    ``nothing`` (every message is one the rules keep); ``reason`` ``auto``, ``manual`` or
    ``overflow``; ``tokens_before``/``tokens_after`` the request's estimated size;
    ``pruned``/``folded`` how many tool results were pruned and messages folded;
    ``hooks``: what each hook did (``"team-rules: added instructions"``); ``message``: the
    one line front ends show."""

    type: ClassVar[str] = "compaction"
    outcome: CompactionOutcome
    reason: CompactionReason
    tokens_before: int
    tokens_after: int
    window: int | None = None
    pruned: int = 0
    folded: int = 0
    by: str | None = None
    hooks: list[str] = field(default_factory=list)
    message: str = ""


@dataclass(frozen=True)
class Replayed(_Event):
    """A model request answered from the recording (``%rienda record``, ``rienda run
    --record``) instead of the model; its answer streams next, as a live one would.
    ``recording``: the file as named; ``exchange``: the answer's number in it (1 for the
    first); ``purpose``: ``turn`` or ``compaction``; ``input_tokens``/``output_tokens``: what
    the live call reported when it was recorded (nothing is spent now)."""

    type: ClassVar[str] = "replayed"
    recording: str
    exchange: int
    purpose: Literal["turn", "compaction"] = "turn"
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Divergence(_Event):
    """A run left its recording: a model request the recording does not hold (a tool's
    result, a hook, a prompt or the agent changed since). ``where``: the cell or turn (and
    sub-agent); ``difference``: the first difference from the nearest recorded request;
    ``asked``: whether the model was asked instead (``auto`` mode; from there on the run is
    live); ``message``: the one line front ends show. In ``replay`` mode the run ends with
    that line as its error instead, and no event is sent."""

    type: ClassVar[str] = "divergence"
    recording: str
    where: str
    difference: str
    asked: bool
    message: str


Event: TypeAlias = (Log | Output | Notify | Confirm | Diagnostic | HookDecision | RunStart | TextDelta | ThinkingDelta
                    | MessageSaved | ToolCallStarted | ToolResultReady | RunEnd | Compaction | Replayed | Divergence
                    | Waiting)
"""Every event the engine reports: a closed union (see the module docstring)."""
