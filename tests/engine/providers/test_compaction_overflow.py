"""A request refused for its length is compacted once and retried, on each vendor's emulated
server (a real HTTP server on 127.0.0.1 that checks every request with the vendor's own
types and pairing rules and answers HTTP 400 as the vendor does): the retry's body is
smaller than the refused one, holds the summary message and the first prompt as sent, and
no tool result without its call. A summary cut off at the length limit is kept as far as
it goes (the real llama.cpp server with a small ``max_tokens`` is in test_real_compaction.py).
"""

from __future__ import annotations

import json

import pytest
import yaml

from rienda_kernel.engine import CompactionRecord, NonInteractiveUI
from rienda_kernel.engine.runtime.rienda import Rienda
from rienda_kernel.engine.sessions.compaction.view import SUMMARY_OPENING

from ...helpers.vendor_streams import anthropic as anthropic_stream
from ...helpers.vendor_streams import openai as openai_stream
from ...helpers.vendor_wire import counting_agent, serving
from ...helpers.vendors import fake_anthropic, fake_openai

OPENAI = {"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages "
                               "resulted in 130523 tokens. Please reduce the length of the messages.",
                    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
ANTHROPIC = {"type": "error", "error": {"type": "invalid_request_error",
                                        "message": "prompt is too long: 208310 tokens > 200000 maximum"}}
FIRST = "How many words are in notes.txt? Ünïcödé 日本語"
LONG_ANSWER = "4 words. " + "Each word of notes.txt is counted once, spaces apart. " * 40  # what a fold shrinks


def streams(vendor: str):
    """(a word-count call with id ``call_id``, a text answer) in ``vendor``'s stream."""
    if vendor == "openai":
        return (lambda call_id: openai_stream.tool_stream(call_id, "word-count", '{"path": "notes.txt"}'),
                openai_stream.text_stream)
    return (lambda call_id: anthropic_stream.tool_stream(call_id, "word-count", '{"path": "notes.txt"}'),
            anthropic_stream.text_stream)


def cut_off(vendor: str, text: str) -> list[dict]:
    """An answer stopped at the length limit after ``text``."""
    if vendor == "openai":
        return [openai_stream.chunk({"role": "assistant", "content": text}), openai_stream.chunk({}, "length"),
                openai_stream.usage(900, 64)]
    return [anthropic_stream.start(900), anthropic_stream.block(0, {"type": "text", "text": ""}),
            anthropic_stream.delta(0, type="text_delta", text=text), anthropic_stream.stop(0),
            *anthropic_stream.end("max_tokens", 64)]


def session_with_tool_calls(rig, vendor: str, server) -> tuple[Rienda, str]:
    """Two runs on ``server``, each a word-count call and an answer (the first long);
    keep_recent_tokens keeps the second run whole."""
    model = "cloud/claude-sonnet-4-5" if vendor == "anthropic" else "cloud/gpt-4o"
    (rig.home / "config.yaml").write_text(yaml.safe_dump({
        "providers": {"cloud": {"api": vendor, "base_url": server.url}}, "compaction": {"keep_recent_tokens": 55}}))
    counting_agent(rig, "counter", model)
    engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    call, text = streams(vendor)
    server.replies += [{"events": call("call_1")}, {"events": text(LONG_ANSWER)},
                       {"events": call("call_2")}, {"events": text("Still 4.")}]
    first = engine.conversation("counter").run(FIRST, NonInteractiveUI())
    second = engine.conversation("counter", first.session_id).run("Count them again.", NonInteractiveUI())
    assert (first.reason, second.reason) == ("end_turn", "end_turn"), (first.error, second.error)
    return engine, first.session_id


def user_texts(vendor: str, body: dict) -> list[str]:
    if vendor == "openai":
        return [m["content"] for m in body["messages"] if m["role"] == "user"]
    return [b["text"] for m in body["messages"] if m["role"] == "user" for b in m["content"] if b["type"] == "text"]


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_a_refusal_is_compacted_once_and_the_smaller_retry_holds_the_summary(rig, vendor):
    server = (fake_openai if vendor == "openai" else fake_anthropic)()
    with serving(server):
        engine, session_id = session_with_tool_calls(rig, vendor, server)
        _, text = streams(vendor)
        server.replies += [{"status": 400, "body": OPENAI if vendor == "openai" else ANTHROPIC},
                           {"events": text("## Goal\n- count the words of notes.txt (4)")}, {"events": text("Yes, 4.")}]
        result = engine.conversation("counter", session_id).run("And once more?", NonInteractiveUI())
        assert not server.problems, server.problems
    assert (result.reason, result.error, result.text) == ("end_turn", None, "Yes, 4.")
    refused, summariser, retry = server.requests[-3:]
    assert len(server.requests) == 7 and "Summarise the conversation" in json.dumps(summariser)
    assert len(json.dumps(retry)) < len(json.dumps(refused))
    sent = user_texts(vendor, retry)
    assert sent[0] == FIRST and sent[1].startswith(SUMMARY_OPENING) and "4)" in sent[1] and sent[-1] == "And once more?"
    assert "call_1" not in json.dumps(retry) and "call_2" in json.dumps(retry)  # folded, kept with its result
    [made] = engine.store.load(session_id).records_of(CompactionRecord)
    assert (made.outcome, made.reason) == ("compacted", "overflow") and made.folded_count > 0


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_a_summary_cut_off_at_the_length_limit_is_kept_as_far_as_it_goes(rig, vendor):
    server = (fake_openai if vendor == "openai" else fake_anthropic)()
    with serving(server):
        engine, session_id = session_with_tool_calls(rig, vendor, server)
        _, text = streams(vendor)
        server.replies += [{"status": 400, "body": OPENAI if vendor == "openai" else ANTHROPIC},
                           {"events": cut_off(vendor, "## Goal\n- count the words")}, {"events": text("Yes, 4.")}]
        result = engine.conversation("counter", session_id).run("And once more?", NonInteractiveUI())
    assert (result.reason, result.error) == ("end_turn", None), engine.store.load(session_id).records
    [made] = engine.store.load(session_id).records_of(CompactionRecord)
    assert (made.outcome, made.view and made.view.summary) == ("compacted", "## Goal\n- count the words")


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_a_retry_refused_again_ends_in_the_one_line_and_never_compacts_twice(rig, vendor):
    """The retried request refused for its length again: the run ends with the one line
    ("even after compacting it once"); one compaction was made, and nothing more was asked
    (a loop would ask for a second summary, and a third request)."""
    server = (fake_openai if vendor == "openai" else fake_anthropic)()
    refusal = {"status": 400, "body": OPENAI if vendor == "openai" else ANTHROPIC}
    with serving(server):
        engine, session_id = session_with_tool_calls(rig, vendor, server)
        asked_before = len(server.requests)
        _, text = streams(vendor)
        server.replies += [refusal, {"events": text("## Goal\n- count the words of notes.txt (4)")}, refusal]
        result = engine.conversation("counter", session_id).run("And once more?", NonInteractiveUI())
        asked = len(server.requests) - asked_before
    assert result.reason == "error" and "even after compacting it once" in result.error, result.error
    assert "\n" not in result.error and f"session {session_id} is kept" in result.error
    assert asked == 3  # the refused request, the summariser, the refused retry: no second compaction
    [made] = engine.store.load(session_id).records_of(CompactionRecord)
    assert (made.outcome, made.reason) == ("compacted", "overflow")
