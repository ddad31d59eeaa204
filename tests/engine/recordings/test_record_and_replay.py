"""A run recorded, then answered from its recording: the real loop, real V8 tools and hooks,
an OpenAI-wire server on 127.0.0.1 that counts what it is asked, the recording's file."""

from __future__ import annotations

import json

import pytest

from rienda_kernel.engine import ConfigError, NonInteractiveUI
from rienda_kernel.engine.events import Divergence, Replayed, TextDelta, ToolResultReady

from ...helpers.recorded_notebooks import KEY


def turn(engine, prompt, agent="a", conversation=None):
    ui = NonInteractiveUI()
    conversation = conversation or engine.conversation(agent)
    result = conversation.run(prompt, ui)
    return result, ui.events, conversation


def test_a_second_run_is_answered_from_the_recording_and_leaves_it_byte_identical(recorded, monkeypatch):
    recorded.configure()
    (recorded.rig.workdir / "notes.txt").write_text("one two three")
    first, events, conversation = turn(recorded.rienda(), "read: notes.txt")
    turn(None, "Thanks", conversation=conversation)
    assert (first.reason, first.text) == ("end_turn", "The tool said: one two three")
    assert recorded.asked == 3
    file = recorded.rig.workdir / "talk.rec.jsonl"
    saved = file.read_bytes()
    recorded.stop()
    monkeypatch.delenv("LOCAL_API_KEY")  # a colleague without the key
    second, replayed, conversation = turn(recorded.rienda(mode="replay"), "read: notes.txt")
    again, _, _ = turn(None, "Thanks", conversation=conversation)
    assert (second.reason, second.error, second.text) == ("end_turn", None, "The tool said: one two three")
    assert again.text == "You said: Thanks"
    assert [c.name for c, _ in second.tool_calls] == ["read"]
    assert [e.text for e in replayed if isinstance(e, ToolResultReady)] == ["one two three"]  # the tool ran live
    answered = [e for e in replayed if isinstance(e, Replayed)]
    assert [(e.exchange, e.input_tokens) for e in answered] == [(1, 20), (2, 4)]  # usage as the live calls said
    assert "".join(e.text for e in replayed if isinstance(e, TextDelta)) == "The tool said: one two three"
    assert [m.usage for m in second.messages if m.role == "assistant"] == \
           [m.usage for m in first.messages if m.role == "assistant"]
    assert file.read_bytes() == saved


def test_the_recording_holds_no_key_and_no_header(recorded):
    recorded.configure()
    (recorded.rig.workdir / "notes.txt").write_text(f"the key is {KEY}")
    result, _, _ = turn(recorded.rienda(), "read: notes.txt")
    assert result.reason == "end_turn" and recorded.server.headers[0]["Authorization"] == f"Bearer {KEY}"
    text = (recorded.rig.workdir / "talk.rec.jsonl").read_text()
    assert KEY not in text and "Authorization" not in text and "Bearer" not in text
    assert "[redacted]" in text  # the tool's result quoted it: scrubbed as in sessions


def test_a_tool_result_that_differs_is_said_then_asked_in_auto_and_stops_a_replay(recorded):
    recorded.configure()
    notes = recorded.rig.workdir / "notes.txt"
    notes.write_text("one two three")
    turn(recorded.rienda(), "read: notes.txt")
    notes.write_text("four five")
    result, events, _ = turn(recorded.rienda(mode="replay"), "read: notes.txt")
    assert recorded.asked == 2 and result.reason == "error"
    assert result.error == ("turn 1 is not in the recording talk.rec.jsonl: tool `read`'s result differs from the "
                            "recording: recorded 'one two three', now 'four five'; replay mode never asks the model")
    result, events, _ = turn(recorded.rienda(), "read: notes.txt")
    [divergence] = [e for e in events if isinstance(e, Divergence)]
    assert divergence.asked and divergence.where == "turn 1"
    assert divergence.message.startswith("turn 1 left the recording talk.rec.jsonl: tool `read`'s result differs")
    assert divergence.message.endswith("the model was asked, and the rest of this turn is live")
    assert (result.text, recorded.asked) == ("The tool said: four five", 3)


