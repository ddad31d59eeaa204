"""What a hook did, as one line, the same in every front end: ``rienda run`` (and the
magics in a terminal), a cell of the Rienda kernel, a sub-agent's box, ``rienda show``.

A decision is a :class:`~rienda_kernel.engine.HookDecision`: the event a run reports, or the
``hook_decision`` record a session saved (the same type). :func:`hook_action` gives:

- a refusal: ``✋ hook guard refused the call: no rm -rf here``;
- a rewrite, naming what it rewrote and each field before → after (values shortened;
  for text fields, which the ledger keeps as sizes only, the sizes):
  ``✎ hook tidy rewrote the call's arguments: command "ls" → "ls -1"``,
  ``✎ hook redact rewrote the result: text 35 → 38 characters``,
  ``✎ hook brief rewrote the model request: system 120 → 131 characters``,
  ``✎ hook shout rewrote the model's answer: text 4 → 4 characters``;
- a hook that threw, with its file:line as the sandbox reported it:
  ``⚠ hook thrower threw in afterToolExecute and was skipped: TypeError: … (at …/index.js:3:10)``;
- a returned value it could not use: ``⚠ hook odd returned what afterToolExecute cannot use;
  ignored: returned string``;
- a hook the run was stopped during: ``⏹ hook loop was stopped in beforeToolExecute after
  4.2 s (the run was stopped)``;

and None for a hook that did nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import assert_never

from ..engine import JSON, HookDecision

__all__ = ["hook_action", "named_by_compaction"]

_SUBJECTS = {
    "beforeToolExecute": "the call's arguments",
    "afterToolExecute": "the result",
    "beforeModelRequest": "the model request",
    "afterModelResponse": "the model's answer",
    "beforeCompact": "the compaction",
    "beforeRun": "the run's context",
    "afterRun": "the prompt the run goes on with",
    "afterCompact": "the compaction's summary",
}
_VALUE_CHARS = 60


def hook_action(decision: HookDecision) -> str | None:
    """``decision`` as one line for a person (see the module docstring); None for "none"."""
    hook, point, effect = decision.hook, decision.point, decision.effect
    if effect == "refused":
        reason = decision.reason or decision.error
        what = {"beforeCompact": "cancelled the compaction", "beforeRun": "refused the run"}.get(point, "refused the call")
        return f"✋ hook {hook} {what}" + (f": {_one_line(reason)}" if reason else "")
    if effect == "rewrote":
        subject = _SUBJECTS.get(point, f"what {point} carries")
        return f"✎ hook {hook} rewrote {subject}: {_changes_text(decision.changes)}"
    if effect == "threw":
        return f"⚠ hook {hook} threw in {point} and was skipped: {_one_line(decision.error or '')}"
    if effect == "invalid":
        return f"⚠ hook {hook} returned what {point} cannot use; ignored: {_one_line(decision.error or '')}"
    if effect == "stopped":
        return f"⏹ hook {hook} was stopped in {point} after {decision.duration_ms / 1000:.1f} s (the run was stopped)"
    if effect == "none":
        return None
    assert_never(effect)


def _changes_text(changes: Mapping[str, JSON]) -> str:
    """Each changed field as ``name before → after`` (``arguments.`` left off a call's
    argument), joined with ``; ``."""
    parts = []
    for name, change in changes.items():
        field = name.removeprefix("arguments.")
        if isinstance(change, Mapping) and "before_chars" in change:
            parts.append(f"{field} {change.get('before_chars')} → {change.get('after_chars')} characters")
        elif isinstance(change, Mapping):
            parts.append(f"{field} {_value(change.get('before'))} → {_value(change.get('after'))}")
        else:
            parts.append(field)
    return "; ".join(parts)


def _value(value: JSON) -> str:
    """A field's value as JSON, on one line, shortened."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _VALUE_CHARS else text[:_VALUE_CHARS - 1] + "…"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def named_by_compaction(decision: HookDecision) -> bool:
    """True for what a ``beforeCompact``/``afterCompact`` hook rewrote or cancelled: the
    compaction's own line names the hooks that acted, so no front end shows it twice."""
    return decision.point in ("beforeCompact", "afterCompact") and decision.effect in ("rewrote", "refused")
