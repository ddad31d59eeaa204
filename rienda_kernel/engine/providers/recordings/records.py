"""A recording's file: one JSON object a line, read by one parser and written by one writer.

    {"kind": "recording", "format": 1}
    {"kind": "window", "model": "local/smollm2", "tokens": 4096, "source": "server"}
    {"kind": "exchange", "request": {...the request's form...}, "answer": [{"thinking": "..."},
     {"text": "..."}, {"tool_call": {"id": ..., "name": ..., "arguments": ...}}], "usage": {...},
     "hooks": ["guard"], "agent_system": "..."}

An exchange is one model request (its form, :mod:`.canonical`) and what the model streamed
back: text, thinking and tool calls in the order they came (adjacent pieces of one kind
joined), the vendor state to send back, and the usage the live call reported. ``hooks``
names the hooks that ran on the request, and ``agent_system`` is the agent's own system
prompt when a hook changed it, so a later run can say which hook a difference comes from.
An exchange that goes on from an earlier one (the same conversation's next request) names it
in ``base`` (``{"exchange": N, "messages": M}``: its number in the file and how many of its
first messages this request repeats) and holds only the messages it adds, and only the
fields (system prompt, tools, options) that differ from it: each line shows what is new.
A window line is what a model's context window was found to be (``tokens`` null: unknown),
so a replay shows the same fill without asking a server. Everything written is scrubbed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ...common.json_value import JSON, JSONObject
from ...errors import ConfigError
from ...secrets import scrub
from ...sessions.messages import ToolCall, Usage
from ..base import TextChunk, ThinkingChunk, ToolCallChunk, VendorStateChunk
from ..window import Window
from .canonical import form_key

__all__ = ["FORMAT", "Answered", "RecordedExchange", "RecordedWindow", "header_line", "joined", "line_of", "read_recording"]

FORMAT = 1

Answered = TextChunk | ThinkingChunk | ToolCallChunk | VendorStateChunk  # what an exchange replays, in order


@dataclass(frozen=True)
class RecordedExchange:
    """One model request and its answer (see the module docstring); ``key``: its form's digest."""

    request: JSONObject
    answer: tuple[Answered, ...]
    usage: Usage | None
    hooks: tuple[str, ...] = ()
    agent_system: str | None = None  # the agent's system prompt, when the hooks made the request's another

    @property
    def key(self) -> str:
        return form_key(self.request)

    def to_json(self, base: tuple[int, RecordedExchange, int] | None = None) -> JSONObject:
        """The line; with ``base`` (an earlier exchange's number, that exchange, and how many
        of its first messages this request repeats), only what this request adds to it:
        those messages and every field equal to the base's are left out."""
        request = self.request
        data: JSONObject = {"kind": "exchange"}
        if base is not None:
            number, earlier, shared = base
            messages = request.get("messages")
            kept = {key: value for key, value in request.items()
                    if key in ("model", "purpose") or (key != "messages" and earlier.request.get(key) != value)}
            request = {**kept, "messages": messages[shared:] if isinstance(messages, list) else []}
            data["base"] = {"exchange": number, "messages": shared}
        data.update({"request": request, "answer": [_part(p) for p in self.answer]})
        if self.usage is not None:
            data["usage"] = self.usage.to_dict()
        if self.hooks:
            data["hooks"] = list(self.hooks)
        if self.agent_system is not None:
            data["agent_system"] = self.agent_system
        return data


@dataclass(frozen=True)
class RecordedWindow:
    """A model's context window as it was found when recorded (None: unknown)."""

    model: str
    window: Window | None

    def to_json(self) -> JSONObject:
        window = self.window
        return {"kind": "window", "model": self.model, "tokens": window.tokens if window else None,
                "source": window.source if window else None}


def joined(parts: list[Answered]) -> tuple[Answered, ...]:
    """``parts`` with adjacent text (or thinking) pieces joined into one."""
    out: list[Answered] = []
    for part in parts:
        last = out[-1] if out else None
        if isinstance(part, TextChunk) and isinstance(last, TextChunk):
            out[-1] = TextChunk(last.text + part.text)
        elif isinstance(part, ThinkingChunk) and isinstance(last, ThinkingChunk):
            out[-1] = ThinkingChunk(last.text + part.text)
        else:
            out.append(part)
    return tuple(out)


