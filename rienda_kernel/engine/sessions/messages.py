"""The conversation: messages and tool calls as the engine stores and replays them.

Vendor formats are the providers' business; this is the one shape the loop, the session
store and the hooks (``[{role, text}]``) share. ``to_dict``/``from_dict`` are the session
file's JSON form and round-trip exactly; ``from_dict`` checks every field and raises
``ValueError`` naming the first one missing or of the wrong type, so a reader can skip the
line instead of building a message that breaks later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ROLES", "Message", "ToolCall", "Usage"]

ROLES = ("user", "assistant", "tool")


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
    def from_dict(cls, data: Any) -> ToolCall:
        """ValueError unless ``data`` is an object with a string ``id`` and ``name``."""
        if not isinstance(data, dict):
            raise ValueError(f"a tool call must be an object, got {_kind(data)}")
        return cls(_get(data, "id", str), _get(data, "name", str), data.get("arguments"))


@dataclass(frozen=True)
class Usage:
    """Tokens one model turn used, as the provider reported them."""

    input_tokens: int = 0
    output_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}

    @classmethod
    def from_dict(cls, data: Any) -> Usage:
        """ValueError unless ``data`` is an object whose counts are whole numbers >= 0
        (a count left out is 0; other keys are ignored)."""
        if not isinstance(data, dict):
            raise ValueError(f"'usage' must be an object, got {_kind(data)}")
        counts = {}
        for key in ("input_tokens", "output_tokens"):
            value = data.get(key, 0)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"'usage.{key}' must be a whole number >= 0, got {value!r:.40}")
            counts[key] = value
        return cls(**counts)


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
        received, ``refused_by`` when a hook refused the call, ``saw`` what
        ``afterToolExecute`` was given (:mod:`.seen`), ``run_ended`` for a call whose run
        ended before it finished (:mod:`.pairing`), ``result_unseen`` for a call a gate let
        another agent run (:mod:`..gate.record`: no result was seen)."""
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
        """The message ``to_dict`` wrote; ValueError naming the first bad field."""
        fast = _as_written(data)
        if fast is not None:
            return fast
        role = _get(data, "role", str)
        if role not in ROLES:
            raise ValueError(f"'role' must be one of {', '.join(ROLES)}, got {role!r:.40}")
        calls = _get(data, "tool_calls", list, [])
        usage = data.get("usage")
        return cls(
            role=role,
            text=_get(data, "text", str, ""),
            thinking=_get(data, "thinking", str, ""),
            tool_calls=tuple(ToolCall.from_dict(c) for c in calls),
            tool_call_id=_get(data, "tool_call_id", str, None if role != "tool" else _REQUIRED),
            name=_get(data, "name", str, None),
            is_error=_get(data, "isError", bool, False),
            usage=None if usage is None else Usage.from_dict(usage),
            meta=_get(data, "meta", dict, {}),
        )


_REQUIRED = object()


_BLANK: dict[str, Any] = {"role": None, "text": None, "thinking": "", "tool_calls": (), "tool_call_id": None,
                          "name": None, "is_error": False, "usage": None, "meta": None}  # every field, in order


def _as_written(data: dict[str, Any]) -> Message | None:
    """The message, when ``data`` is what ``to_dict`` (and the writer) make: each field of
    its type, tool calls of two strings and arguments; the same message the field-by-field
    checks of ``from_dict`` would make. None for anything else, which those checks then
    read (and name). Resuming a long session reads thousands: its hot path, so a line of
    just ``type``, ``time``, ``role`` and ``text`` (a prompt, a plain answer) is told by
    its length alone."""
    role, text = data.get("role"), data.get("text")
    if type(text) is not str or role not in ROLES:
        return None
    fields = _BLANK.copy()  # a copy of a dict is cheaper than building one key by key
    fields["role"], fields["text"] = role, text
    if len(data) == 2 + ("type" in data) + ("time" in data):  # nothing more
        if role == "tool":
            return None
        fields["meta"] = {}
        return _made(Message, fields)
    return _more_written(data, role, fields)


def _more_written(data: dict[str, Any], role: str, fields: dict[str, Any]) -> Message | None:
    """:func:`_as_written` for a line with more than role and text: ``fields`` filled in
    from the optional keys, or None at the first one that is not as written."""
    get = data.get
    thinking, calls, usage, meta = get("thinking"), get("tool_calls"), get("usage"), get("meta")
    if thinking is not None:
        if type(thinking) is not str:
            return None
        fields["thinking"] = thinking
    if meta is not None and type(meta) is not dict:
        return None
    fields["meta"] = {} if meta is None else meta
    if calls is not None:
        made = _calls_written(calls)
        if made is None:
            return None
        fields["tool_calls"] = made
    if usage is not None:
        if type(usage) is not dict:
            return None
        counts = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
        if type(counts[0]) is not int or type(counts[1]) is not int or counts[0] < 0 or counts[1] < 0:
            return None
        fields["usage"] = _made(Usage, {"input_tokens": counts[0], "output_tokens": counts[1]})
    call_id, name, is_error = get("tool_call_id"), get("name"), get("isError", False)
    if role != "tool":
        return _made(Message, fields) if call_id is None and name is None and is_error is False else None
    if type(call_id) is not str or (name is not None and type(name) is not str) or type(is_error) is not bool:
        return None
    fields["tool_call_id"], fields["name"], fields["is_error"] = call_id, name, is_error
    return _made(Message, fields)


def _calls_written(calls: Any) -> tuple[ToolCall, ...] | None:
    """The tool calls, when ``calls`` is a list of objects with a string ``id`` and ``name``."""
    if type(calls) is not list:
        return None
    made = []
    for call in calls:
        if type(call) is not dict:
            return None
        call_id, name = call.get("id"), call.get("name")
        if type(call_id) is not str or type(name) is not str:
            return None
        made.append(_made(ToolCall, {"id": call_id, "name": name, "arguments": call.get("arguments")}))
    return tuple(made)


def _made(cls: type, fields: dict[str, Any]) -> Any:
    """An instance of the frozen dataclass ``cls`` with ``fields`` (every field, checked by
    the caller), without its ``__init__``: a frozen dataclass sets each field through
    ``object.__setattr__``, a third of reading a long session."""
    made = object.__new__(cls)
    object.__setattr__(made, "__dict__", fields)
    return made


def _get(data: dict[str, Any], key: str, kind: type, default: Any = _REQUIRED) -> Any:
    """``data[key]`` checked to be a ``kind``; ``default`` when absent or null (unless required)."""
    value = data.get(key)
    if type(value) is kind:  # what json.loads makes: the common case, checked first
        return value
    if value is None:
        if default is _REQUIRED:
            raise ValueError(f"{key!r} is missing")
        return default
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ValueError(f"{key!r} must be {_kind(kind())}, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)
