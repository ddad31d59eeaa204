"""The Anthropic provider against a real HTTP server on 127.0.0.1.

The server replays Messages API streams (``event:``/``data:`` pairs); every event it serves
and every request body passes the official ``anthropic`` package's types (see
``vendors.py``).
"""

from __future__ import annotations

import pytest

from rienda_kernel.engine import CancelToken, NonInteractiveUI
from rienda_kernel.engine.errors import ConfigError, ProviderError
from rienda_kernel.engine.sessions.messages import Message, MessageMeta, ToolCall
from rienda_kernel.engine.providers import (
    NoticeChunk,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    ToolSpec,
    UsageChunk,
    VendorStateChunk,
    provider_for,
)
from rienda_kernel.engine.providers.anthropic import AnthropicProvider
from rienda_kernel.engine.runtime.rienda import Rienda

from ...helpers.vendors import fake_anthropic
from ...helpers.vendor_wire import Caller, counting_agent, serving
from ...helpers.vendor_streams.anthropic import MODEL, block, delta, end, start, stop, text_stream, tool_stream

KEY = "sk-ant-api03-SECRET-0123456789abcdef"


# -- fixtures ------------------------------------------------------------------------------------


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with serving(fake_anthropic()) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        yield fake


CALLER = Caller(AnthropicProvider, MODEL)
provider, ask, collect = CALLER.provider, CALLER.ask, CALLER.collect


# -- streaming -------------------------------------------------------------------------------------


def test_the_registry_knows_anthropic_and_its_options():
    found, name = provider_for(f"anthropic/{MODEL}", {})
    assert isinstance(found, AnthropicProvider) and name == MODEL and found.max_tokens == 8192
    configured, _ = provider_for(f"anthropic/{MODEL}", {"providers": {"anthropic": {"max_tokens": 1000}}})
    assert isinstance(configured, AnthropicProvider) and configured.max_tokens == 1000
    with pytest.raises(ConfigError, match="thinking must be a mapping"):
        provider_for("anthropic/m", {"providers": {"anthropic": {"thinking": "yes"}}})
    with pytest.raises(ConfigError, match="unknown option.*max_token\\b"):
        provider_for("anthropic/m", {"providers": {"anthropic": {"max_token": 5}}})