def _part(part: Answered) -> JSONObject:
    if isinstance(part, TextChunk):
        return {"text": part.text}
    if isinstance(part, ThinkingChunk):
        return {"thinking": part.text}
    if isinstance(part, ToolCallChunk):
        return {"tool_call": part.call.to_dict()}
    return {"vendor": dict(part.state)}


def header_line() -> str:
    return line_of({"kind": "recording", "format": FORMAT})


def line_of(data: JSONObject) -> str:
    """One line of the file: ``data`` scrubbed, as JSON, with its newline."""
    return json.dumps(scrub(data), ensure_ascii=False) + "\n"


def read_recording(path: Path, shown: str) -> tuple[list[RecordedExchange], list[RecordedWindow]]:
    """The exchanges and windows in ``path`` (none when it does not exist); ConfigError
    naming ``shown`` (the file as the user wrote it) and the line for what cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [], []
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{shown}: the recording cannot be read: {exc}") from exc
    exchanges: list[RecordedExchange] = []
    windows: list[RecordedWindow] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{shown}:{number}"
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"{where}: not a line of a recording (not JSON: {exc})") from exc
        kind = data.get("kind") if isinstance(data, dict) else None
        try:
            if kind == "exchange":
                exchanges.append(_exchange(_whole(data, exchanges)))
            elif kind == "window":
                windows.append(_window(data))
            elif kind == "recording":
                if data.get("format") != FORMAT:
                    raise ValueError(f"format {data.get('format')!r}: this Rienda reads format {FORMAT}")
            else:
                raise ValueError(f"unknown kind {kind!r} (exchange, window, recording)")
        except (ValueError, TypeError, KeyError) as exc:
            raise ConfigError(f"{where}: {exc}") from exc
    return exchanges, windows


def _whole(data: JSONObject, earlier: list[RecordedExchange]) -> JSONObject:
    """An exchange line with its ``base`` resolved: the whole request it stands for."""
    base = data.get("base")
    if base is None:
        return data
    number, shared = (base.get("exchange"), base.get("messages")) if isinstance(base, dict) else (None, None)
    if not isinstance(number, int) or not isinstance(shared, int) or not 1 <= number <= len(earlier):
        raise ValueError(f"base must name an earlier exchange (1 to {len(earlier)}) and a count of its messages")
    before = earlier[number - 1].request
    request = data.get("request")
    before_messages = before.get("messages")
    if not isinstance(request, dict) or not isinstance(before_messages, list) or not 0 <= shared <= len(before_messages):
        raise ValueError(f"base: exchange {number} has no {shared} messages to repeat")
    tail = request.get("messages")
    whole = {**before, **request, "messages": before_messages[:shared] + (tail if isinstance(tail, list) else [])}
    return {**data, "request": whole}


def _exchange(data: JSONObject) -> RecordedExchange:
    request = data.get("request")
    if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
        raise ValueError("an exchange's request must be an object with messages")
    answer = data.get("answer")
    if not isinstance(answer, list):
        raise ValueError("an exchange's answer must be a list")
    usage = data.get("usage")
    hooks = data.get("hooks") or []
    if not isinstance(hooks, list) or not all(isinstance(h, str) for h in hooks):
        raise ValueError("hooks must be a list of names")
    system = data.get("agent_system")
    return RecordedExchange(request, tuple(_answered(part) for part in answer), None if usage is None else Usage.from_dict(usage),
                    tuple(hooks), system if isinstance(system, str) else None)


def _answered(part: JSON) -> Answered:
    if isinstance(part, dict) and len(part) == 1:
        (kind, value), = part.items()
        if kind in ("text", "thinking") and isinstance(value, str):
            return TextChunk(value) if kind == "text" else ThinkingChunk(value)
        if kind == "tool_call":
            return ToolCallChunk(ToolCall.from_dict(value))
        if kind == "vendor" and isinstance(value, dict):
            return VendorStateChunk(value)
    raise ValueError(f"an answer's part must be one of text, thinking, tool_call, vendor: got {json.dumps(part)[:80]}")


def _window(data: JSONObject) -> RecordedWindow:
    model, tokens, source = data.get("model"), data.get("tokens"), data.get("source")
    if not isinstance(model, str):
        raise ValueError("a window line names its model")
    if tokens is None:
        return RecordedWindow(model, None)
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens <= 0 or not isinstance(source, str):
        raise ValueError("a window's tokens must be a whole number > 0, with its source")
    return RecordedWindow(model, Window(tokens, source))
