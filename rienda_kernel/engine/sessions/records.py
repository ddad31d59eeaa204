"""Every line of a session file that is not a message, as a type: one module defines
them, :func:`parse_record` reads them, :func:`record_json` writes them.

    {"type": "run_end", "reason", "error"}                 RunEndRecord: a run's end
    {"type": "stopped", "point", "message"}                StoppedRecord: a wind-down an interrupt stopped
    {"type": "pin", "message"}                             PinRecord: a prompt kept verbatim by every compaction
    {"type": "approval", "title", "body"}                  ApprovalRecord: a confirm allowed for the session
    {"type": "compaction", "outcome", "reason", ...}       CompactionRecord: a compaction, or one that did not happen
    {"type": "hook_decision", "hook", "point", ...}        HookDecision: the ledger (the event, with the run's depth)
    {"type": "confirm", "source", "title", ...}            Confirm: a confirm's answer (the event, with the depth)
    {"type": "notify", "source", "title", "body"}          Notify: a notice shown (ctx.notify; the event, with the depth)
    any other type                                         UnknownRecord: kept as written, for a newer Rienda's

A known record with a field missing or of the wrong type is not used: :func:`parse_record`
raises ValueError naming the field, and the reader turns that into a warning naming the
file and line. A field an older Rienda did not write takes its default (a compaction's
``reason`` ``auto``, its ``outcome`` ``compacted``, counts 0), so every session file ever
written reads the same. The header (``{"type": "session", ...}``) is
:class:`SessionHeader`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import ClassVar, Literal, TypeAlias, TypeVar

from ..common.json_value import JSON, JSONObject
from ..events import (
    COMPACTION_OUTCOMES,
    COMPACTION_REASONS,
    HOOK_EFFECTS,
    HOWS,
    RUN_END_REASONS,
    VIAS,
    CompactionOutcome,
    CompactionReason,
    Confirm,
    HookDecision,
    Notify,
    RunEndReason,
)
from .compaction.view import Compacted

__all__ = ["ApprovalRecord", "CompactionRecord", "PinRecord", "Record", "RunEndRecord", "SessionHeader",
           "StoppedRecord", "UnknownRecord", "parse_record", "record_json"]


@dataclass(frozen=True)
class RunEndRecord:
    """A run ended (``reason``), with the error it ended with."""

    type: ClassVar[Literal["run_end"]] = "run_end"
    reason: RunEndReason
    error: str | None = None


@dataclass(frozen=True)
class StoppedRecord:
    """An interrupt stopped the wind-down at ``point`` (``afterRun``, ``afterModelResponse``)."""

    type: ClassVar[Literal["stopped"]] = "stopped"
    point: str
    message: str


@dataclass(frozen=True)
class PinRecord:
    """Message number ``message`` (a prompt) is kept verbatim by every compaction."""

    type: ClassVar[Literal["pin"]] = "pin"
    message: int


@dataclass(frozen=True)
class ApprovalRecord:
    """A person allowed this confirm (exact ``title`` and ``body``) for the rest of the session."""

    type: ClassVar[Literal["approval"]] = "approval"
    title: str
    body: str


@dataclass(frozen=True)
class CompactionRecord:
    """A compaction: what came of it and why, the request's estimated tokens before and
    after, the window, how many tool results were pruned and messages folded, the hook
    that cancelled it (``by``) and what each hook did (``hooks``), how many messages the
    session held (``upto``) and the instructions it was asked with (a manual one's). A
    compacted one also holds its ``view`` (what requests are made from afterwards), the
    instructions the summariser got, the hook that supplied the summary, the estimate
    before ``afterCompact`` (``tokens_draft``) and what ``afterCompact`` saw, for replay."""

    type: ClassVar[Literal["compaction"]] = "compaction"
    outcome: CompactionOutcome
    reason: CompactionReason
    tokens_before: int
    tokens_after: int
    window: int | None = None
    pruned_count: int = 0
    folded_count: int = 0
    by: str | None = None
    hooks: tuple[str, ...] = ()
    upto: int | None = None
    asked_instructions: str | None = None
    view: Compacted | None = None
    instructions: str | None = None
    summary_by: str | None = None
    tokens_draft: int | None = None
    saw: JSONObject | None = None


@dataclass(frozen=True)
class UnknownRecord:
    """A record of a type this Rienda does not know (a newer one wrote it): kept as written."""

    type: str
    data: JSONObject = field(default_factory=dict)


@dataclass(frozen=True)
class SessionHeader:
    """A session file's first line. A sub-agent's session names the session and call that
    started it and its depth; a gate's session names the agent it decides for (``gate``)."""

    id: str
    agent: str = ""
    model: str = ""
    created: str = ""
    version: int = 1
    parent_session_id: str | None = None
    parent_call_id: str | None = None
    depth: int | None = None
    gate: JSONObject | None = None


Record: TypeAlias = (RunEndRecord | StoppedRecord | PinRecord | ApprovalRecord | CompactionRecord | HookDecision
                     | Confirm | Notify | UnknownRecord)
"""Every record a session file holds (see the module docstring)."""


def record_json(record: Record) -> JSONObject:
    """The line's JSON object for ``record`` (``{"type": ..., **fields}``)."""
    if isinstance(record, UnknownRecord):
        return {**record.data, "type": record.type}
    if isinstance(record, (HookDecision, Confirm, Notify)):
        return record.to_dict()
    if isinstance(record, CompactionRecord):
        return _compaction_json(record)
    return {"type": record.type, **asdict(record)}


def parse_record(data: JSONObject) -> Record:
    """The record ``data`` (a line's object, with a string ``type`` other than ``session``
    and ``message``) holds; ValueError naming the first field that is missing or wrong."""
    kind = data["type"]
    parse = _PARSERS.get(kind)
    return UnknownRecord(kind, data) if parse is None else parse(_Fields(data))


# ---------------------------------------------------------------- reading the fields


_Word = TypeVar("_Word", bound=str)


class _Fields:
    """A record's object, read field by field; each read raises ValueError naming the field."""

    def __init__(self, data: JSONObject) -> None:
        self.data = data

    def text(self, key: str) -> str:
        value = self.data.get(key)
        if not isinstance(value, str):
            raise ValueError(f"{key!r} must be a string, got {_shown(value)}")
        return value

    def optional_text(self, key: str) -> str | None:
        value = self.data.get(key)
        return None if value is None else self.text(key)

    def count(self, key: str, default: int | None = None) -> int:
        value = self.data.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{key!r} must be a whole number >= 0, got {_shown(value)}")
        return value

    def optional_count(self, key: str) -> int | None:
        return None if self.data.get(key) is None else self.count(key)

    def number(self, key: str, default: float) -> float:
        value = self.data.get(key, default)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ValueError(f"{key!r} must be a number, got {_shown(value)}")
        return float(value)

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise ValueError(f"{key!r} must be true or false, got {_shown(value)}")
        return value

    def word(self, key: str, words: tuple[_Word, ...], default: _Word | None = None) -> _Word:
        """The field's value, one of ``words`` (a Literal's: see ``events.HOWS``...)."""
        value = self.data.get(key, default)
        for word in words:
            if value == word:
                return word
        raise ValueError(f"{key!r} must be one of {', '.join(words)}, got {_shown(value)}")

    def texts(self, key: str) -> tuple[str, ...]:
        value = self.data.get(key) or []
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError(f"{key!r} must be a list of strings, got {_shown(value)}")
        return tuple(value)

    def optional_object(self, key: str) -> JSONObject | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"{key!r} must be an object, got {_shown(value)}")
        return value


