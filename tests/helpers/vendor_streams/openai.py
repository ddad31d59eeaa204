"""OpenAI Chat Completions stream chunks (model gpt-4o-mini)."""

from __future__ import annotations

from typing import Any


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def usage(prompt: int, completion: int) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-4o-mini",
            "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                     "total_tokens": prompt + completion}}


def text_stream(*pieces: str) -> list[dict[str, Any]]:
    return [chunk({"role": "assistant", "content": ""}), *(chunk({"content": p}) for p in pieces),
            chunk({}, "stop"), usage(10, len(pieces))]


def tool_stream(call_id: str, name: str, *argument_pieces: str, text: str = "") -> list[dict[str, Any]]:
    events = [chunk({"role": "assistant", "content": text or None})]
    events.append(chunk({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                         "function": {"name": name, "arguments": ""}}]}))
    events += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in argument_pieces]
    return events + [chunk({}, "tool_calls"), usage(20, 5)]
