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
    RiendaError,
    RunEndRecord,
    StoppedRecord,
    UnknownRecord,
    pruned_and_folded,
)
from .hook_actions import hook_action
from .previews import PREVIEW_LINES, preview
from .terminal import usage_summary

if TYPE_CHECKING:
    from ..engine import JSON, LoadedSession, Record, Rienda, SessionHeader, ToolCall, Usage

__all__ = ["context_line", "heading_lines", "print_session", "session_lines"]


def print_session(loaded: LoadedSession, full: bool, context: str | None = None) -> int:
    """``rienda show``: the header line, the parent's for a sub-agent's session, what fills
    its next request (``context``: :func:`context_line`), each line of :func:`session_lines`
    on stdout and its warnings on stderr; exit status 0."""
    for line in heading_lines(loaded.header) + ([context] if context else []):
        print(line)
    lines, warnings = session_lines(loaded, full=full)
    for warning in loaded.warnings + warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for line in lines:
        print(line)
    return 0


def context_line(rienda: Rienda, loaded: LoadedSession) -> str | None:
    """What fills the session's next request and what is left of the window, as its agent
    would send it now (MCP servers' tools left out: none is started); None for a gate's
    session (another agent's record: no request of Rienda's); "unknown" with the reason
    when its agent or model cannot be set up."""
    if loaded.header.gate is not None:
        return None
    try:
        return rienda.conversation(session_id=loaded.header.id).context_use(mcp=False).line()
    except RiendaError as exc:
        return f"context: unknown ({exc})"


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
    line it does not understand (shown without it, never a crash). Each tool call is shown
    as ``rienda run`` shows it: its line with the arguments the tool received (after the
    hooks), then what each hook did about it and each confirm it asked (one line each:
    :mod:`rienda_kernel.frontend.hook_actions`), then its result, its first lines (JSON
    pretty-printed) indented under its mark, all of them when ``full``."""
    shown = _Shown(loaded, full)
    for number, entry in loaded.entries:
        shown.add(number, entry)
    return shown.finish()


class _Shown:
    """The lines of :func:`session_lines`, entry by entry. The lines about a call (its
    hooks' actions, its confirms, the notices made while it ran) are held until its result comes, so they go under the
    call's own line: a call's records lie between the result before it and its own."""

    def __init__(self, loaded: LoadedSession, full: bool) -> None:
        self.loaded, self.full = loaded, full
        self.lines: list[str] = []
        self.warnings: list[str] = []
        self.usages: list[Usage | None] = []
        self.calls: list[ToolCall] = []  # the last answer's calls without a result yet, in order
        self.held: dict[str, list[str]] = {}  # call id -> the lines about it so far

    def add(self, number: int, entry: Message | Record) -> None:
        if isinstance(entry, Message):
            self._message(number, entry)
            return
        line = _record_line(entry, self.loaded, self.full)
        if not line:
            return
        call = self._call_of(entry)
        if call is None:
            self.lines.append(line)
        else:
            self.held.setdefault(call.id, []).append(line)

    def finish(self) -> tuple[list[str], list[str]]:
        self._flush_calls()
        summary = usage_summary(self.usages)
        return self.lines + ([summary] if summary else []), self.warnings

    def _message(self, number: int, message: Message) -> None:
        if message.role == "tool":
            call = next((c for c in self.calls if c.id == message.tool_call_id), None)
            if call is not None:
                self.calls.remove(call)
                arguments = call.arguments if message.meta.arguments is None else message.meta.arguments
                self.lines += [_call_line(call, arguments), *self.held.pop(call.id, [])]
            self.lines += _result_lines(message, self.full)
            return
        self._flush_calls()
        if message.role == "assistant" and message.meta.gate is None:  # a gate's call: no model turn
            self.usages.append(_checked_usage(message.usage, f"{self.loaded.path}:{number}", self.warnings))
        self.lines += _message_lines(message)
        self.calls = list(message.tool_calls)

    def _call_of(self, record: Record) -> ToolCall | None:
        """The call a record is about: the one it names, else the first still waiting for
        its result (None: no call is, or the record is about none)."""
        if not self.calls or not isinstance(record, (HookDecision, Confirm, Notify)):
            return None
        named = record.call_id if isinstance(record, HookDecision) else None
        return next((call for call in self.calls if call.id == named), self.calls[0])

    def _flush_calls(self) -> None:
        """The calls left without a result (a run that ended first), with what was held."""
        for call in self.calls:
            self.lines += [_call_line(call, call.arguments), *self.held.pop(call.id, [])]
        self.calls, self.held = [], {}


def _call_line(call: ToolCall, arguments: JSON) -> str:
    return f"  → {call.name} [{call.id}] {json.dumps(arguments, ensure_ascii=False)}"


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
        return f"    {record.mark} confirm {record.title!r}: {record.verdict} ({record.how})"
    if isinstance(record, Notify):  # as the run printed it
        return f"    [{record.source}] notice: {record.title}: {record.body}" + (
            f" [depth {record.depth}]" if record.depth else "")
    if isinstance(record, RunEndRecord):
        return f"-- run ended: {record.reason}" + (f": {record.error}" if record.error else "")
    if isinstance(record, (StoppedRecord, ApprovalRecord, UnknownRecord)):
        return None
    assert_never(record)


def _message_lines(message: Message) -> list[str]:
    """A prompt or an answer (its text, thinking and usage; its calls come after it)."""
    flags = {"interrupted": message.meta.interrupted, "error": message.meta.error}
    note = "".join(f" ({flag})" for flag, on in flags.items() if on)
    lines = [f"{message.role}{note}: {message.text}"]
    if message.thinking:
        lines.append(f"  thinking: {message.thinking}")
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
        parts.append(pruned_and_folded(record.pruned_count, record.folded_count))
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
