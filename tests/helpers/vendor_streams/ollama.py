"""Ollama /api/chat NDJSON lines."""

from __future__ import annotations

from typing import Any

MODEL = "qwen3:0.6b"


def part(content: str = "", **message: Any) -> dict[str, Any]:
    return {"model": MODEL, "created_at": "2026-11-30T08:00:00.000000Z",
            "message": {"role": "assistant", "content": content, **message}, "done": False}


def done(prompt: int = 26, output: int = 9, reason: str = "stop") -> dict[str, Any]:
    return {"model": MODEL, "created_at": "2026-11-30T08:00:01.000000Z", "message": {"role": "assistant", "content": ""},
            "done": True, "done_reason": reason, "total_duration": 812000000, "load_duration": 21000000,
            "prompt_eval_count": prompt, "prompt_eval_duration": 90000000, "eval_count": output,
            "eval_duration": 600000000}


def text_stream(*pieces: str) -> list[dict[str, Any]]:
    return [*(part(p) for p in pieces), done()]


def tool_stream(name: str, arguments: Any, text: str = "") -> list[dict[str, Any]]:
    events = [part(text)] if text else []
    return events + [part("", tool_calls=[{"function": {"name": name, "arguments": arguments}}]), done(40, 12)]
