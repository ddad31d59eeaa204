"""The session reader's hot path (sessions/reading.py): brackets and escaped surrogates are
looked for once in the whole file, and each finding lands on its own line."""

from __future__ import annotations

import json

from rienda_kernel.engine.secrets import Scrubber
from rienda_kernel.engine.sessions.messages import Message, MessageMeta, ToolCall
from rienda_kernel.engine.sessions.records import record_json
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
    assert [record_json(r) for r in loaded.records] == [two_hundred]
    assert (loaded.message_lines, loaded.record_lines) == ([2, 4, 5, 6, 8], [7])


CALL = {"id": "c1", "name": "read", "arguments": {"path": "a"}}
SHAPES = [  # message lines as the writer writes them, and every way a field can differ
    {"role": "user", "text": "hi"}, {"role": "assistant", "text": "a"}, {"role": "system", "text": "s"},
    {"role": "user"}, {"role": "user", "text": 5}, {"role": "user", "text": None}, {"text": "no role"},
    {"role": "user", "text": "t", "zzz": [1]}, {"role": "user", "text": "t", "thinking": None},
    {"role": "assistant", "text": "", "thinking": "why"}, {"role": "assistant", "text": "", "thinking": 5},
    {"role": "assistant", "text": "", "tool_calls": [CALL]}, {"role": "assistant", "text": "", "tool_calls": []},
    {"role": "assistant", "text": "", "tool_calls": None}, {"role": "assistant", "text": "", "tool_calls": "x"},
    {"role": "assistant", "text": "", "tool_calls": [5]}, {"role": "assistant", "text": "", "tool_calls": [{"id": 1, "name": "n"}]},
    {"role": "assistant", "text": "", "tool_calls": [{"id": "c", "name": None}]}, {"role": "assistant", "text": "", "tool_calls": [{"id": "c", "name": "n"}]},
    {"role": "assistant", "text": "", "usage": {"input_tokens": 3, "output_tokens": 4}}, {"role": "assistant", "text": "", "usage": {}},
    {"role": "assistant", "text": "", "usage": {"input_tokens": -1}}, {"role": "assistant", "text": "", "usage": {"input_tokens": True}},
    {"role": "assistant", "text": "", "usage": {"output_tokens": 1.5}}, {"role": "assistant", "text": "", "usage": "x"},
    {"role": "assistant", "text": "", "usage": None}, {"role": "assistant", "text": "", "usage": {"input_tokens": None}},
    {"role": "user", "text": "", "meta": {"saw": {}}}, {"role": "user", "text": "", "meta": None}, {"role": "user", "text": "", "meta": []},
    {"role": "user", "text": "", "tool_call_id": "x"}, {"role": "user", "text": "", "tool_call_id": None},
    {"role": "user", "text": "", "name": "n"}, {"role": "user", "text": "", "isError": True}, {"role": "user", "text": "", "isError": None},
    {"role": "tool", "text": "r", "tool_call_id": "c1", "name": "read", "isError": False},
    {"role": "tool", "text": "r", "tool_call_id": "c1", "name": None, "isError": True, "meta": {"run_ended": True}},
    {"role": "tool", "text": "r"}, {"role": "tool", "text": "r", "tool_call_id": 7}, {"role": "tool", "text": "r", "tool_call_id": "c", "name": 3},
    {"role": "tool", "text": "r", "tool_call_id": "c", "isError": None}, {"role": "tool", "text": "r", "tool_call_id": "c", "isError": "yes"},
    {"role": "assistant", "text": "all", "thinking": "t", "tool_calls": [CALL, CALL], "usage": {"input_tokens": 1}, "meta": {"m": 1}},
]