def test_text_streams_in_pieces_with_usage(server):
    server.replies.append({"events": text_stream("Hel", "lo", " there")})
    chunks = collect(ask())
    assert chunks[:3] == [TextChunk("Hel"), TextChunk("lo"), TextChunk(" there")]
    assert chunks[3:] == [UsageChunk(chunks[3].usage)]
    assert (chunks[3].usage.input_tokens, chunks[3].usage.output_tokens) == (12, 7)
    [body] = server.requests
    assert body == {"model": MODEL, "max_tokens": 8192, "stream": True, "system": "Be brief.",
                    "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]}
    headers = {k.lower(): v for k, v in server.headers[0].items()}
    assert headers["x-api-key"] == KEY and headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers


def test_cached_input_tokens_count_as_input(server):
    events = text_stream("ok")
    events[0] = start(input_tokens=5, cache_read=1000)
    server.replies.append({"events": events})
    assert collect(ask())[-1].usage.input_tokens == 1005


def test_a_tool_call_is_assembled_from_input_json_pieces(server):
    server.replies.append({"events": tool_stream("toolu_01", "word-count", '{"pa', 'th": "no', 'tes.txt"}',
                                                 text="Let me count.")})
    tool = ToolSpec("word-count", "Counts words.", {"type": "object", "properties": {"path": {"type": "string"}}})
    chunks = collect(ask(tools=[tool]))
    assert chunks[0] == TextChunk("Let me count.")
    assert [c.call for c in chunks if isinstance(c, ToolCallChunk)] == [
        ToolCall("toolu_01", "word-count", {"path": "notes.txt"})]
    assert chunks[-1].usage.output_tokens == 20
    assert server.requests[0]["tools"] == [{"name": "word-count", "description": "Counts words.",
                                           "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]


def test_arguments_that_are_not_json_reach_the_loop_as_text(server):
    server.replies.append({"events": tool_stream("toolu_02", "word-count", '{"path": ', "oops")})
    [call] = [c.call for c in collect(ask()) if isinstance(c, ToolCallChunk)]
    assert call.arguments == '{"path": oops'


def test_thinking_streams_and_its_signed_blocks_are_kept(server):
    events = [start(), block(0, {"type": "thinking", "thinking": "", "signature": ""}),
              delta(0, type="thinking_delta", thinking="Let me "), delta(0, type="thinking_delta", thinking="think."),
              delta(0, type="signature_delta", signature="EqQBCkYIARgCKkBsig=="), stop(0),
              block(1, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}), stop(1),
              block(2, {"type": "text", "text": ""}), delta(2, type="text_delta", text="42"), stop(2), *end()]
    server.replies.append({"events": events})
    chunks = collect(ask(), thinking={"type": "enabled", "budget_tokens": 1024})
    assert chunks[:3] == [ThinkingChunk("Let me "), ThinkingChunk("think."), TextChunk("42")]
    assert chunks[3] == VendorStateChunk({"anthropic": {"thinking": [
        {"type": "thinking", "thinking": "Let me think.", "signature": "EqQBCkYIARgCKkBsig=="},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}]}})
    assert server.requests[0]["thinking"] == {"type": "enabled", "budget_tokens": 1024}


def test_a_resumed_conversation_is_sent_back_as_the_vendor_requires(server):
    """Tool results follow their tool_use in one user turn, paired by id, before any user
    text; signed thinking goes back verbatim, unsigned thinking is left out; an empty
    stopped answer is dropped; another vendor's call ids are made to fit."""
    server.replies.append({"events": text_stream("Done.")})
    signed = {"type": "thinking", "thinking": "Count first.", "signature": "sig=="}
    first, second = ToolCall("toolu_1", "word-count", {"path": "a.txt"}), ToolCall("toolu_2", "word-count", "{bad")
    messages = [
        Message.user("How many words?"),
        Message("assistant", "Counting both.", "Count first.", (first, second),
                meta=MessageMeta(vendor={"anthropic": {"thinking": [signed]}})),
        Message.tool_result(first, "4", False),
        Message.tool_result(second, "arguments are not JSON", True),
        Message.user("And now?"),
        Message("assistant", "", meta=MessageMeta(interrupted=True)),
        Message.user("Still there?"),
        Message("assistant", "Yes.", thinking="unsigned, from another vendor"),
        Message.user("Bye."),
        Message("assistant", "", tool_calls=(ToolCall("fc:1.a", "word-count", {"path": "b.txt"}),)),
        Message.tool_result(ToolCall("fc:1.a", "word-count", {}), "2", False),
    ]
    collect(ask(messages))
    assert server.requests[0]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "How many words?"}]},
        {"role": "assistant", "content": [
            signed,
            {"type": "text", "text": "Counting both."},
            {"type": "tool_use", "id": "toolu_1", "name": "word-count", "input": {"path": "a.txt"}},
            {"type": "tool_use", "id": "toolu_2", "name": "word-count", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "4"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "arguments are not JSON", "is_error": True},
            {"type": "text", "text": "And now?"},
            {"type": "text", "text": "Still there?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Yes."}]},
        {"role": "user", "content": [{"type": "text", "text": "Bye."}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "fc_1_a", "name": "word-count", "input": {"path": "b.txt"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "fc_1_a", "content": "2"}]},
    ]


# -- failures ----------------------------------------------------------------------------------------


def test_a_missing_key_fails_before_any_request(server, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY"):
        collect(ask())
    assert server.requests == []


def test_a_refused_key_is_reported_without_the_key(server):
    server.replies.append({"status": 401, "body": {"type": "error", "error": {
        "type": "authentication_error", "message": f"invalid x-api-key {KEY}"}}})
    with pytest.raises(ProviderError) as caught:
        collect(ask())
    message = str(caught.value)
    assert "refused" in message and "ANTHROPIC_API_KEY" in message and "401" in message
    assert "invalid x-api-key" in message and KEY not in message and "SECRET" not in message


def test_overloaded_529_is_retried_honouring_retry_after(server):
    server.replies += [{"status": 529, "headers": {"retry-after": "1"},
                        "body": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}},
                       {"events": text_stream("ok")}]
    chunks = collect(ask())
    # The wait is the server's 1 s, not the 0.01 s backoff, and the user is told so.
    assert chunks[0] == NoticeChunk("provider:anthropic", "HTTP 529: Overloaded", "retrying (1/3) in 1 s")
    assert chunks[1] == TextChunk("ok") and len(server.requests) == 2