def _shown(value: JSON) -> str:
    return "nothing" if value is None else f"{value!r:.40}"


def _run_end(fields: _Fields) -> RunEndRecord:
    return RunEndRecord(fields.word("reason", RUN_END_REASONS), fields.optional_text("error"))


def _stopped(fields: _Fields) -> StoppedRecord:
    return StoppedRecord(fields.text("point"), fields.text("message"))


def _pin(fields: _Fields) -> PinRecord:
    return PinRecord(fields.count("message"))


def _approval(fields: _Fields) -> ApprovalRecord:
    return ApprovalRecord(fields.text("title"), fields.text("body"))


def _compaction(fields: _Fields) -> CompactionRecord:
    outcome = fields.word("outcome", COMPACTION_OUTCOMES, "compacted")
    reason = fields.word("reason", COMPACTION_REASONS, "auto")
    view = Compacted.from_record(fields.data) if outcome == "compacted" else None
    return CompactionRecord(
        outcome, reason, fields.count("tokens_before", 0), fields.count("tokens_after", 0),
        window=fields.optional_count("window"), pruned_count=fields.count("pruned_count", 0),
        folded_count=fields.count("folded_count", 0), by=fields.optional_text("by"), hooks=fields.texts("hooks"),
        upto=fields.optional_count("upto"), asked_instructions=fields.optional_text("asked_instructions"), view=view,
        instructions=fields.optional_text("instructions"), summary_by=fields.optional_text("summary_by"),
        tokens_draft=fields.optional_count("tokens_draft"), saw=fields.optional_object("saw"))


def _compaction_json(record: CompactionRecord) -> JSONObject:
    """A compaction record's line: its view's fields at the top level (as it was always written)."""
    data: JSONObject = {"type": record.type, "outcome": record.outcome, "reason": record.reason,
                        "tokens_before": record.tokens_before, "tokens_after": record.tokens_after,
                        "window": record.window, "pruned_count": record.pruned_count,
                        "folded_count": record.folded_count, "by": record.by, "hooks": list(record.hooks),
                        "upto": record.upto, "asked_instructions": record.asked_instructions}
    if record.view is not None:
        data.update(record.view.to_record())
        data.update(instructions=record.instructions, summary_by=record.summary_by, tokens_draft=record.tokens_draft)
        if record.saw is not None:
            data["saw"] = record.saw
    return data


def _hook_decision(fields: _Fields) -> HookDecision:
    effect = fields.word("effect", HOOK_EFFECTS)
    changes = fields.optional_object("changes") or {}
    return HookDecision(
        hook=fields.text("hook"), point=fields.text("point"), effect=effect, changes=changes,
        reason=fields.optional_text("reason"), error=fields.optional_text("error"),
        duration_ms=fields.number("duration_ms", 0.0), call_id=fields.optional_text("call_id"),
        failed_closed=fields.flag("failed_closed"), depth=fields.count("depth", 0),
        session_id=fields.optional_text("session_id"))


def _confirm(fields: _Fields) -> Confirm:
    how = fields.word("how", HOWS)
    via = None if fields.data.get("via") is None else fields.word("via", VIAS)
    return Confirm(source=fields.text("source"), title=fields.text("title"), body=fields.text("body"),
                   answer=fields.flag("answer"), how=how, via=via, depth=fields.count("depth", 0),
                   session_id=fields.optional_text("session_id"))


def _notify(fields: _Fields) -> Notify:
    return Notify(source=fields.text("source"), title=fields.text("title"), body=fields.text("body"),
                  depth=fields.count("depth", 0), session_id=fields.optional_text("session_id"))


_PARSERS: Mapping[str, Callable[[_Fields], Record]] = {
    "run_end": _run_end, "stopped": _stopped, "pin": _pin, "approval": _approval, "compaction": _compaction,
    "hook_decision": _hook_decision, "confirm": _confirm, "notify": _notify,
}
