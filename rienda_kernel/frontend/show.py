"""``rienda show``: a saved session as a person reads it."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from ..engine import Message
from .hook_actions import hook_action
from .previews import PREVIEW_LINES, preview
from .terminal import usage_summary

if TYPE_CHECKING:
    from ..engine import LoadedSession, Usage

__all__ = ["parent_line", "print_session", "session_lines"]


def print_session(loaded: LoadedSession, full: bool) -> int:
    """``rienda show``: the header line, the parent's for a sub-agent's session, each line
    of :func:`session_lines` on stdout and its warnings on stderr; exit status 0."""
    header = loaded.header
    print(f"session {header.get('id')}  agent {header.get('agent')}  model {header.get('model')}  "
          f"created {header.get('created')}")
    if parent := parent_line(header):
        print(parent)
    lines, warnings = session_lines(loaded, full=full)
    for warning in loaded.warnings + warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for line in lines:
        print(line)
    return 0


def parent_line(header: dict[str, Any]) -> str | None:
    """For a sub-agent's session, the line naming the session and call that started it."""
    parent = header.get("parent_session_id")
    if not isinstance(parent, str):
        return None
    return (f"sub-agent of session {parent} (call {header.get('parent_call_id')}, depth {header.get('depth')}); "
            f"rienda show {parent} shows its lead")


def session_lines(loaded: LoadedSession, full: bool = False) -> tuple[list[str], list[str]]:
    """The session as a person reads it, in file order (so each run's end follows that
    run's messages), then the usage total; and a warning naming ``file:line`` for each
    line it does not understand (shown without it, never a crash). A tool result shows
    its first lines (JSON pretty-printed) indented under its mark, all of them when
    ``full``; what each hook did is one line (:mod:`rienda_kernel.frontend.hook_actions`)."""
    lines: list[str] = []
    warnings: list[str] = []
    usages: list[Usage | None] = []
    for number, entry in loaded.entries:
        if isinstance(entry, Message):
            if entry.role == "assistant" and "gate" not in entry.meta:  # a gate's call: no model turn
                usages.append(_checked_usage(entry.usage, f"{loaded.path}:{number}", warnings))
            lines += _message_lines(entry, full)
            continue
        try:
            if entry.get("type") == "pin":
                prompt = sum(1 for message in loaded.messages[:int(entry["message"]) + 1] if message.role == "user")
                lines.append(f"-- pinned prompt {prompt}: every compaction keeps it verbatim")
                continue
            line = _compaction_lines(entry, full) if entry.get("type") == "compaction" else _record_line(entry)
        except (KeyError, TypeError, ValueError, AttributeError):
            warnings.append(f"{loaded.path}:{number}: a {entry.get('type')!r} record this version cannot read; left out")
            continue
        if line:
            lines.append(line)
    summary = usage_summary(usages)
    return lines + ([summary] if summary else []), warnings


def _message_lines(message: Message, full: bool) -> list[str]:
    if message.role == "tool":
        return _result_lines(message, full)
    note = "".join(f" ({flag})" for flag in ("interrupted", "error") if message.meta.get(flag))
    lines = [f"{message.role}{note}: {message.text}"]
    if message.thinking:
        lines.append(f"  thinking: {message.thinking}")
    lines += [f"  → {call.name} [{call.id}] {json.dumps(call.arguments, ensure_ascii=False)}" for call in message.tool_calls]
    if message.usage:
        lines.append(f"  usage: {message.usage.input_tokens} in, {message.usage.output_tokens} out")
    return lines


def _result_lines(message: Message, full: bool) -> list[str]:
    """A tool result: one line when it is one line, else its mark and its lines under it."""
    child = message.meta.get("subagent")
    delegated = (f"  (sub-agent {child.get('agent')}, session {child.get('session_id')})"
                 if isinstance(child, dict) else "")
    mark = f"  {'✗' if message.is_error else '←'} {message.name} [{message.tool_call_id}]:"
    shown = preview(message.text, None if full else PREVIEW_LINES, None)
    if len(shown.lines) == 1 and not shown.more:
        return [f"{mark} {shown.lines[0]}{delegated}"]
    more = shown.more_line("--full shows all of it")
    return [mark + delegated, *(f"      {line}".rstrip() for line in shown.lines + ([more] if more else []))]


def _checked_usage(usage: Usage | None, where: str, warnings: list[str]) -> Usage | None:
    """``usage`` when it holds token counts; else None and a warning naming ``where``."""
    if usage is None or all(isinstance(n, int) and not isinstance(n, bool)
                            for n in (usage.input_tokens, usage.output_tokens)):
        return usage
    warnings.append(f"{where}: usage {usage.to_dict()} is not token counts; left out of the total")
    return None


def _compaction_lines(record: dict[str, Any], full: bool) -> str:
    """A ``compaction`` record: what came of it, the tokens before and after, what it pruned
    and folded, which hooks acted; with ``full``, the summary it keeps, under it."""
    outcome, reason = record["outcome"], record["reason"]
    if not isinstance(outcome, str) or not isinstance(reason, str):
        raise ValueError("outcome and reason must be words")
    parts = [f"-- compaction ({reason}): {outcome}"]
    if outcome in ("compacted", "rejected"):
        parts.append(f"{int(record['tokens_before']):,} → {int(record['tokens_after']):,} tokens"
                     + (f" of {int(record['window']):,}" if record.get("window") else ""))
        parts.append(f"{int(record.get('pruned_count') or 0)} tool results pruned, "
                     f"{int(record.get('folded_count') or 0)} messages folded")
    if record.get("by"):
        parts.append(f"by hook {record['by']}")
    parts += [str(acted) for acted in record.get("hooks") or []]
    line = "; ".join(parts)
    summary = record.get("summary") if outcome == "compacted" else None
    if isinstance(summary, str) and summary:
        shown = preview(summary, None if full else 1, None)
        more = shown.more_line("--full shows the whole summary")
        line += "\n" + "\n".join(f"      {text}".rstrip() for text in shown.lines + ([more] if more else []))
    return line


def _record_line(record: dict[str, Any]) -> str | None:
    """One line for a hook decision, a confirm's answer or a run's end (None for records not
    shown); raises KeyError/TypeError/ValueError for one this version cannot read."""
    if record.get("type") == "hook_decision":
        if record["effect"] == "none":
            return None
        if not all(isinstance(record[key], str) for key in ("hook", "point")):
            raise ValueError("hook and point must be names")
        line = hook_action(record)
        if line is None:
            raise ValueError(f"effect {record['effect']!r}")
        depth = f" [depth {record['depth']}]" if record.get("depth") else ""
        return f"    {line}{depth}"
    if record.get("type") == "confirm":
        verdict = "allowed" if record["answer"] is True else "denied"
        return f"    {'✓' if verdict == 'allowed' else '✗'} confirm {str(record['title'])!r}: {verdict} ({record['how']})"
    if record.get("type") == "run_end":
        reason = record["reason"]
        if not isinstance(reason, str):
            raise ValueError(f"reason {reason!r}")
        return f"-- run ended: {reason}" + (f": {record['error']}" if record.get("error") else "")
    return None