def test_a_hook_added_since_that_rewrites_the_request_is_named(recorded):
    recorded.configure()
    turn(recorded.rienda(), "Hello")
    recorded.rig.write_hook("team-rules", "module.exports = { beforeModelRequest(ctx, r) { "
                                          "return {system: r.system + ' Follow the team rules.'}; } };")
    recorded.configure(hooks=["team-rules"])
    result, _, _ = turn(recorded.rienda(mode="replay"), "Hello")
    assert result.error.startswith("turn 1 is not in the recording talk.rec.jsonl: the system prompt differs: "
                                   "recorded 'Be brief.', now 'Be brief. Follow the team rules.' "
                                   "(hook team-rules rewrote it)")
    recorded.configure(hooks=[], body="Be terse.")
    result, _, _ = turn(recorded.rienda(mode="replay"), "Hello")
    assert "the system prompt differs" in result.error and "(the agent's system prompt changed)" in result.error


def test_a_hook_that_changes_nothing_is_no_divergence(recorded):
    recorded.configure()
    turn(recorded.rienda(), "Hello")
    recorded.rig.write_hook("audit", "module.exports = { beforeModelRequest(ctx, r) { ctx.log('seen'); } };")
    recorded.configure(hooks=["audit"])
    result, events, _ = turn(recorded.rienda(mode="replay"), "Hello")
    assert (result.reason, result.text, recorded.asked) == ("end_turn", "You said: Hello", 1)


def test_an_edited_prompt_is_named_and_later_turns_only_go_on(recorded):
    recorded.configure()
    engine = recorded.rienda()
    _, _, conversation = turn(engine, "first")
    turn(None, "second", conversation=conversation)
    engine = recorded.rienda(mode="replay")
    _, _, conversation = turn(engine, "first")
    result, _, _ = turn(None, "second, edited", conversation=conversation)
    assert result.error == ("turn 2 is not in the recording talk.rec.jsonl: message 3 (user) differs: recorded "
                            "'second', now 'second, edited'; replay mode never asks the model")
    engine = recorded.rienda()
    _, _, conversation = turn(engine, "first")
    _, _, _ = turn(None, "second", conversation=conversation)
    result, events, _ = turn(None, "third, new", conversation=conversation)  # a turn the recording never reached
    assert result.text == "You said: third, new" and not [e for e in events if isinstance(e, Divergence)]
    assert recorded.asked == 3


def test_identical_requests_are_answered_in_the_order_recorded(recorded):
    recorded.configure(tools=["python"])
    recorded.configure()
    (recorded.rig.workdir / "notes.txt").write_text("one")
    engine = recorded.rienda()
    turn(engine, "read: notes.txt")
    (recorded.rig.workdir / "notes.txt").write_text("two")
    turn(engine, "read: notes.txt")  # the same first request, the second time: asked and kept
    assert recorded.asked == 4
    engine = recorded.rienda(mode="replay")
    (recorded.rig.workdir / "notes.txt").write_text("one")
    assert turn(engine, "read: notes.txt")[0].text == "The tool said: one"
    (recorded.rig.workdir / "notes.txt").write_text("two")
    assert turn(engine, "read: notes.txt")[0].text == "The tool said: two"
    assert recorded.asked == 4


def test_live_mode_asks_every_time_and_rewrites_the_file(recorded):
    recorded.configure()
    turn(recorded.rienda(), "one")
    turn(recorded.rienda(), "two")
    file = recorded.rig.workdir / "talk.rec.jsonl"
    assert sum(1 for line in file.read_text().splitlines() if '"exchange"' in line) == 2
    turn(recorded.rienda(mode="live"), "one")
    assert recorded.asked == 3
    lines = [json.loads(line) for line in file.read_text().splitlines()]
    assert [line["kind"] for line in lines] == ["recording", "window", "exchange"]


def test_the_environment_forces_a_mode_over_the_notebooks_and_a_bad_word_is_named(recorded, monkeypatch):
    recorded.configure()
    turn(recorded.rienda(), "one")
    monkeypatch.setenv("RIENDA_RECORD_MODE", "replay")
    engine = recorded.rienda(mode="auto")
    assert engine.recording.mode == "replay"
    assert turn(engine, "two")[0].error.endswith("replay mode never asks the model")
    monkeypatch.setenv("RIENDA_RECORD_MODE", "replya")
    with pytest.raises(ConfigError, match=r"\$RIENDA_RECORD_MODE: 'replya' is not a recording mode \(did you mean "
                                          r"'replay'\?\) \(modes: auto, replay, live\)"):
        recorded.rienda()


