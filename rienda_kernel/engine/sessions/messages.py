"""The conversation: messages and tool calls as the engine stores and replays them.

Vendor formats are the providers' business; this is the one shape the loop, the session
store and the hooks (``[{role, text}]``) share. ``to_dict``/``from_dict`` are the session
file's JSON form and round-trip exactly; ``from_dict`` checks every field and raises
``ValueError`` naming the first one missing or of the wrong type, so a reader can skip the
line instead of building a message that breaks later.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from typing import Literal, TypeVar

from ..common.json_value import JSON, JSONObject

__all__ = ["EMPTY_META", "ROLES", "Message", "MessageMeta", "Role", "SubagentLink", "ToolCall", "Usage"]

Role = Literal["user", "assistant", "tool"]
ROLES: tuple[Role, ...] = ("user", "assistant", "tool")


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for. ``arguments`` is the decoded JSON object, or the raw
    text when the model sent something that is not JSON (the tool then gets an error)."""

    id: str
    name: str
    arguments: JSON

    def to_dict(self) -> JSONObject:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: JSON) -> ToolCall:
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
    def from_dict(cls, data: JSON) -> Usage:
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


_Check = Callable[[JSON], bool]


def _of(kind: type) -> _Check:
    return lambda value: type(value) is kind


def _is_link(value: JSON) -> bool:
    return isinstance(value, dict) and isinstance(value.get("agent"), str) and isinstance(value.get("session_id"), str)


_META_CHECKS: dict[str, _Check] = {  # each key of MessageMeta: whether a value read is of its type
    "vendor": _of(dict), "interrupted": _of(bool), "error": _of(bool), "withheld": _of(str), "saw": _of(dict),
    "arguments": lambda value: value is not None, "refused_by": _of(str), "run_ended": _of(bool),
    "result_unseen": _of(bool), "subagent": _is_link, "gate": _of(dict), "compaction": _of(bool),
    "answers": lambda value: type(value) is int and value >= 0,
}


@dataclass(frozen=True)
class SubagentLink:
    """The sub-agent run an ``agent`` call started: its agent and the session it saved."""

    agent: str
    session_id: str

    def to_dict(self) -> JSONObject:
        return {"agent": self.agent, "session_id": self.session_id}


@dataclass(frozen=True)
class MessageMeta:
    """What the session keeps beside a message, for resume, replay and ``rienda show``:

    - ``vendor``: the provider's own data the next request must send back (signed thinking);
    - ``interrupted`` / ``error``: a partial answer a stop or a failure cut short;
      ``withheld``: why nothing of an answer was saved (a stop during its review);
    - ``saw``: what a rewriting hook point was given (:mod:`.seen`);
    - ``arguments``: what the tool received, when hooks rewrote the model's arguments;
    - ``refused_by``: the hook that refused the call; ``run_ended``: a call whose run ended
      before it finished (:mod:`.pairing`); ``result_unseen``: a call a gate let another
      agent run (no result was seen);
    - ``subagent``: the sub-agent run an ``agent`` call started;
    - ``gate``: a gate's call: the other agent, its event, tool and folder, the answer given;
    - ``compaction`` / ``answers``: the summary a compacted request sends (never saved), and
      how many answers it folded;
    - ``other``: keys this version does not know (or of a type it does not read), kept as written.
    """

    vendor: JSONObject | None = None
    interrupted: bool = False
    error: bool = False
    withheld: str | None = None
    saw: JSONObject | None = None
    arguments: JSON = None
    refused_by: str | None = None
    run_ended: bool = False
    result_unseen: bool = False
    subagent: SubagentLink | None = None
    gate: JSONObject | None = None
    compaction: bool = False
    answers: int = 0
    other: JSONObject = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self != EMPTY_META

    def to_dict(self) -> JSONObject:
        """The JSON form: the fields that differ from their default, then ``other``."""
        data: JSONObject = {}
        for item in _META_FIELDS:
            value = getattr(self, item.name)
            if value != _META_DEFAULTS[item.name]:
                data[item.name] = value.to_dict() if isinstance(value, SubagentLink) else value
        return {**data, **self.other}

    @classmethod
    def from_dict(cls, data: JSONObject) -> MessageMeta:
        """The meta ``to_dict`` wrote; a known key whose value is not of its type is kept in
        ``other`` (as an older or newer Rienda wrote it) instead of failing the message."""
        if not data:
            return EMPTY_META
        known: dict[str, JSON] = {}
        other: JSONObject = {}
        for key, value in data.items():
            check = _META_CHECKS.get(key)
            if check is not None and check(value):
                known[key] = SubagentLink(value["agent"], value["session_id"]) if key == "subagent" else value
            else:
                other[key] = value
        return cls(**known, other=other)


