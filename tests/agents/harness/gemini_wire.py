"""Gemini's ``streamGenerateContent?alt=sse`` (and plain ``generateContent``) as Gemini CLI
reads it: each event a ``GenerateContentResponse``; the shell tool is ``run_shell_command``."""

from __future__ import annotations

import json
from typing import Any


def _declarations(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [decl for tool in body.get("tools") or [] for decl in tool.get("functionDeclarations") or []]


def tool_names(body: dict[str, Any]) -> list[str]:
    """The functions the request offers the model."""
    return [decl.get("name", "") for decl in _declarations(body)]


def tool_results(body: dict[str, Any]) -> list[str]:
    """Every function response in the conversation, as JSON text (what the model reads)."""
    return [json.dumps(part["functionResponse"].get("response")) for content in body.get("contents") or []
            for part in content.get("parts") or [] if "functionResponse" in part]


def shell_call(body: dict[str, Any], command: str) -> tuple[str, dict[str, Any]]:
    """The shell tool and its arguments for ``command``."""
    return "run_shell_command", {"command": command, "description": "run the test's command"}


def _response(model: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": model}


def tool_use_stream(model: str, call_id: str, name: str, arguments: dict[str, Any]) -> bytes:
    """One event holding a function call."""
    return _sse(_response(model, [{"functionCall": {"id": call_id, "name": name, "args": arguments}}]))


def text_stream(model: str, text: str) -> bytes:
    """One event holding the final text."""
    return _sse(_response(model, [{"text": text}]))


def text_json(model: str, text: str) -> bytes:
    """A non-streamed ``generateContent`` answer."""
    return json.dumps(_response(model, [{"text": text}])).encode()


def _sse(event: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(event)}\r\n\r\n".encode()
