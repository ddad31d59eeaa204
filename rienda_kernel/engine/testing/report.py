"""What a replay found (:mod:`.replay`): per recorded call, per assistant text, per sub-agent.

Contracts:
- A call differs when it is now refused and was not, or the reverse, or refused otherwise
  (another hook, or the same hook now failing closed where it decided before, or the
  reverse); when its arguments or its result now differ; or when it could not run again.
  An expectation (:mod:`.expectations`) replaces the recording as the measure.
- A sub-agent's session is replayed under the ``agent`` call that started it: its report
  is that call's ``child`` (and one of ``children``), printed indented under the call; a
  call whose sub-agent's replay differs is marked as differing, and so is the whole report.
- ``to_dict`` (``rienda replay --json``): fields are only ever added. Each call names the
  sub-agent session it started (``child_session_id``); each of ``children`` names the call
  that started it (``parent_call_id``) and its agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..common.json_value import JSON, JSONObject
from .expectations import CallExpectation
from ..tools.model import ToolResult

__all__ = ["CallReplay", "ReplayReport"]


@dataclass(frozen=True)
class CallReplay:
    """One recorded tool call against the chain as it is now."""

    id: str
    name: str
    recorded_arguments: JSON
    now_arguments: JSON
    recorded_refused_by: str | None
    now_refused_by: str | None
    recorded_result: ToolResult | None
    now_result: ToolResult | None
    expectation: CallExpectation | None = None
    unchecked: str | None = None  # why the result cannot be compared with the recording, if it cannot
    not_run: str | None = None  # with run_tools: why the tool could not run again (always a difference)
    recorded_failed: str | None = None  # the error of the fail-closed hook whose failure refused it then
    now_failed: str | None = None  # ...and now
    child_session: str | None = None  # the sub-agent's session an ``agent`` call started
    child: ReplayReport | None = None  # that session's replay
    occurrence: int = 1  # the how-manieth decision on this call id (an agent may send one call to its gate twice)

    @property
    def label(self) -> str:
        """``name [id]``, with ``#N`` after the id from its second decision on."""
        return f"{self.name} [{self.id}{f' #{self.occurrence}' if self.occurrence > 1 else ''}]"

    @property
    def differences(self) -> list[str]:
        """What is not as it should be: as the expectation states it, else as recorded (a
        sub-agent's differences are its ``child``'s)."""
        expected = self.expectation
        found = [f"not run again: {self.not_run}"] if self.not_run else []
        found += (expected.refusal_problems(self) if expected and expected.refused is not None
                 else self._refusal_changes())
        found += (expected.argument_problems(self) if expected and expected.arguments is not None
                  else self._argument_changes())
        found += expected.result_problems(self) if expected and expected.result is not None else self._result_changes()
        return found

    def _refusal_changes(self) -> list[str]:
        was, now = self.recorded_refused_by, self.now_refused_by
        if now and not was:
            return [f"now refused by hook {now}: {self.now_result.text if self.now_result else ''}"]
        if was and not now:
            return [f"no longer refused (was refused by {_by(was, self.recorded_failed)})"]
        if was and now and (was != now or bool(self.recorded_failed) != bool(self.now_failed)):
            return [f"now refused by {_by(now, self.now_failed)} (was refused by {_by(was, self.recorded_failed)})"]
        return []

    def _argument_changes(self) -> list[str]:
        if not self.now_refused_by and self.now_arguments != self.recorded_arguments:
            return [f"arguments now different: {_field_changes(self.recorded_arguments, self.now_arguments)}"]
        return []

    def _result_changes(self) -> list[str]:
        if self.unchecked is None and (self.now_result is not None and self.recorded_result is not None and not self.now_refused_by
                and not self.recorded_refused_by and self.now_result != self.recorded_result):
            return [f"result now different: {_short(self.recorded_result.text)!r} -> {_short(self.now_result.text)!r}"]
        return []

    def to_dict(self) -> JSONObject:
        return {"id": self.id, "name": self.name, "differences": self.differences, "not_run": self.not_run,
                "child_session_id": self.child_session, "occurrence": self.occurrence}


@dataclass(frozen=True)
class ReplayReport:
    """What a replay found: per call, per assistant text, and the expectations (from
    ``expected_from``) that matched no call. ``hook_calls`` counts handler invocations.
    A sub-agent's report names its ``agent`` and the ``parent_call_id`` that started it."""

    session_id: str
    hooks: list[str]
    calls: list[CallReplay] = field(default_factory=list)
    texts: list[tuple[str, str]] = field(default_factory=list)  # (recorded, now) where they differ
    unmatched: list[str] = field(default_factory=list)
    expected_from: Path | None = None
    hook_calls: int = 0
    children: list[ReplayReport] = field(default_factory=list)  # sub-agents' sessions, in call order
    notes: list[str] = field(default_factory=list)  # what could only be replayed as well as the session allows
    agent: str | None = None
    parent_call_id: str | None = None
    compactions: list[str] = field(default_factory=list)  # what the compaction hooks now decide differently

    @property
    def changed(self) -> bool:
        """True when anything is not as recorded or as expected, here or in a sub-agent's session."""
        return (bool(self.texts) or bool(self.unmatched) or bool(self.compactions)
                or any(call.differences for call in self.calls) or any(child.changed for child in self.children))

    def to_dict(self) -> JSONObject:
        """``rienda replay --json``: the report, a sub-agent's session's report in ``children``."""
        return {"session_id": self.session_id, "hooks": self.hooks, "changed": self.changed,
                "calls": [call.to_dict() for call in self.calls],
                "texts": [{"recorded": r, "now": n} for r, n in self.texts],
                "unmatched_expectations": self.unmatched, "notes": self.notes,
                "children": [child.to_dict() for child in self.children],
                "agent": self.agent, "parent_call_id": self.parent_call_id, "compactions": self.compactions}

    def lines(self) -> list[str]:
        """The report as text; a sub-agent's report indented under the call that started it."""
        head = f"replayed session {self.session_id} through hooks: {', '.join(self.hooks) or '(none)'}"
        out = [f"sub-agent {self.agent}: {head}" if self.parent_call_id else head]
        if self.expected_from:
            out.append(f"expectations: {self.expected_from}")
        for call in self.calls:
            differences = call.differences
            below = call.child is not None and call.child.changed
            mark = "≠" if differences or below else "="
            same = ": as expected" if call.expectation else ": same as recorded"
            said = ": its sub-agent's replay differs" if below else same
            out.append(f"{mark} {call.label}" + ("" if differences else said))
            out += [f"    {line}" for line in differences]
            if call.child is not None:
                out += [f"    {line}" for line in call.child.lines()]
        for recorded, now in self.texts:
            out.append(f"≠ assistant text now different: {_short(recorded)!r} -> {_short(now)!r}")
        out += [f"≠ {where} matches no call of the session" for where in self.unmatched]
        out += [f"≠ {line}" for line in self.compactions]
        out += [f"note: {note}" for note in self.notes]
        out.append("differences found" if self.changed else "no differences")
        return out


def _by(hook: str, failed: str | None) -> str:
    return f"hook {hook}" + (f", failing closed: {failed}" if failed else "")


def _field_changes(before: JSON, after: JSON) -> str:
    if isinstance(before, dict) and isinstance(after, dict):
        keys = sorted(set(before) | set(after))
        return "; ".join(f"{k}: {before.get(k)!r} -> {after.get(k)!r}" for k in keys if before.get(k) != after.get(k))
    return f"{before!r} -> {after!r}"


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."