def test_the_fast_path_reads_each_message_line_as_the_field_by_field_checks_do(tmp_path, monkeypatch):
    """Every line, with and without a ``time``: the same messages (fields and all) and the
    same warnings as :meth:`Message.from_dict`'s checks alone make; and the writer's own
    lines take the fast path."""
    store = SessionStore(tmp_path, scrubber=Scrubber({}))
    with store.create("a", "p/m") as writer:
        writer.append_message(Message("assistant", "w", "t", (ToolCall("c", "n", {"a": [1]}),)))
        writer.append_message(Message.tool_result(ToolCall("c", "n", {}), "r", True, MessageMeta(saw={})))
    with open(writer.path, "a", encoding="utf-8") as file:
        for shape in SHAPES:
            file.write(json.dumps({"type": "message", **shape}) + "\n")
            file.write(json.dumps({"type": "message", "time": "2026-01-01T00:00:00Z", **shape}) + "\n")
    fast = store.load(writer.id)
    from rienda_kernel.engine.sessions import messages
    written = [json.loads(line) for line in writer.path.read_text(encoding="utf-8").splitlines()[1:3]]
    assert all(messages._as_written(line) is not None for line in written)
    monkeypatch.setattr(messages, "_as_written", lambda data: None)
    checked = store.load(writer.id)
    assert [vars(m) for m in fast.messages] == [vars(m) for m in checked.messages]
    assert fast.warnings == checked.warnings and len(fast.warnings) > 20
    assert fast.message_lines == checked.message_lines


RECORDS_JSON_READS_ITS_WAY = [  # lines orjson reads differently or refuses: a faster reader must keep json's reading
    '{"type": "note", "n": 123456789012345678901234567890, "m": -9223372036854775809}',
    '{"type": "note", "n": 9223372036854775808, "m": 18446744073709551616, "k": 9223372036854775807}',
    '{"type": "note", "n": NaN, "i": Infinity, "j": -Infinity, "big": 1e400, "small": 1e-400}',
    '{"type": "note", "a": 1, "b": 0, "a": 2}',
    '{"type": "note", "f": 0.1, "g": 1.7976931348623157e308, "h": 5e-324, "k": -0.0, "e": 1E2}',
    '{"type": "note", "key \\ud800": "\\ud83d\\ude00"}',
    '  {"type": "note", "padded": true}\t',
]


def test_numbers_and_keys_read_as_json_reads_them(tmp_path):
    """Big integers stay exact integers (orjson makes floats of those past 64 bits), NaN and
    infinities load, the last of two equal keys wins, and a message's arguments keep
    their big numbers too."""
    store = SessionStore(tmp_path, scrubber=Scrubber({}))
    with store.create("a", "p/m") as writer:
        writer.append_message(Message.user("one"))
    call = '{"id": "c", "name": "n", "arguments": {"n": 12345678901234567890123, "m": -1234567890123456789}}'
    message = '{"type": "message", "role": "assistant", "text": "", "tool_calls": [' + call + ']}'
    with open(writer.path, "a", encoding="utf-8") as file:
        file.writelines(line + "\n" for line in [*RECORDS_JSON_READS_ITS_WAY, message])
    loaded = store.load(writer.id)
    expected = [json.loads(line) for line in RECORDS_JSON_READS_ITS_WAY]
    expected[5] = {"type": "note", "key \ufffd": "\U0001f600"}  # and repaired
    assert repr([record_json(r) for r in loaded.records]) == repr(expected) and loaded.warnings == []
    assert loaded.messages[-1].tool_calls[0].arguments == {"n": 12345678901234567890123, "m": -1234567890123456789}
    assert type(loaded.messages[-1].tool_calls[0].arguments["m"]) is int


def test_a_load_pauses_the_collector_and_leaves_it_as_it_found_it(tmp_path):
    """Reading makes objects that all stay alive: no collection runs while a session is
    parsed; the collector is on again after a load, and a
    caller who had it off finds it off."""
    import gc

    store = SessionStore(tmp_path, scrubber=Scrubber({}))
    with store.create("a", "p/m") as writer:
        for i in range(3000):
            writer.append_message(Message.user(f"message {i}"))
    collections = []

    def count(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        assert len(store.load(writer.id).messages) == 3000
    finally:
        gc.callbacks.remove(count)
    assert collections in ([], [0])  # at most the one the end of the pause owes
    assert gc.isenabled()
    gc.disable()
    try:
        store.load(writer.id)
        assert not gc.isenabled()
    finally:
        gc.enable()
