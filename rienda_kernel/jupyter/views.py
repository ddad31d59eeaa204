"""The pieces of a run's display in a cell, each one Jupyter display updated in place:
the assistant's message (:class:`MessageView`), a tool's live log (:class:`LogView`), a
tool call with its decisions and result (:class:`CallView`), and the status and usage
lines' bundles."""

from __future__ import annotations

import html
import json
import re
import threading
import time
import uuid

from ..engine import JSON, ContextFill, HookDecision, Usage
from ..frontend.hook_actions import hook_action
from ..frontend.terminal import replay_note
from ..frontend.previews import readable
from .cell import CellTarget

__all__ = ["CallView", "LogView", "MessageView", "compaction_bundle", "markdown_text", "new_id", "status_bundle",
           "usage_bundle"]

_FOLD_LINES = 12
_SHOW_AT_MOST = 10_000
_UPDATE_EVERY = 0.05


class MessageView:
    """One assistant message's display, updated in place as text streams (when ``live``;
    otherwise shown once, final)."""

    def __init__(self, target: CellTarget, live: bool) -> None:
        self.target = target
        self.live = live
        self.display_id = new_id("message")
        self.text: list[str] = []
        self.thinking: list[str] = []
        self._shown = False
        self._last = 0.0

    def add_text(self, text: str) -> None:
        self.text.append(text)
        self._render(final=False)

    def add_thinking(self, text: str) -> None:
        self.thinking.append(text)
        self._render(final=False)

    def finish(self, text: str, thinking: str) -> None:
        self.text, self.thinking = [text], [thinking]
        if text or thinking or self._shown:
            self._render(final=True)

    def _render(self, final: bool) -> None:
        now = time.monotonic()
        if not final and (not self.live or (self._shown and now - self._last < _UPDATE_EVERY)):
            return
        self._last = now
        text, thinking = "".join(self.text), "".join(self.thinking)
        markdown = ""
        if thinking:
            markdown += (f"<details><summary><i>thinking</i></summary>\n\n<span style='opacity:0.6'>"
                         f"{html.escape(thinking)}</span>\n\n</details>\n\n")
        markdown += text if final else text + " ▍"
        bundle = {"text/plain": text, "text/markdown": markdown}
        self.target.display(self.display_id, bundle, update=self._shown)
        self._shown = True


class LogView:
    """``ctx.log`` lines from one source, in a row. The first lines are plain stream output
    (as they come); past :data:`_FOLD_LINES`, the rest go to one display showing the last
    lines, the earlier ones folded above them: updated in place when ``live`` (at most every
    :data:`_UPDATE_EVERY` seconds, once more after the last line, and at once on
    :meth:`flush`), else shown once, when the lines end."""

    def __init__(self, target: CellTarget, live: bool, source: str) -> None:
        self.target = target
        self.live = live
        self.source = source
        self.display_id = new_id("log")
        self.lines: list[str] = []
        self._shown = False
        self._last = 0.0
        self._lock = threading.Lock()
        self._trailing: threading.Timer | None = None

    def add(self, text: str) -> None:
        line = f"[{self.source}] {text}"
        with self._lock:
            self.lines.append(line)
            if len(self.lines) <= _FOLD_LINES:
                self.target.stream("stdout", line + "\n")
            elif self.live and time.monotonic() - self._last >= _UPDATE_EVERY:
                self._render()
            elif self.live and self._trailing is None:
                self._trailing = threading.Timer(_UPDATE_EVERY, self._render_trailing)
                self._trailing.daemon = True
                self._trailing.start()

    def finish(self) -> None:
        with self._lock:
            if self._trailing is not None:
                self._trailing.cancel()
            if len(self.lines) > _FOLD_LINES:
                self._render()

    def flush(self) -> None:
        """Show now the lines an update held back (before the run blocks on a confirm)."""
        with self._lock:
            if self._trailing is not None:
                self._trailing.cancel()
                self._trailing = None
                self._render()

    def _render_trailing(self) -> None:
        with self._lock:
            self._trailing = None
            self._render()

    def _render(self) -> None:
        self._last = time.monotonic()
        later = self.lines[_FOLD_LINES:]
        earlier, last = later[:-_FOLD_LINES], later[-_FOLD_LINES:]
        plain = "\n".join(([f"… {len(earlier)} more lines"] if earlier else []) + last)
        markup = ""
        if earlier:
            markup = (f"<details><summary>{len(earlier)} more lines</summary>"
                      f"<pre style='margin: 0'>{html.escape(chr(10).join(earlier))}</pre></details>")
        markup += f"<pre style='margin: 0'>{html.escape(chr(10).join(last))}</pre>"
        self.target.display(self.display_id, {"text/plain": plain, "text/html": markup}, update=self._shown)
        self._shown = True