@dataclass(frozen=True)
class Message:
    """A user prompt, an assistant turn (text, thinking, tool calls), or a tool result.

    A tool result has ``role="tool"``, the ``tool_call_id`` and ``name`` of its call, its
    ``text`` and ``is_error``.
    """

    role: Role
    text: str = ""
    thinking: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    usage: Usage | None = None
    meta: MessageMeta = field(default_factory=lambda: EMPTY_META)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", text)

    @classmethod
    def tool_result(cls, call: ToolCall, text: str, is_error: bool, meta: MessageMeta | None = None) -> Message:
        """The result of ``call``; ``meta`` keeps what replay needs (:class:`MessageMeta`)."""
        return cls("tool", text, tool_call_id=call.id, name=call.name, is_error=is_error, meta=meta or EMPTY_META)

    def to_dict(self) -> JSONObject:
        data: JSONObject = {"role": self.role, "text": self.text}
        if self.thinking:
            data["thinking"] = self.thinking
        if self.tool_calls:
            data["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.role == "tool":
            data.update(tool_call_id=self.tool_call_id, name=self.name, isError=self.is_error)
        if self.usage is not None:
            data["usage"] = self.usage.to_dict()
        if self.meta:
            data["meta"] = self.meta.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: JSONObject) -> Message:
        """The message ``to_dict`` wrote; ValueError naming the first bad field."""
        fast = _as_written(data)
        if fast is not None:
            return fast
        role = _role(_get(data, "role", str))
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
            meta=MessageMeta.from_dict(_get(data, "meta", dict, {})),
        )


EMPTY_META: MessageMeta = MessageMeta()
_META_FIELDS = tuple(item for item in dataclass_fields(MessageMeta) if item.name != "other")
_META_DEFAULTS = {item.name: getattr(EMPTY_META, item.name) for item in _META_FIELDS}


def _role(word: str) -> Role:
    for role in ROLES:
        if word == role:
            return role
    raise ValueError(f"'role' must be one of {', '.join(ROLES)}, got {word!r:.40}")


_REQUIRED = object()


_BLANK: dict[str, object] = {"role": None, "text": None, "thinking": "", "tool_calls": (), "tool_call_id": None,
                          "name": None, "is_error": False, "usage": None, "meta": None}  # every field, in order


def _as_written(data: JSONObject) -> Message | None:
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
        fields["meta"] = EMPTY_META
        return _made(Message, fields)
    return _more_written(data, role, fields)


def _more_written(data: JSONObject, role: str, fields: dict[str, object]) -> Message | None:
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
    fields["meta"] = EMPTY_META if meta is None else MessageMeta.from_dict(meta)
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


def _calls_written(calls: JSON) -> tuple[ToolCall, ...] | None:
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


_T = TypeVar("_T")


def _made(cls: type[_T], fields: dict[str, object]) -> _T:
    """An instance of the frozen dataclass ``cls`` with ``fields`` (every field, checked by
    the caller), without its ``__init__``: a frozen dataclass sets each field through
    ``object.__setattr__``, a third of reading a long session."""
    made = object.__new__(cls)
    object.__setattr__(made, "__dict__", fields)
    return made


def _get(data: JSONObject, key: str, kind: type, default: JSON = _REQUIRED) -> JSON:
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


def _kind(value: JSON) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)
