"""``rienda show``: a saved session as a person reads it."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, assert_never

from ..engine import (
    ApprovalRecord,
    CompactionRecord,
    Confirm,
    HookDecision,
    Message,
    Notify,
    PinRecord,
    RunEndRecord,
    StoppedRecord,
    UnknownRecord,
)
from .hook_actions import hook_action
from .previews import PREVIEW_LINES, preview
from .terminal import usage_summary

if TYPE_CHECKING:
    from ..engine import LoadedSession, Record, SessionHeader, Usage

__all__ = ["heading_lines", "print_session", "session_lines"]


def print_session(loaded: LoadedSession, full: bool) -> int:
    """``rienda show``: the header line, the parent's for a sub-agent's session, each line
    of :func:`session_lines` on stdout and its warnings on stderr; exit status 0."""
    for line in heading_lines(loaded.header):
        print(line)
    lines, warnings = session_lines(loaded, full=full)
    for warning in loaded.warnings + warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for line in lines:
        print(line)
    return 0


def heading_lines(header: SessionHeader) -> list[str]:
    """The session's first line (id, agent, model, created) and, for a sub-agent's, its parent's."""
    lines = [f"session {header.id}  agent {header.agent}  model {header.model}  created {header.created}"]
    parent = _parent_line(header)
    return lines + ([parent] if parent else [])


def _parent_line(header: SessionHeader) -> str | None:
    """For a sub-agent's session, the line naming the session and call that started it."""
    parent = header.parent_session_id
    if parent is None:
        return None
    return (f"sub-agent of session {parent} (call {header.parent_call_id}, depth {header.depth}); "
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
            if entry.role == "assistant" and entry.meta.gate is None:  # a gate's call: no model turn
                usages.append(_checked_usage(entry.usage, f"{loaded.path}:{number}", warnings))
            lines += _message_lines(entry, full)
            continue
        line = _record_line(entry, loaded, full)
        if line:
            lines.append(line)
    summary = usage_summary(usages)
    return lines + ([summary] if summary else []), warnings


def _record_line(record: Record, loaded: LoadedSession, full: bool) -> str | None:
    """One line for a record a person reads (a pin, a compaction, a hook's action, a
    confirm's answer, a notice, a run's end); None for one not shown."""
    if isinstance(record, PinRecord):
        prompt = sum(1 for message in loaded.messages[:record.message + 1] if message.role == "user")
        return f"-- pinned prompt {prompt}: every compaction keeps it verbatim"
    if isinstance(record, CompactionRecord):
        return _compaction_lines(record, full)
    if isinstance(record, HookDecision):
        line = hook_action(record)
        return None if line is None else f"    {line}" + (f" [depth {record.depth}]" if record.depth else "")
    if isinstance(record, Confirm):
        verdict = "allowed" if record.answer else "denied"
        return f"    {'✓' if record.answer else '✗'} confirm {record.title!r}: {verdict} ({record.how})"
    if isinstance(record, Notify):  # as the run printed it
        return f"    [{record.source}] notice: {record.title}: {record.body}" + (
            f" [depth {record.depth}]" if record.depth else "")
    if isinstance(record, RunEndRecord):
        return f"-- run ended: {record.reason}" + (f": {record.error}" if record.error else "")
    if isinstance(record, (StoppedRecord, ApprovalRecord, UnknownRecord)):
        return None
    assert_never(record)


def _message_lines(message: Message, full: bool) -> list[str]:
    if message.role == "tool":
        return _result_lines(message, full)
    flags = {"interrupted": message.meta.interrupted, "error": message.meta.error}
    note = "".join(f" ({flag})" for flag, on in flags.items() if on)
    lines = [f"{message.role}{note}: {message.text}"]
    if message.thinking:
        lines.append(f"  thinking: {message.thinking}")
    lines += [f"  → {call.name} [{call.id}] {json.dumps(call.arguments, ensure_ascii=False)}" for call in message.tool_calls]
    if message.usage:
        lines.append(f"  usage: {message.usage.input_tokens} in, {message.usage.output_tokens} out")
    return lines


def _result_lines(message: Message, full: bool) -> list[str]:
    """A tool result: one line when it is one line, else its mark and its lines under it."""
    link = message.meta.subagent
    delegated = f"  (sub-agent {link.agent}, session {link.session_id})" if link is not None else ""
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


def _compaction_lines(record: CompactionRecord, full: bool) -> str:
    """A ``compaction`` record: what came of it, the tokens before and after, what it pruned
    and folded, which hooks acted; with ``full``, the summary it keeps, under it."""
    parts = [f"-- compaction ({record.reason}): {record.outcome}"]
    if record.outcome in ("compacted", "rejected"):
        parts.append(f"{record.tokens_before:,} → {record.tokens_after:,} tokens"
                     + (f" of {record.window:,}" if record.window else ""))
        parts.append(f"{record.pruned_count} tool results pruned, {record.folded_count} messages folded")
    if record.by:
        parts.append(f"by hook {record.by}")
    parts += record.hooks
    line = "; ".join(parts)
    summary = record.view.summary if record.view is not None else None
    if summary:
        shown = preview(summary, None if full else 1, None)
        more = shown.more_line("--full shows the whole summary")
        line += "\n" + "\n".join(f"      {text}".rstrip() for text in shown.lines + ([more] if more else []))
    return line
