"""The session reader's hot path (sessions/reading.py): brackets and escaped surrogates are
looked for once in the whole file, and each finding lands on its own line."""

from __future__ import annotations

import json

from rienda_kernel.engine.secrets import Scrubber
from rienda_kernel.engine.sessions.messages import Message, ToolCall
from rienda_kernel.engine.sessions.store import SessionStore


def test_each_line_keeps_its_own_bound_and_its_own_surrogate_repair(tmp_path):
    """A 300-deep line between plain ones is refused alone; a line exactly 200 deep
    loads; escaped surrogates are repaired on their lines only (a \\u escape that is
    not a surrogate is read as it is), however many a line holds."""
    store = SessionStore(tmp_path, scrubber=Scrubber({}))
    with store.create("a", "p/m") as writer:
        writer.append_message(Message.user("one"))
    deep = {"type": "note", "x": json.loads("[" * 300 + "]" * 300)}
    two_hundred = {"type": "note", "x": json.loads("[" * 199 + "]" * 199)}  # the object itself is level 1
    lines = [deep, {"type": "message", "role": "user", "text": "two"},
             {"type": "message", "role": "user", "text": "a\ud800"},
             {"type": "message", "role": "user", "text": "three \u00e9"},
             two_hundred,
             {"type": "message", "role": "assistant", "text": "b\udc00 c\ud83d",
              "tool_calls": [{"id": "c\ud800", "name": "read", "arguments": {"p": "x\udfff"}}]}]
    with open(writer.path, "a", encoding="utf-8", errors="surrogatepass") as file:
        file.writelines(json.dumps(line) + "\n" for line in lines)  # \u escapes, as an older Rienda wrote
    loaded = store.load(writer.id)
    assert [m.text for m in loaded.messages] == ["one", "two", "a\ufffd", "three \u00e9", "b\ufffd c\ufffd"]
    assert loaded.messages[-1].tool_calls == (ToolCall("c\ufffd", "read", {"p": "x\ufffd"}),)
    assert loaded.warnings == [f"{writer.path}:3: nested more than 200 levels deep; skipped"]
    assert loaded.records == [two_hundred]
    assert (loaded.message_lines, loaded.record_lines) == ([2, 4, 5, 6, 8], [7])
