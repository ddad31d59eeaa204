"""An OpenAI-wire server on 127.0.0.1 whose answers follow from the request, for the
recording tests: the same request always gets the same answer (its tool-call ids new each
time, as a vendor's are), and it counts what it is asked.

The last message decides: a tool result is answered ``The tool said: RESULT``; a prompt
holding ``python: CODE`` or ``read: PATH`` calls that tool; ``delegate: AGENT: TASK`` calls
``agent``; any other prompt is answered ``You said: PROMPT`` (and, with a system prompt
other than ``Be brief.``, ``(system: SYSTEM)`` after it). Usage: the request's message
count in, the answer's words out.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from .vendor_streams.openai import chunk, tool_stream
from .vendors import fake_openai
from .vendor_wire import ReplayServer

__all__ = ["echo_server", "echo_answer"]


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def _usage(prompt: int, completion: int) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-4o-mini",
            "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                     "total_tokens": prompt + completion}}


def _say(text: str, prompt_tokens: int) -> dict[str, Any]:
    words = text.split(" ")
    pieces = [word + (" " if index < len(words) - 1 else "") for index, word in enumerate(words)]
    return {"events": [chunk({"role": "assistant", "content": ""}), *(chunk({"content": p}) for p in pieces),
                       chunk({}, "stop"), _usage(prompt_tokens, len(words))]}


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"events": tool_stream(f"call_{uuid.uuid4().hex[:10]}", name, json.dumps(arguments))}


def echo_answer(body: dict[str, Any]) -> dict[str, Any]:
    """The reply to ``body`` (see the module docstring)."""
    messages = body["messages"]
    last = messages[-1]
    count = len(messages)
    if last["role"] == "tool":
        return _say(f"The tool said: {_text(last.get('content')).strip()}", count)
    prompt = _text(last.get("content"))
    if "delegate:" in prompt:
        agent, _, task = prompt.split("delegate:", 1)[1].strip().partition(":")
        return _call("agent", {"agent": agent.strip(), "prompt": task.strip()})
    for word, tool, key in (("python:", "python", "code"), ("read:", "read", "path")):
        if word in prompt:
            return _call(tool, {key: prompt.split(word, 1)[1].strip()})
    system = _text(messages[0].get("content")) if messages[0]["role"] == "system" else ""
    extra = f" (system: {system})" if system and system != "Be brief." else ""
    return _say(f"You said: {prompt}{extra}", count)


def echo_server() -> ReplayServer:
    """A started server answering by :func:`echo_answer`; ``.url`` is its base URL (``.../v1``)."""
    server = fake_openai()
    server.fallback = echo_answer
    return server