def test_retries_are_bounded_then_the_error_is_clear(server):
    server.replies += [{"status": 529, "body": {"type": "error", "error": {"type": "overloaded_error",
                                                                          "message": "Overloaded"}}}] * 3
    with pytest.raises(ProviderError, match="gave up after 3 attempts: HTTP 529: Overloaded$"):
        collect(ask(), max_retries=2)


def test_a_stream_cut_before_message_stop_is_an_error(server):
    server.replies.append({"events": text_stream("partial")[:5]})
    with pytest.raises(ProviderError, match=r"ended before message_stop.*partial") as raised:
        collect(ask())
    assert str(raised.value).startswith(f"{server.url}/")  # the URL, as every provider error


def test_garbled_json_is_an_error_quoting_it(server):
    server.replies.append({"events": [start(), block(0, {"type": "text", "text": ""}),
                                      '{"type": "content_block_delta", "index": 0, "delta": {"ty']})
    with pytest.raises(ProviderError, match=r"not JSON: .*\"ty") as raised:
        collect(ask())
    assert str(raised.value).startswith(f"{server.url}/")  # the URL, as every provider error


def test_an_error_event_mid_stream_is_reported(server):
    server.replies.append({"events": [start(), block(0, {"type": "text", "text": ""}),
                                      delta(0, type="text_delta", text="a"),
                                      {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}]})
    with pytest.raises(ProviderError, match="error mid-stream: Overloaded$") as raised:
        collect(ask())
    assert str(raised.value).startswith(f"{server.url}/")  # the URL, as every provider error


def test_an_answer_cut_at_max_tokens_is_an_error_not_a_short_answer(server):
    events = text_stream("The first half")
    events[-2]["delta"]["stop_reason"] = "max_tokens"
    server.replies.append({"events": events})
    stream = provider(max_tokens=50).stream(ask(), CancelToken())
    assert next(stream) == TextChunk("The first half")
    with pytest.raises(ProviderError, match=r"cut off at max_tokens \(50\).*providers: anthropic:"):
        next(stream)
    assert server.requests[0]["max_tokens"] == 50


def test_cancel_during_a_slow_stream_stops_at_once(server):
    events = [start(), block(0, {"type": "text", "text": ""}), delta(0, type="text_delta", text="first"),
              *[delta(0, type="text_delta", text=" more")] * 5, stop(0), *end()]
    server.replies.append({"events": events, "delay": 2.0})
    CALLER.assert_cancel_stops_at_once("first")


# -- through the engine ------------------------------------------------------------------------------


