"""What a compaction keeps, prunes and folds, and how it ends when it cannot help: through
the real loop, the scripted model with a small ``context_window`` (usage from the estimate),
real V8 hooks and the session file."""

from __future__ import annotations

import json

import pytest
import yaml

from rienda_kernel.engine import ConfigError, NonInteractiveUI
from rienda_kernel.engine.events import Compaction, Notify
from rienda_kernel.engine.home.config import read_config
from rienda_kernel.engine.runtime.compactor import CHARACTERS_PER_TOKEN_AT_MOST, SUMMARY_MAX_TOKENS
from rienda_kernel.engine.runtime.rienda import Rienda
from rienda_kernel.engine.sessions.compaction.view import request_messages

from ...helpers.homes import session_lines, write_agent_file, write_script
from ...helpers.vendor_wire import serving
from ...helpers.vendors import fake_openai

BIG = "x" * 1500


def agent(rig, window, hooks=(), tools=(), script=None, config=None):
    write_agent_file(rig.home, "long", f"---\ndescription: Long.\nmodel: scripted/script.yaml\nhooks: {list(hooks)}\n"
                                       f"tools: {list(tools)}\noptions:\n  context_window: {window}\n---\nYou help.\n")
    write_script(rig.workdir, script or [{"text": f"Answer {i}: " + "lorem ipsum dolor " * 20} for i in range(12)])
    if config is not None:
        (rig.home / "config.yaml").write_text(yaml.safe_dump(config))
    return Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)


def records(rig, session_id, kind="compaction"):
    return [line for line in session_lines(rig.home, session_id) if line.get("type") == kind]


def run_all(conversation, count, ui=None):
    for index in range(count):
        result = conversation.run(f"prompt {index + 1}: go on", ui or NonInteractiveUI())
        assert (result.reason, result.error) == ("end_turn", None)


def test_older_tool_results_are_pruned_first_and_that_is_enough(rig):
    rig.write_tool("big", "module.exports = { description: 'Big.', parameters: {type: 'object', properties: {}}, "
                          f"execute() {{ return '{BIG}'; }} }};")
    script = [{"text": f"Step {i}.", "tool_calls": [{"name": "big", "arguments": {}}]} for i in range(4)]
    conversation = agent(rig, 2000, tools=["big"], script=script + [{"text": "Done."}]).conversation("long")
    run_all(conversation, 1)
    [record] = records(rig, conversation.session_id)
    assert (record["outcome"], record["folded_count"], record["summary"]) == ("compacted", 0, None)
    assert set(record["pruned"].values()) == {"[pruned: big, 1,500 characters]"} and record["pruned_count"] >= 2
    sent = request_messages(conversation.messages, conversation.compaction.view)
    results = [m.text for m in sent if m.role == "tool"]
    assert results[-1] == BIG and "[pruned: big, 1,500 characters]" in results  # the newest whole, older pruned
    assert len(sent) == len(conversation.messages)  # nothing folded: every message is still sent


def test_a_summary_that_does_not_shrink_the_context_is_rejected_and_not_tried_again_in_the_run(rig):
    rig.write_hook("verbose", "module.exports = { beforeCompact() { return {summary: 'word '.repeat(400)}; } };")
    rig.write_tool("small", "module.exports = { description: 'Small.', parameters: {type: 'object', properties: {}}, "
                            "execute() { return 'ok ' + 'lorem ipsum dolor '.repeat(15); } };")
    script = [{"text": f"Step {i}: " + "lorem ipsum " * 10, "tool_calls": [{"name": "small", "arguments": {}}]}
              for i in range(8)] + [{"text": "Done."}, {"text": "Again."}]
    ui = NonInteractiveUI()
    conversation = agent(rig, 800, hooks=["verbose"], tools=["small"], script=script).conversation("long")
    run_all(conversation, 1, ui)
    [record] = records(rig, conversation.session_id)  # once in the run, though every later turn was past the threshold
    assert record["outcome"] == "rejected" and record["tokens_after"] >= record["tokens_before"] - 50
    [event] = [e for e in ui.events if isinstance(e, Compaction)]
    assert event.message.startswith("compaction rejected: its summary did not make the context smaller")
    assert conversation.compaction.view is None
    run_all(conversation, 1)  # the next run may try again
    assert len(records(rig, conversation.session_id)) == 2


def test_nothing_to_compact_is_one_line_and_no_record(rig):
    conversation = agent(rig, 600).conversation("long")
    run_all(conversation, 1)
    event = conversation.compact(NonInteractiveUI())
    assert event.outcome == "nothing" and event.message.startswith("nothing to compact: the first prompt, the pinned")
    assert records(rig, conversation.session_id) == []


