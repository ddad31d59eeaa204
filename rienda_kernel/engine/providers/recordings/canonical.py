"""What a model request says, as a recording keeps and matches it.

:func:`request_form` turns a :class:`~..base.ModelRequest` (the vendor-neutral request, after
``beforeModelRequest``) into plain JSON: the model (``provider/model``), the purpose, the
system prompt, the tool definitions, the options and the messages (role, text, thinking,
tool calls, a tool result's call, name and error flag, and the vendor state sent back with
a turn). It leaves out what changes from run to run without changing what the model is
asked: tool-call ids are renumbered in order of appearance (``call_1``...), and a message's
usage, ledger and sub-agent link are not part of it, nor is the workdir. Every string is
scrubbed (:func:`...secrets.scrub`), so the form is what the file holds.

:func:`form_key` is the form's digest: two requests that say the same thing have the same
key. :func:`first_difference` says, in a few words, where a request first differs from a
recorded one (``message 3 (user) differs: ...``); :func:`closeness` ranks recorded requests
by how far they agree with it, to pick the nearest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from ...common.json_value import JSON, JSONObject
from ...secrets import scrub
from ..base import ModelRequest

__all__ = ["closeness", "first_difference", "form_key", "message_digests", "request_form"]

_SNIPPET = 48  # characters of each side shown where two texts differ


def request_form(model_id: str, request: ModelRequest) -> JSONObject:
    """``request`` as the recording matches it (see the module docstring); scrubbed."""
    ids: dict[str, str] = {}

    def renumbered(call_id: str | None) -> str:
        return ids.setdefault(call_id or "", f"call_{len(ids) + 1}")

    messages: list[JSON] = []
    for message in request.messages:
        item: JSONObject = {"role": message.role, "text": message.text}
        if message.thinking:
            item["thinking"] = message.thinking
        if message.tool_calls:
            item["tool_calls"] = [{"id": renumbered(call.id), "name": call.name, "arguments": call.arguments}
                                  for call in message.tool_calls]
        if message.role == "tool":
            item.update(tool_call_id=renumbered(message.tool_call_id), name=message.name, isError=message.is_error)
        if message.meta.vendor:
            item["vendor"] = dict(message.meta.vendor)
        messages.append(item)
    tools: list[JSON] = [{"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)}
                         for tool in request.tools]
    form: JSONObject = {"model": model_id, "purpose": request.purpose, "system": request.system, "tools": tools,
                        "options": dict(request.options), "messages": messages}
    scrubbed = scrub(form)
    assert isinstance(scrubbed, dict)
    return scrubbed


def _canonical(value: JSON) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")


def form_key(form: JSONObject) -> str:
    """The digest two requests share exactly when their forms are equal."""
    return hashlib.sha256(_canonical(form)).hexdigest()


def message_digests(form: JSONObject) -> tuple[str, ...]:
    """One digest per message of ``form``, to find how many leading messages two requests share."""
    messages = form.get("messages")
    return tuple(hashlib.sha1(_canonical(m)).hexdigest() for m in messages) if isinstance(messages, list) else ()


def _common_prefix(a: Sequence[str], b: Sequence[str]) -> int:
    count = 0
    for left, right in zip(a, b):
        if left != right:
            break
        count += 1
    return count


def closeness(now: JSONObject, now_digests: Sequence[str], recorded: JSONObject,
              recorded_digests: Sequence[str]) -> tuple[int, ...]:
    """How far ``recorded`` agrees with ``now``, higher is nearer: same model and purpose,
    same system prompt, tools and options, then the number of leading messages shared, then
    how close the message counts are."""
    same = [int(now.get(field) == recorded.get(field)) for field in ("model", "purpose", "system", "tools", "options")]
    shared = _common_prefix(now_digests, recorded_digests)
    return (same[0] + same[1], shared, same[2] + same[3] + same[4], -abs(len(now_digests) - len(recorded_digests)))


def first_difference(now: JSONObject, recorded: JSONObject) -> str:
    """Where ``now`` first differs from ``recorded``, as a few words for a person."""
    for field, words in (("model", "the model"), ("purpose", "the request's purpose")):
        if now.get(field) != recorded.get(field):
            return f"{words} differs: recorded {recorded.get(field)}, now {now.get(field)}"
    if now.get("system") != recorded.get("system"):
        return "the system prompt differs: " + _texts(recorded.get("system"), now.get("system"))
    if now.get("tools") != recorded.get("tools"):
        return _tools_difference(now.get("tools"), recorded.get("tools"))
    if now.get("options") != recorded.get("options"):
        return f"the options differ: recorded {_short(recorded.get('options'))}, now {_short(now.get('options'))}"
    return _messages_difference(now.get("messages"), recorded.get("messages"))


def _messages_difference(now: JSON, recorded: JSON) -> str:
    mine = now if isinstance(now, list) else []
    theirs = recorded if isinstance(recorded, list) else []
    for index, (left, right) in enumerate(zip(mine, theirs)):
        if left != right:
            return _message_difference(index, left, right)
    if len(mine) > len(theirs):
        extra = mine[len(theirs)]
        role = extra.get("role") if isinstance(extra, dict) else "?"
        return f"message {len(theirs) + 1} ({role}) is new: the recorded request ends after message {len(theirs)}"
    if len(mine) < len(theirs):
        return f"the request ends after message {len(mine)}; the recorded one goes on to message {len(theirs)}"
    return "the same request was answered fewer times in the recording than it is asked now"


def _message_difference(index: int, now: JSON, recorded: JSON) -> str:
    now_item = now if isinstance(now, dict) else {}
    recorded_item = recorded if isinstance(recorded, dict) else {}
    role = now_item.get("role")
    if role == "tool" and recorded_item.get("role") == "tool":
        name = now_item.get("name")
        if name == recorded_item.get("name") and now_item.get("text") != recorded_item.get("text"):
            return f"tool `{name}`'s result differs from the recording: " + _texts(recorded_item.get("text"),
                                                                                  now_item.get("text"))
        if now_item.get("isError") != recorded_item.get("isError"):
            return f"tool `{name}`'s result is {'now' if now_item.get('isError') else 'no longer'} an error"
    where = f"message {index + 1} ({role})"
    for field in ("role", "text", "thinking", "tool_calls", "name", "isError", "vendor"):
        if now_item.get(field) != recorded_item.get(field):
            if field == "text":
                return f"{where} differs: " + _texts(recorded_item.get("text"), now_item.get("text"))
            if field == "tool_calls":
                return f"{where} differs in its tool calls: recorded {_short(recorded_item.get(field))}, " \
                       f"now {_short(now_item.get(field))}"
            return f"{where} differs in its {field}: recorded {_short(recorded_item.get(field))}, " \
                   f"now {_short(now_item.get(field))}"
    return f"{where} differs"


def _tools_difference(now: JSON, recorded: JSON) -> str:
    def named(tools: JSON) -> dict[str, JSON]:
        return {str(t.get("name")): t for t in tools if isinstance(t, dict)} if isinstance(tools, list) else {}

    mine, theirs = named(now), named(recorded)
    added, gone = sorted(set(mine) - set(theirs)), sorted(set(theirs) - set(mine))
    if added or gone:
        parts = ([f"added {', '.join(added)}"] if added else []) + ([f"without {', '.join(gone)}"] if gone else [])
        return f"the tools differ: {'; '.join(parts)}"
    changed = sorted(name for name in mine if mine[name] != theirs[name])
    if changed:
        return f"tool `{changed[0]}`'s definition differs from the recording"
    return "the tools are in another order than in the recording"


def _texts(recorded: JSON, now: JSON) -> str:
    """Two texts, each cut around where they first differ."""
    left, right = str(recorded or ""), str(now or "")
    start = _common_prefix(left, right)
    cut = max(0, start - _SNIPPET // 3) if max(len(left), len(right)) > _SNIPPET else 0

    def around(text: str) -> str:
        piece = text[cut:cut + _SNIPPET]
        return ("…" if cut else "") + piece + ("…" if len(text) > cut + _SNIPPET else "")

    return f"recorded {around(left)!r}, now {around(right)!r}"


def _short(value: JSON) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= _SNIPPET * 2 else text[:_SNIPPET * 2] + "…"