def test_a_run_with_thinking_and_a_tool_end_to_end(rig, server):
    """The signed thinking of the tool-use turn goes back before its tool_use, the result is
    paired by id, usage lands in the session, and a resume keeps sending it correctly."""
    counting_agent(rig, "writer", f"anthropic/{MODEL}")
    (rig.home / "config.yaml").write_text("providers:\n  anthropic:\n    thinking: {type: enabled, budget_tokens: 1024}\n")
    server.replies += [
        {"events": tool_stream("toolu_wc", "word-count", '{"path":', ' "notes.txt"}', text="Let me count.",
                               thinking="Use the tool.", signature="c2lnbmVk")},
        {"events": text_stream("There are ", "4 words.", input_tokens=60)},
        {"events": text_stream("You are welcome.", input_tokens=80)},
    ]
    engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    conversation = engine.conversation("writer")
    result = conversation.run("How many words?", NonInteractiveUI())
    assert (result.error, result.text) == (None, "There are 4 words.")
    [(call, answer)] = result.tool_calls
    assert (call.id, call.arguments, answer.text) == ("toolu_wc", {"path": "notes.txt"}, "4")
    thinking = {"type": "thinking", "thinking": "Use the tool.", "signature": "c2lnbmVk"}
    expected = [
        {"role": "user", "content": [{"type": "text", "text": "How many words?"}]},
        {"role": "assistant", "content": [
            thinking, {"type": "text", "text": "Let me count."},
            {"type": "tool_use", "id": "toolu_wc", "name": "word-count", "input": {"path": "notes.txt"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_wc", "content": "4"}]},
    ]
    assert server.requests[1]["messages"] == expected
    assert server.requests[1]["thinking"] == {"type": "enabled", "budget_tokens": 1024}

    assert KEY not in (engine.store.directory / f"{result.session_id}.jsonl").read_text()
    loaded = engine.store.load(result.session_id)
    usages = [(m.usage.input_tokens, m.usage.output_tokens) for m in loaded.messages if m.usage]
    assert usages == [(30, 20), (60, 7)]

    resumed = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox).conversation("writer", result.session_id)
    assert resumed.run("Thanks!", NonInteractiveUI()).text == "You are welcome."
    assert server.requests[2]["messages"] == expected + [
        {"role": "assistant", "content": [{"type": "text", "text": "There are 4 words."}]},
        {"role": "user", "content": [{"type": "text", "text": "Thanks!"}]},
    ]


def test_an_unknown_tool_name_is_an_error_result_the_model_reads_back(rig, server):
    counting_agent(rig, "writer", f"anthropic/{MODEL}")
    server.replies += [{"events": tool_stream("toolu_x", "delete-everything", "{}", text="Sure.")},
                       {"events": text_stream("I cannot do that.")}]
    engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    result = engine.conversation("writer").run("Go", NonInteractiveUI())
    assert (result.reason, result.text) == ("end_turn", "I cannot do that.")
    assert server.requests[1]["messages"][-1] == {"role": "user", "content": [{
        "type": "tool_result", "tool_use_id": "toolu_x", "is_error": True,
        "content": "unknown tool 'delete-everything'; this agent's tools: word-count"}]}
    loaded = engine.store.load(result.session_id)
    assert [m.role for m in loaded.messages] == ["user", "assistant", "tool", "assistant"]


def test_a_cut_answer_keeps_what_arrived_in_the_session(rig, server):
    counting_agent(rig, "writer", f"anthropic/{MODEL}")
    server.replies.append({"events": text_stream("Half an ans")[:5]})
    engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    result = engine.conversation("writer").run("Go", NonInteractiveUI())
    assert result.reason == "error" and "ended before message_stop" in result.error
    [_, partial] = engine.store.load(result.session_id).messages
    assert partial.text == "Half an ans" and partial.meta.error is True


def test_thinking_a_hook_rewrote_is_not_sent_back_under_the_old_signature(rig, server):
    """The signature vouches for the text the vendor sent; once afterModelResponse changed
    that text, the signed block is neither saved nor sent back."""
    rig.write_hook("redact", 'module.exports = { afterModelResponse(ctx, r) {'
                             ' return { thinking: r.thinking.replace("4111111111111111", "[card]") }; } };')
    counting_agent(rig, "writer", f"anthropic/{MODEL}", hooks=("redact",))
    server.replies += [
        {"events": tool_stream("toolu_wc", "word-count", '{"path": "notes.txt"}', thinking="Card 4111111111111111.",
                               signature="c2lnbmVk")},
        {"events": text_stream("Done.")},
    ]
    engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    result = engine.conversation("writer").run("Count", NonInteractiveUI())
    assert result.error is None
    assert server.requests[1]["messages"][1]["content"][0] == {
        "type": "tool_use", "id": "toolu_wc", "name": "word-count", "input": {"path": "notes.txt"}}
    text = (engine.store.directory / f"{result.session_id}.jsonl").read_text()
    assert "4111111111111111" not in text and "c2lnbmVk" not in text
    assert engine.store.load(result.session_id).messages[1].thinking == "Card [card]."


def test_a_length_cut_off_names_the_endpoint_the_user_configured(server):
    configured, _ = provider_for("local/m", {"providers": {"local": {"api": "anthropic", "base_url": server.url,
                                                                      "max_tokens": 20}}})
    events = text_stream("The first half")
    events[-2]["delta"]["stop_reason"] = "max_tokens"
    server.replies.append({"events": events})
    with pytest.raises(ProviderError, match=r"cut off at max_tokens \(20\); raise max_tokens under providers: local: "):
        list(configured.stream(ask(), CancelToken()))


def test_an_agent_max_tokens_overrides_the_endpoint_and_names_itself_when_reached(server):
    events = text_stream("cut")
    events[-2]["delta"]["stop_reason"] = "max_tokens"
    server.replies.append({"events": events})
    request = ask()
    request = type(request)(request.model, request.system, request.messages, options={"max_tokens": 7})
    with pytest.raises(ProviderError, match=r"max_tokens \(7\)"):
        collect(request, max_tokens=50)
    assert server.requests[0]["max_tokens"] == 7


def test_a_stream_of_events_in_no_known_shape_is_an_error_quoting_them(server):
    server.replies.append({"events": ['{"type": "completion", "completion": "Hi there"}',
                                      '{"type": "message_stop"}']})
    with pytest.raises(ProviderError, match=r"held no answer in the Messages format.*\"completion\": \"Hi there\""):
        collect(ask())