def test_a_session_not_started_cannot_be_compacted_and_says_so(rig):
    event = agent(rig, 600).conversation("long").compact(NonInteractiveUI())
    assert (event.outcome, event.message) == ("failed", "compaction failed: there is no session yet: nothing to compact")


def test_the_first_and_pinned_prompts_stay_verbatim_and_a_pin_brings_back_a_folded_prompt(rig):
    engine = agent(rig, 700)
    conversation = engine.conversation("long")
    run_all(conversation, 2)
    assert conversation.pin() == 2  # prompt 2 is message 2
    run_all(conversation, 5)
    [first] = records(rig, conversation.session_id)
    assert first["head"] == [0, 2] and first["tail_from"] > 4
    sent = [m.text for m in request_messages(conversation.messages, conversation.compaction.view)]
    assert sent[:2] == ["prompt 1: go on", "prompt 2: go on"]
    folded = next(index for index in range(3, first["tail_from"]) if conversation.messages[index].role == "user")
    resumed = engine.conversation("long", conversation.session_id)
    assert resumed.pin(folded // 2 + 1) == folded and resumed.compact(NonInteractiveUI(), "x").outcome == "compacted"
    assert records(rig, conversation.session_id)[-1]["head"] == [0, 2, folded]
    assert [r["message"] for r in records(rig, conversation.session_id, "pin")] == [2, folded]


def test_pinning_a_prompt_the_session_does_not_have_is_an_error_naming_it(rig):
    conversation = agent(rig, 600).conversation("long")
    with pytest.raises(ConfigError, match="there is no session yet"):
        conversation.pin()
    run_all(conversation, 1)
    with pytest.raises(ConfigError, match=f"session {conversation.session_id} has no prompt 3: it has 1"):
        conversation.pin(3)


def test_a_damaged_compaction_record_is_skipped_with_a_warning_and_the_view_before_it_used(rig):
    engine = agent(rig, 600)
    conversation = engine.conversation("long")
    run_all(conversation, 6)
    path = rig.home / "sessions" / f"{conversation.session_id}.jsonl"
    with path.open("a") as file:
        file.write('{"type": "compaction", "outcome": "compacted", "upto": 99, "tail_from": 3}\n')
    resumed = engine.conversation("long", conversation.session_id)
    assert resumed.compaction.view == conversation.compaction.view is not None
    assert any("a compaction record was skipped" in warning and "holds 12" in warning for warning in resumed.warnings)


def test_compaction_off_leaves_the_session_whole(rig):
    conversation = agent(rig, 600, config={"compaction": False}).conversation("long")
    run_all(conversation, 7)
    assert records(rig, conversation.session_id) == [] and conversation.compaction.view is None


@pytest.mark.parametrize("value, problem", [
    ({"reserv": 10}, "compaction: unknown key 'reserv' (did you mean 'reserve'?)"),
    ({"keep_recent_tokens": -1}, "compaction.keep_recent_tokens must be a whole number of tokens"),
    ({"model": "gpt"}, "compaction.model must be provider/model"),
    ("sometimes", "compaction must be false, or a mapping of auto, reserve, keep_recent_tokens and model"),
])
def test_a_bad_compaction_setting_names_the_file_line_and_key(rig, value, problem):
    (rig.home / "config.yaml").write_text(yaml.safe_dump({"max_turns": 3, "compaction": value}, sort_keys=False))
    with pytest.raises(ConfigError) as raised:
        read_config(rig.home)
    assert f"{rig.home / 'config.yaml'}:2: " in str(raised.value) and problem in str(raised.value)


def test_a_failing_summariser_is_one_line_and_the_run_goes_on(rig):
    with serving(fake_openai()) as server:
        server.replies += [{"status": 400, "body": {"error": {"message": "model not found", "type": "invalid_request"}}}]
        engine = agent(rig, 600, config={"providers": {"cheap": {"api": "openai", "base_url": server.url,
                                                                  "api_key_env": None}},
                                         "compaction": {"model": "cheap/mini"}})
        ui = NonInteractiveUI()
        conversation = engine.conversation("long")
        run_all(conversation, 6, ui)
        assert server.requests[0]["model"] == "mini" and not server.requests[0].get("tools")
    [record] = records(rig, conversation.session_id)
    assert record["outcome"] == "failed"
    [event] = [e for e in ui.events if isinstance(e, Compaction)]
    assert event.message.startswith("compaction failed: the summariser's model failed: ") and "model not found" in \
        event.message and "\n" not in event.message


def test_a_secret_in_the_summary_never_reaches_the_file_and_the_resumed_request_is_the_live_one(rig, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-0123456789abcdef")
    rig.write_hook("leaky", "module.exports = { beforeCompact() { "
                            "return {summary: 'the key is sk-live-0123456789abcdef, keep it'}; } };")
    engine = agent(rig, 600, hooks=["leaky"])
    conversation = engine.conversation("long")
    run_all(conversation, 6)
    text = (rig.home / "sessions" / f"{conversation.session_id}.jsonl").read_text()
    assert "sk-live-0123456789abcdef" not in text and "the key is [redacted], keep it" in text
    resumed = engine.conversation("long", conversation.session_id)
    assert request_messages(resumed.messages, resumed.compaction.view) == request_messages(
        conversation.messages, conversation.compaction.view)


def test_nothing_to_compact_is_said_once_in_a_run_and_a_later_turn_compacts(rig):
    """A first tool result past the threshold leaves nothing to compact (the last answer and its
    results are always kept); the next turn can prune it, and does."""
    rig.write_tool("huge", "module.exports = { description: 'Huge.', parameters: {type: 'object', properties: {}}, "
                           "execute() { return 'y'.repeat(4000); } };")
    rig.write_tool("small", "module.exports = { description: 'Small.', parameters: {type: 'object', properties: {}}, "
                            "execute() { return 'ok'; } };")
    script = [{"text": "Reading.", "tool_calls": [{"name": "huge", "arguments": {}}]},
              {"text": "Checking.", "tool_calls": [{"name": "small", "arguments": {}}]},
              {"text": "Checking again.", "tool_calls": [{"name": "small", "arguments": {}}]}, {"text": "Done."}]
    ui = NonInteractiveUI()
    conversation = agent(rig, 1200, tools=["huge", "small"], script=script).conversation("long")
    run_all(conversation, 1, ui)
    outcomes = [e.outcome for e in ui.events if isinstance(e, Compaction)]
    assert outcomes == ["nothing", "compacted"]
    [record] = records(rig, conversation.session_id)
    assert record["pruned"] == {"2": "[pruned: huge, 4,000 characters]"}


def test_a_summariser_on_an_unknown_provider_names_compaction_model(rig):
    """A run fails before its first request, and the line names the setting at fault."""
    engine = agent(rig, 600, config={"compaction": {"model": "nowhere/mini"}})
    result = engine.conversation("long").run("hello", NonInteractiveUI())
    assert result.reason == "error"
    assert result.error.startswith(f"{rig.home / 'config.yaml'}: compaction.model: model 'nowhere/mini': no provider "
                                   "named 'nowhere'"), result.error


def test_a_runaway_summary_stream_is_cut_off_unread_and_kept_as_far_as_the_limit(rig):
    """The summariser is asked for at most SUMMARY_MAX_TOKENS and what the window leaves
    the answer, never under 256 (a 600-token window: 256); a server that ignores it and
    streams on (about 100 MB here) is not read past the limit: memory stays bounded, and
    what it wrote up to there is judged as any summary (here too long for a 600-token
    window: rejected, the session left as it was) (issue 40)."""
    sent = [0]
    piece = json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "mini",
                        "choices": [{"index": 0, "delta": {"content": "lorem ipsum " * 80}, "finish_reason": None}]})

    def runaway():
        for _ in range(100_000):
            sent[0] += 1
            yield piece

    with serving(fake_openai()) as server:
        server.replies += [{"events": runaway(), "done": False}]
        engine = agent(rig, 600, config={"providers": {"cheap": {"api": "openai", "base_url": server.url,
                                                                  "api_key_env": None}},
                                         "compaction": {"model": "cheap/mini"}})
        conversation = engine.conversation("long")
        run_all(conversation, 6)
        assert server.requests[0]["max_tokens"] == 256 < SUMMARY_MAX_TOKENS
    [record] = records(rig, conversation.session_id)
    assert record["outcome"] == "rejected" and record["tokens_after"] <= 256 * CHARACTERS_PER_TOKEN_AT_MOST
    assert conversation.compaction.view is None
    assert sent[0] < 10_000, sent  # the rest of the stream was never read


def test_a_request_over_the_whole_window_is_said_before_it_is_sent(rig):
    """Nothing to compact (compaction off here) and the request past the window: one notice
    before it goes, naming the fill and the window; a request within it gets none (issue 40)."""
    engine = agent(rig, 600, config={"compaction": False})
    conversation = engine.conversation("long")
    ui = NonInteractiveUI()
    run_all(conversation, 7, ui)
    said = [e.body for e in ui.events if isinstance(e, Notify) and e.title == "context"]
    assert said and all("'s window of 600: it is sent as it is, and the model may refuse it" in line for line in said)
    assert said[0].startswith("the request holds about ") and " % of scripted/script.yaml's window of 600" in said[0]
    quiet = NonInteractiveUI()
    agent(rig, 100_000, config={"compaction": False}).conversation("long").run("hello", quiet)
    assert not [e for e in quiet.events if isinstance(e, Notify) and e.title == "context"]