class CallView:
    """One tool call's display: arguments, hook effects, then the result."""

    def __init__(self, target: CellTarget, name: str, arguments: JSON, refused_by: str | None) -> None:
        self.target = target
        self.display_id = new_id("tool")
        self.name = name
        self.arguments = arguments
        self.refused_by = refused_by
        self.notes: list[str] = []
        self.after_notes: list[str] = []
        self._shown = False

    def add_decision(self, decision: HookDecision) -> None:
        """What a hook did to this call (its arguments) or to its result, as one line."""
        line = hook_action(decision)
        if line is not None:
            (self.after_notes if decision.point == "afterToolExecute" else self.notes).append(line)

    def result(self, text: str, is_error: bool) -> None:
        """The result, JSON pretty-printed; a long one folded behind its first lines."""
        mark = f"✗ {self.name} failed" if is_error else f"← {self.name}"
        text = readable(text)
        notes = "".join(f"\n\n- {markdown_text(note)}" for note in self.after_notes)
        plain = "".join(f"\n  {note}" for note in self.after_notes)
        self.target.display(new_id("result"), {"text/plain": f"{mark}: {_shortened(text)}{plain}",
                                                "text/markdown": _folded(mark, text) + notes})

    def render(self) -> None:
        code = _python_code(self.name, self.arguments)
        if code is not None:  # the notebook's python tool: its code as code
            fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", code)), default=0))
            lines = [f"🔧 **python**\n\n{fence}python\n{code}\n{fence}"]
            plain = ["tool python", *(f"    {line}" for line in code.splitlines())]
        else:
            arguments = json.dumps(self.arguments, ensure_ascii=False)
            lines = [f"🔧 **{markdown_text(self.name)}** `{arguments}`"]
            plain = [f"tool {self.name} {arguments}"]
        lines += [f"- {markdown_text(note)}" for note in self.notes]
        plain += [f"  {note}" for note in self.notes]
        self.target.display(self.display_id, {"text/plain": "\n".join(plain), "text/markdown": "\n\n".join(lines)},
                            update=self._shown)
        self._shown = True


def _python_code(name: str, arguments: object) -> str | None:
    """The code of a ``python`` tool call (arguments ``{code}`` only), else None."""
    if name == "python" and isinstance(arguments, dict) and set(arguments) == {"code"} \
            and isinstance(arguments["code"], str):
        return arguments["code"].rstrip("\n")
    return None


def _shortened(text: str) -> str:
    """Very long text in part (the model read all of it; the notebook need not store it all)."""
    if len(text) <= _SHOW_AT_MOST:
        return text
    return f"{text[:_SHOW_AT_MOST]}… ({len(text) - _SHOW_AT_MOST:,} more characters not shown)"


def _folded(label: str, text: str) -> str:
    """A result as a code block; long ones folded behind their first lines, and very long
    ones shown in part (the model read all of it; the notebook need not store it all)."""
    lines = text.splitlines() or [""]
    if len(lines) <= _FOLD_LINES and len(text) <= 2000:
        return f"{label}:\n\n```\n{text}\n```"
    head = "\n".join(line[:200] for line in lines[:3])
    shown = text[:_SHOW_AT_MOST]
    rest = "" if len(shown) == len(text) else f"\n\n*({len(text) - len(shown):,} more characters not shown)*"
    return (f"{label} ({len(lines)} lines, {len(text):,} characters):\n\n```\n{head}\n```\n\n"
            f"<details><summary>show more</summary>\n\n<pre>{html.escape(shown)}</pre>{rest}\n\n</details>")


def status_bundle(what: str, elapsed: float, tokens: int, context: ContextFill | None = None) -> dict[str, str]:
    """The live status line; ``context``: the fill after the last model turn (a
    ``message`` event's), shown as ``context 61 % of 8,192`` when its window is known."""
    fill = context.line() if context else ""
    line = f"⏳ {what} · {elapsed:.1f} s · ~{tokens} tokens" + (f" · {fill}" if fill else "")
    return {"text/plain": line, "text/markdown": line}


def compaction_bundle(message: str) -> dict[str, str]:
    """A compaction (or one that did not happen) as one line: the engine's ``message``
    (tokens before → after, what was pruned and folded, the hooks that acted)."""
    return {"text/plain": f"🗜 {message}", "text/markdown": f"<sub>🗜 {markdown_text(message)}</sub>"}


def usage_bundle(usage: list[dict[str, int] | None], elapsed: float | None,
                 context: ContextFill | None = None, session_id: str | None = None, replayed: int = 0) -> dict[str, str]:
    """The line a run's status ends as, as ``rienda run`` ends: the run's session, the
    tokens the provider reported for its model turns (``usage``, one per turn; None: a turn
    it reported nothing for, and when none did, ``usage: none reported by the model (N model
    turns)`` as the CLI says it), the time (None: not shown, as in a batch run, whose saved
    notebook changes only with what the run did), and how full the model's window is
    (``context``: a run_end event's, when its window is known). ``{"text/plain": ""}`` when
    there is nothing to say (a run that never started).

    ``replayed``: how many of the model turns (the first ones) a recording answered: the line
    says so after the tokens (``(replayed: 0 spent now)``, :func:`replay_note`), words that
    notebooks/sanitize.cfg's ``recordings`` rule takes out, so a replay compares equal to the
    recorded run under nbval."""
    reported = [u for u in usage if u]
    note = replay_note([Usage.from_dict(u) if u else None for u in usage], replayed) if replayed else ""
    parts = [f"session {session_id}"] if session_id else []
    if reported:
        spent = sum(u.get("input_tokens", 0) for u in reported), sum(u.get("output_tokens", 0) for u in reported)
        turns = f" over {len(usage)} model turns" if len(usage) > 1 else ""
        missing = len(usage) - len(reported)
        parts.append(f"tokens: {spent[0]:,} in · {spent[1]:,} out{turns}"
                     + (f" ({missing} reported none)" if missing else "") + note)
    elif usage:
        parts.append(f"usage: none reported by the model ({len(usage)} model turn{'s' if len(usage) != 1 else ''})"
                     + note)
    if parts and elapsed is not None:
        parts.append(f"{elapsed:.1f} s")
    if context and context.line():
        parts.append(context.line())
    line = " · ".join(parts)
    return {"text/plain": line, "text/markdown": f"<sub>{line}</sub>"} if line else {"text/plain": ""}


def markdown_text(text: str) -> str:
    """``text`` on one line, shown as it is in Markdown (no emphasis, code or table)."""
    return re.sub(r"([\\`*_|<>\[\]])", r"\\\1", text.replace("\n", " "))


def new_id(kind: str) -> str:
    return f"rienda-{kind}-{uuid.uuid4().hex[:12]}"
