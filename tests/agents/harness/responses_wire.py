"""OpenAI's Responses API, streamed, as Codex reads it (``wire_api = "responses"``): its
shell tool is a function ``exec_command`` taking ``{cmd}`` (older builds: ``shell``, ``{command: [argv]}``)."""

from __future__ import annotations

import json
from typing import Any

RESULT_TYPES = ("function_call_output", "custom_tool_call_output")


def tool_names(body: dict[str, Any]) -> list[str]:
    """The tools the request offers the model (function tools by name, others by type)."""
    return [tool.get("name") or tool.get("type", "") for tool in body.get("tools") or []]


def tool_results(body: dict[str, Any]) -> list[str]:
    """The text of every tool output in the conversation (what the model reads of the call)."""
    found = []
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") in RESULT_TYPES:
            output = item.get("output")
            found.append(output if isinstance(output, str) else json.dumps(output))
    return found


def shell_call(body: dict[str, Any], command: str) -> tuple[str, dict[str, Any]]:
    """The shell tool the request offers and its arguments for ``command``."""
    names = tool_names(body)
    if "exec_command" in names:
        return "exec_command", {"cmd": command}
    return "shell", {"command": ["bash", "-lc", command]}


def _stream(model: str, item: dict[str, Any]) -> bytes:
    response = {"id": "resp_fake", "object": "response", "created_at": 0, "model": model, "status": "in_progress",
                "output": []}
    done = dict(response, status="completed", output=[item], usage={
        "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15})
    events = [{"type": "response.created", "response": response},
              {"type": "response.output_item.added", "output_index": 0, "item": item},
              {"type": "response.output_item.done", "output_index": 0, "item": item},
              {"type": "response.completed", "response": done}]
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def tool_use_stream(model: str, call_id: str, name: str, arguments: dict[str, Any]) -> bytes:
    """A streamed response whose one output item is a function call."""
    return _stream(model, {"type": "function_call", "id": "fc_fake", "call_id": call_id, "name": name,
                           "arguments": json.dumps(arguments), "status": "completed"})


def text_stream(model: str, text: str) -> bytes:
    """A streamed response whose one output item is an assistant message."""
    return _stream(model, {"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed",
                           "content": [{"type": "output_text", "text": text, "annotations": []}]})
