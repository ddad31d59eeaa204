"""The conversation: messages and tool calls as the engine stores and replays them.

Vendor formats are the providers' business; this is the one shape the loop, the session
store and the hooks (``[{role, text}]``) share. ``to_dict``/``from_dict`` are the session
file's JSON form and round-trip exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Message", "ToolCall", "Usage"]


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for. ``arguments`` is the decoded JSON object, or the raw
    text when the model sent something that is not JSON (the tool then gets an error)."""

    id: str
    name: str
    arguments: Any

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        return cls(str(data["id"]), str(data["name"]), data.get("arguments"))


@dataclass(frozen=True)
class Usage:
    """Tokens one model turn used, as the provider reported them."""

    input_tokens: int = 0
    output_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


@dataclass(frozen=True)
class Message:
    """A user prompt, an assistant turn (text, thinking, tool calls), or a tool result.

    A tool result has ``role="tool"``, the ``tool_call_id`` and ``name`` of its call, its
    ``text`` and ``is_error``.
    """

    role: str
    text: str = ""
    thinking: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    usage: Usage | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", text)

    @classmethod
    def tool_result(cls, call: ToolCall, text: str, is_error: bool, meta: dict[str, Any] | None = None) -> Message:
        """``meta`` keeps what replay needs: ``arguments`` when hooks changed what the tool
        received, ``refused_by`` when a hook refused the call."""
        return cls("tool", text, tool_call_id=call.id, name=call.name, is_error=is_error, meta=meta or {})

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "text": self.text}
        if self.thinking:
            data["thinking"] = self.thinking
        if self.tool_calls:
            data["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.role == "tool":
            data.update(tool_call_id=self.tool_call_id, name=self.name, isError=self.is_error)
        if self.usage is not None:
            data["usage"] = self.usage.to_dict()
        if self.meta:
            data["meta"] = self.meta
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        usage = data.get("usage")
        return cls(
            role=str(data["role"]),
            text=str(data.get("text") or ""),
            thinking=str(data.get("thinking") or ""),
            tool_calls=tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ()),
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            is_error=bool(data.get("isError", False)),
            usage=Usage(**usage) if usage else None,
            meta=dict(data.get("meta") or {}),
        )