def test_a_file_that_is_not_a_recording_is_named_with_its_line(recorded):
    recorded.configure()
    (recorded.rig.workdir / "bad.rec.jsonl").write_text('{"kind": "recording", "format": 1}\n{"kind": "exchang"}\n')
    with pytest.raises(ConfigError, match=r"^bad.rec.jsonl:2: unknown kind 'exchang'"):
        recorded.rienda("bad.rec.jsonl")
    (recorded.rig.workdir / "bad.rec.jsonl").write_text('{"kind": "exchange", "base": {"exchange": 3, "messages": 1}, '
                                                        '"request": {"messages": []}, "answer": []}\n')
    with pytest.raises(ConfigError, match=r"^bad.rec.jsonl:1: base must name an earlier exchange \(1 to 0\)"):
        recorded.rienda("bad.rec.jsonl")
    with pytest.raises(ConfigError, match=r"^missing.jsonl: there is no recording to replay"):
        recorded.rienda("missing.jsonl", mode="replay")


def test_a_replay_needs_no_key_but_a_request_to_ask_does(recorded, monkeypatch):
    recorded.configure()
    turn(recorded.rienda(), "one")
    monkeypatch.delenv("LOCAL_API_KEY")
    assert turn(recorded.rienda(), "one")[0].text == "You said: one"
    result = turn(recorded.rienda(), "two")[0]
    assert result.reason == "error" and "LOCAL_API_KEY" in result.error
    assert recorded.asked == 1


def test_requests_match_by_what_they_say_not_by_the_vendors_call_ids(recorded):
    """A turn asked before the recording was opened gets new call ids each run; the next
    turn's request, recorded, still matches."""
    recorded.configure()
    (recorded.rig.workdir / "notes.txt").write_text("one")
    for mode in ("auto", "replay"):
        engine = recorded.rienda()
        engine.stop_recording()
        _, _, conversation = turn(engine, "read: notes.txt")  # asked each time: the vendor's ids differ
        engine.record("talk.rec.jsonl", mode)
        result, _, _ = turn(None, "Thanks", conversation=conversation)
        assert (result.reason, result.error, result.text) == ("end_turn", None, "You said: Thanks")
    ids = [call["id"] for body in recorded.server.requests if len(body["messages"]) > 3
           for call in body["messages"][2].get("tool_calls") or []]
    assert len(set(ids)) == 2 and recorded.asked == 5  # the second run's ids were new; its last request not asked


def test_a_hook_added_since_that_changes_a_tool_result_is_named_with_it(recorded):
    recorded.configure()
    (recorded.rig.workdir / "notes.txt").write_text("one two")
    turn(recorded.rienda(), "read: notes.txt")
    recorded.rig.write_hook("no-reads", "module.exports = { beforeToolExecute(ctx, call) { "
                                        "return {allow: false, reason: 'reads are off'}; } };")
    recorded.configure(hooks=["no-reads"])
    result, _, _ = turn(recorded.rienda(mode="replay"), "read: notes.txt")
    assert result.error.startswith("turn 1 is not in the recording talk.rec.jsonl: tool `read`'s result differs "
                                   "from the recording: recorded 'one two', now '")
    assert result.error.endswith("(hooks added since the recording: no-reads); replay mode never asks the model")


def test_each_line_holds_what_its_request_adds_to_the_one_it_goes_on_from(recorded):
    recorded.configure()
    (recorded.rig.workdir / "notes.txt").write_text("one two")
    _, _, conversation = turn(recorded.rienda(), "read: notes.txt")
    turn(None, "Thanks", conversation=conversation)
    lines = [json.loads(line) for line in (recorded.rig.workdir / "talk.rec.jsonl").read_text().splitlines()]
    exchanges = [line for line in lines if line["kind"] == "exchange"]
    assert "base" not in exchanges[0] and exchanges[0]["request"]["system"] == "Be brief."
    assert exchanges[1]["base"] == {"exchange": 1, "messages": 1}
    assert [m["role"] for m in exchanges[1]["request"]["messages"]] == ["assistant", "tool"]
    assert exchanges[2]["base"] == {"exchange": 2, "messages": 3}
    assert [m["text"] for m in exchanges[2]["request"]["messages"]] == ["The tool said: one two", "Thanks"]
    assert {"system", "tools", "options"}.isdisjoint(exchanges[2]["request"])  # the same as its base's
    recorded.stop()
    result, _, conversation = turn(recorded.rienda(mode="replay"), "read: notes.txt")
    assert turn(None, "Thanks", conversation=conversation)[0].text == "You said: Thanks"
