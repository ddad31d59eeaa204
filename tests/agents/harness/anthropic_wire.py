"""Anthropic's Messages API as Claude Code (and Copilot CLI with COPILOT_PROVIDER_TYPE=anthropic)
reads it: always streamed, server-sent events ``message_start`` … ``message_stop``."""

from __future__ import annotations

import json
from typing import Any

SHELL_TOOLS = ("Bash", "bash", "shell", "powershell")


def tool_names(body: dict[str, Any]) -> list[str]:
    """The tools the request offers the model."""
    return [tool.get("name", "") for tool in body.get("tools") or []]


def tool_results(body: dict[str, Any]) -> list[str]:
    """The text of every tool result in the conversation (what the model reads of the call)."""
    found = []
    for message in body.get("messages") or []:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result":
                found.append(_text_of(block.get("content")))
    return found


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def shell_call(body: dict[str, Any], command: str) -> tuple[str, dict[str, Any]]:
    """The shell tool the request offers and its arguments for ``command``: fields the
    tool's schema requires besides the command get a short text."""
    tool = next(t for t in body.get("tools") or [] if t.get("name") in SHELL_TOOLS)
    schema = tool.get("input_schema") or {}
    arguments: dict[str, Any] = {"command": command}
    for field in schema.get("required") or []:
        arguments.setdefault(field, "run the test's command")
    return tool["name"], arguments


def _events(model: str, blocks: list[tuple[dict[str, Any], dict[str, Any]]], stop_reason: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "content": [], "model": model,
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}]
    for index, (start, delta) in enumerate(blocks):
        events += [{"type": "content_block_start", "index": index, "content_block": start},
                   {"type": "content_block_delta", "index": index, "delta": delta},
                   {"type": "content_block_stop", "index": index}]
    return events + [{"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                      "usage": {"output_tokens": 5}}, {"type": "message_stop"}]


def tool_use_stream(model: str, call_id: str, name: str, arguments: dict[str, Any]) -> bytes:
    """A streamed answer holding one ``tool_use`` block."""
    return _sse(_events(model, [({"type": "tool_use", "id": call_id, "name": name, "input": {}},
                                 {"type": "input_json_delta", "partial_json": json.dumps(arguments)})], "tool_use"))


def text_stream(model: str, text: str) -> bytes:
    """A streamed answer holding one text block."""
    return _sse(_events(model, [({"type": "text", "text": ""}, {"type": "text_delta", "text": text})], "end_turn"))


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
