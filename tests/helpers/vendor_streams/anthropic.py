"""Anthropic Messages API stream events (``event:``/``data:`` pairs once served)."""

from __future__ import annotations

from typing import Any

MODEL = "claude-sonnet-4-5"


def start(input_tokens: int = 12, cache_read: int = 0) -> dict[str, Any]:
    return {"type": "message_start", "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "content": [], "model": MODEL,
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": cache_read}}}


def block(index: int, content: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": content}


def delta(index: int, **fields: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": fields}


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def end(reason: str = "end_turn", output_tokens: int = 7) -> list[dict[str, Any]]:
    return [{"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None},
             "usage": {"output_tokens": output_tokens}}, {"type": "message_stop"}]


def text_stream(*pieces: str, input_tokens: int = 12) -> list[dict[str, Any]]:
    return [start(input_tokens), block(0, {"type": "text", "text": ""}), {"type": "ping"},
            *(delta(0, type="text_delta", text=p) for p in pieces), stop(0), *end()]


def tool_stream(call_id: str, name: str, *pieces: str, text: str = "", thinking: str = "",
                signature: str = "") -> list[dict[str, Any]]:
    events, index = [start(30)], 0
    if thinking:
        events += [block(0, {"type": "thinking", "thinking": "", "signature": ""}),
                   delta(0, type="thinking_delta", thinking=thinking),
                   delta(0, type="signature_delta", signature=signature), stop(0)]
        index = 1
    if text:
        events += [block(index, {"type": "text", "text": ""}), delta(index, type="text_delta", text=text), stop(index)]
        index += 1
    events += [block(index, {"type": "tool_use", "id": call_id, "name": name, "input": {}}),
               *(delta(index, type="input_json_delta", partial_json=p) for p in pieces), stop(index)]
    return events + end("tool_use", 20)

