"""The OpenAI provider against a real HTTP server on 127.0.0.1.

The server replays Chat Completions streams; every chunk it serves and every request it
receives passes the official ``openai`` package's types (see ``vendors.py``), so the
fixtures are the vendor's wire format, not one we made up.
"""

from __future__ import annotations

import threading

import pytest

from rienda_kernel.engine import CancelToken, NonInteractiveUI
from rienda_kernel.engine.errors import ConfigError, Interrupted, ProviderError
from rienda_kernel.engine.sessions.messages import Message, ToolCall, Usage
from rienda_kernel.engine.providers import (
    NoticeChunk,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    ToolSpec,
    UsageChunk,
    provider_for,
)
from rienda_kernel.engine.providers.openai import OpenAIProvider
from rienda_kernel.engine.runtime.rienda import Rienda

from ...helpers.vendors import fake_openai
from ...helpers.ports import free_port
from ...helpers.vendor_wire import Caller, counting_agent, serving
from ...helpers.vendor_streams.openai import chunk, text_stream, tool_stream, usage

KEY = "sk-test-SECRET-0123456789abcdef"


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with serving(fake_openai()) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
        yield fake


CALLER = Caller(OpenAIProvider, "gpt-4o-mini")
provider, ask, collect = CALLER.provider, CALLER.ask, CALLER.collect


def test_the_registry_knows_openai():
    found, name = provider_for("openai/gpt-4o-mini", {})
    assert isinstance(found, OpenAIProvider) and name == "gpt-4o-mini"


def test_text_streams_in_pieces_with_usage(server):
    server.replies.append({"events": text_stream("Hel", "lo", " there")})
    chunks = collect(ask())
    assert chunks == [TextChunk("Hel"), TextChunk("lo"), TextChunk(" there"), UsageChunk(chunks[-1].usage)]
    assert chunks[-1].usage.input_tokens == 10 and chunks[-1].usage.output_tokens == 3
    [body] = server.requests
    assert body["model"] == "gpt-4o-mini" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert "tools" not in body
    assert server.headers[0]["Authorization"] == f"Bearer {KEY}"


def test_a_tool_call_is_assembled_from_pieces(server):
    server.replies.append({"events": tool_stream("call_abc", "word-count", '{"pa', 'th": "no', 'tes.txt"}')})
    tool = ToolSpec("word-count", "Counts words.", {"type": "object", "properties": {"path": {"type": "string"}}})
    chunks = collect(ask(tools=[tool]))
    calls = [c.call for c in chunks if isinstance(c, ToolCallChunk)]
    assert calls == [ToolCall("call_abc", "word-count", {"path": "notes.txt"})]
    assert isinstance(chunks[-1], UsageChunk) and chunks[-1].usage.input_tokens == 20
    assert server.requests[0]["tools"] == [{"type": "function", "function": {
        "name": "word-count", "description": "Counts words.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]


def test_two_parallel_tool_calls_and_arguments_that_are_not_json(server):
    events = [chunk({"role": "assistant", "content": None}),
              chunk({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "a", "arguments": "{\"x\":"}}]}),
              chunk({"tool_calls": [{"index": 1, "id": "c2", "type": "function", "function": {"name": "b", "arguments": "{oops"}}]}),
              chunk({"tool_calls": [{"index": 0, "function": {"arguments": " 1}"}}]}),
              chunk({}, "tool_calls")]
    server.replies.append({"events": events})
    calls = [c.call for c in collect(ask()) if isinstance(c, ToolCallChunk)]
    assert calls == [ToolCall("c1", "a", {"x": 1}), ToolCall("c2", "b", "{oops")]


def test_reasoning_content_becomes_thinking(server):
    events = [chunk({"role": "assistant", "content": None, "reasoning_content": "Let me "}),
              chunk({"reasoning_content": "think."}), chunk({"content": "42"}), chunk({}, "stop")]
    server.replies.append({"events": events})
    assert collect(ask()) == [ThinkingChunk("Let me "), ThinkingChunk("think."), TextChunk("42")]


def test_a_multi_turn_conversation_sends_the_tool_result_back(server):
    server.replies.append({"events": text_stream("There are 4 words.")})
    call = ToolCall("call_1", "word-count", {"path": "notes.txt"})
    messages = [Message.user("How many words?"),
                Message("assistant", "Let me count.", thinking="hmm", tool_calls=(call,)),
                Message.tool_result(call, "4", False),
                Message("assistant", "", tool_calls=(ToolCall("call_2", "word-count", "{bad"),)),
                Message.tool_result(ToolCall("call_2", "word-count", "{bad"), "arguments are not JSON", True),
                Message.user("Thanks; and again?")]
    collect(ask(messages))
    assert server.requests[0]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "How many words?"},
        {"role": "assistant", "content": "Let me count.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "word-count", "arguments": '{"path": "notes.txt"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "4"},
        {"role": "assistant", "content": "", "tool_calls": [  # never null: some servers answer 500
            {"id": "call_2", "type": "function", "function": {"name": "word-count", "arguments": "{bad"}}]},
        {"role": "tool", "tool_call_id": "call_2", "content": "arguments are not JSON"},
        {"role": "user", "content": "Thanks; and again?"},
    ]


def test_a_missing_key_fails_before_any_request(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ProviderError, match="OPENAI_API_KEY"):
        collect(ask())
    assert server.requests == []


def test_a_refused_key_is_reported_without_the_key(server):
    server.replies.append({"status": 401, "body": {"error": {
        "message": f"Incorrect API key provided: {KEY}. You can find your API key at https://platform.openai.com.",
        "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}})
    with pytest.raises(ProviderError) as caught:
        collect(ask())
    message = str(caught.value)
    assert "refused" in message and "OPENAI_API_KEY" in message and "401" in message
    assert KEY not in message and "SECRET" not in message
    assert len(server.requests) == 1


def test_429_waits_for_retry_after_then_succeeds(server):
    server.replies += [{"status": 429, "headers": {"Retry-After": "1"},
                        "body": {"error": {"message": "Rate limit reached", "type": "requests"}}},
                       {"events": text_stream("ok")}]
    chunks = collect(ask())
    # The wait is the server's 1 s, not the 0.01 s backoff, and the user is told so.
    assert chunks[0] == NoticeChunk("provider:openai", "HTTP 429: Rate limit reached", "retrying (1/3) in 1 s")
    assert chunks[1] == TextChunk("ok") and len(server.requests) == 2


def test_500_retries_are_bounded_then_the_error_is_clear(server):
    server.replies += [{"status": 500, "body": {"error": {"message": "The server had an error while processing"}}}] * 4
    with pytest.raises(ProviderError) as caught:
        collect(ask(), max_retries=3)
    message = str(caught.value)
    assert "HTTP 500" in message and "The server had an error while processing" in message and "4 attempts" in message
    assert len(server.requests) == 4


def test_a_400_is_not_retried(server):
    server.replies.append({"status": 400, "body": {"error": {"message": "Unknown model gpt-9"}}})
    with pytest.raises(ProviderError, match="HTTP 400: Unknown model gpt-9$"):
        collect(ask())
    assert len(server.requests) == 1


def test_connection_errors_are_retried_then_reported(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    url = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    with pytest.raises(ProviderError, match="gave up after 3 attempts: cannot connect"):
        collect(ask(), base_url=url, max_retries=2)


def test_a_stream_cut_before_done_is_an_error(server):
    server.replies.append({"events": text_stream("partial")[:2], "done": False})
    with pytest.raises(ProviderError, match=r"ended before data: \[DONE\].*partial") as raised:
        collect(ask())
    assert str(raised.value).startswith(f"{server.url}/")  # the URL, as every provider error


def test_garbled_json_is_an_error_quoting_it(server):
    server.replies.append({"events": [chunk({"content": "a"}), '{"id": "x", "choices": [{"delta": {"con'], "done": True})
    with pytest.raises(ProviderError, match=r"not JSON: .*\"con") as raised:
        collect(ask())
    assert str(raised.value).startswith(f"{server.url}/")  # the URL, as every provider error


def test_an_error_event_mid_stream_is_reported(server):
    server.replies.append({"events": [chunk({"content": "a"}), '{"error": {"message": "overloaded", "type": "server_error"}}']})
    with pytest.raises(ProviderError, match="overloaded"):
        collect(ask())


def test_cancel_during_a_slow_stream_stops_at_once(server):
    events = [chunk({"role": "assistant", "content": "first"}), *[chunk({"content": " more"})] * 5, chunk({}, "stop")]
    server.replies.append({"events": events, "delay": 2.0})
    CALLER.assert_cancel_stops_at_once("first")


def test_cancel_during_a_retry_wait_stops_at_once(server):
    server.replies.append({"status": 429, "headers": {"Retry-After": "30"}, "body": {"error": {"message": "slow down"}}})
    cancel = CancelToken()
    stream = provider().stream(ask(), cancel)
    assert next(stream).body == "retrying (1/3) in 30 s"
    threading.Timer(0.3, cancel.cancel).start()
    with pytest.raises(Interrupted):
        next(stream)
    assert len(server.requests) == 1  # stopped during the wait: no second attempt


def test_a_run_end_to_end_through_rienda(rig, server):
    counting_agent(rig, "writer", "openai/gpt-4o-mini")
    server.replies += [{"events": tool_stream("call_wc", "word-count", '{"path":', ' "notes.txt"}', text="Let me count.")},
                       {"events": text_stream("There are ", "4 words.")}]
    engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    result = engine.conversation("writer").run("How many words?", NonInteractiveUI())
    assert result.error is None and result.reason == "end_turn"
    assert result.text == "There are 4 words."
    [(call, answer)] = result.tool_calls
    assert (call.id, call.arguments, answer.text, answer.is_error) == ("call_wc", {"path": "notes.txt"}, "4", False)
    second = server.requests[1]["messages"]
    assert second[0]["role"] == "system" and "Be careful." in second[0]["content"]
    assert second[1:] == [
        {"role": "user", "content": "How many words?"},
        {"role": "assistant", "content": "Let me count.", "tool_calls": [
            {"id": "call_wc", "type": "function", "function": {"name": "word-count", "arguments": '{"path": "notes.txt"}'}}]},
        {"role": "tool", "tool_call_id": "call_wc", "content": "4"},
    ]
    assert server.requests[1]["tools"][0]["function"]["name"] == "word-count"


def test_a_named_endpoint_in_config_is_one_entry_away(server, monkeypatch):
    """providers: local: {api: openai, base_url, api_key_env} makes model local/<name> work."""
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    config = {"providers": {"local": {"api": "openai", "base_url": server.url, "api_key_env": None}}}
    found, name = provider_for("local/qwen2.5", config)
    assert name == "qwen2.5"
    server.replies.append({"events": text_stream("local", " answer")})
    chunks = list(found.stream(ask(), CancelToken()))
    assert [c.text for c in chunks if isinstance(c, TextChunk)] == ["local", " answer"]
    assert "Authorization" not in server.headers[0]
    with pytest.raises(ConfigError, match="api 'gemini' is not available"):
        provider_for("box/m", {"providers": {"box": {"api": "gemini"}}})
    with pytest.raises(ConfigError, match="unknown option"):
        provider_for("box/m", {"providers": {"box": {"api": "openai", "base_ur": "typo"}}})
    with pytest.raises(ConfigError, match="no provider named 'nowhere'"):
        provider_for("nowhere/m", config)


def test_an_answer_cut_at_the_length_limit_is_an_error_not_a_short_answer(server):
    events = [chunk({"role": "assistant", "content": "The first half"}), chunk({}, "length"), usage(10, 4096)]
    server.replies.append({"events": events})
    stream = provider().stream(ask(), CancelToken())
    assert next(stream) == TextChunk("The first half")
    with pytest.raises(ProviderError, match=r"cut off at the model's length limit \(finish_reason: length\)"):
        next(stream)


def test_a_server_that_stops_sending_hits_the_configured_read_timeout(server):
    configured, _ = provider_for("openai/gpt-4o-mini", {"providers": {"openai": {"read_timeout": 0.5}}})
    server.replies.append({"events": [chunk({"role": "assistant", "content": "first"}), chunk({}, "stop")], "delay": 3.0})
    stream = configured.stream(ask(), CancelToken())
    assert next(stream) == TextChunk("first")
    # The next chunk comes 3 s later: only the configured 0.5 s timeout ends the wait first.
    with pytest.raises(ProviderError, match="no data from the server within the 0.5 s read timeout"):
        next(stream)


# -- what real servers send -------------------------------------------------------------------------

PYDANTIC_500 = ("1 validation error for ChatCompletionRequestAssistantMessage\ncontent\n"
                "  Input should be a valid string [type=string_type, input_value=None, input_type=NoneType]")


def test_a_500_saying_the_request_is_invalid_is_not_retried_and_reads_plainly(server):
    server.replies.append({"status": 500, "body": {"error": {"message": PYDANTIC_500, "type": "internal_server_error"}}})
    with pytest.raises(ProviderError) as caught:
        collect(ask(), max_retries=3)
    assert len(server.requests) == 1  # sending it again cannot help
    assert str(caught.value).endswith(
        "HTTP 500: 1 validation error for ChatCompletionRequestAssistantMessage content Input should be a valid "
        "string [type=string_type, input_value=None, input_type=NoneType]")


def test_a_long_server_error_is_cut_short_on_one_line(server):
    server.replies.append({"status": 400, "body": {"error": {"message": "word\n" * 200, "type": "invalid_request_error"}}})
    with pytest.raises(ProviderError) as caught:
        collect(ask())
    message = str(caught.value).split("HTTP 400: ", 1)[1]
    assert len(message) == 200 and message.endswith("…") and "\n" not in message and "\\n" not in message


def test_lone_surrogates_from_the_server_become_replacement_characters(server):
    server.replies.append({"events": [chunk({"role": "assistant", "content": "a\ud83d"}),
                                      chunk({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                                             "function": {"name": "n", "arguments": '{"q": "\\udc00b"}'}}]}),
                                      chunk({}, "tool_calls")]})
    chunks = collect(ask())
    assert chunks[0] == TextChunk("a\ufffd")
    assert chunks[1] == ToolCallChunk(ToolCall("c1", "n", {"q": "\ufffdb"}))
    "".join([chunks[0].text, chunks[1].call.arguments["q"]]).encode("utf-8")  # encodable: no surrogate left


def test_a_stream_in_another_format_is_an_error_quoting_it_not_an_empty_answer(server):
    # Legacy Completions chunks (choices[].text) where Chat Completions deltas belong.
    server.replies.append({"events": ['{"id": "c", "object": "text_completion", "choices": [{"text": "Hi", "index": 0}]}',
                                      '{"id": "c", "object": "text_completion", "choices": [{"text": "!", "index": 0}]}']})
    with pytest.raises(ProviderError, match=r"held no answer in the Chat Completions format.*it sent: .*\"text\": \"Hi\""):
        collect(ask())


def test_an_empty_answer_in_the_right_format_is_an_empty_answer(server):
    server.replies.append({"events": [chunk({"role": "assistant", "content": ""}), chunk({}, "stop"), usage(5, 1)]})
    assert collect(ask()) == [UsageChunk(Usage(5, 1))]


def test_a_length_cut_off_names_the_endpoint_the_user_configured(server, monkeypatch):
    configured, _ = provider_for("local/m", {"providers": {"local": {"api": "openai", "base_url": server.url}}})
    server.replies.append({"events": [chunk({"role": "assistant", "content": "The first"}), chunk({}, "length")]})
    with pytest.raises(ProviderError, match=r"finish_reason: length\); raise max_tokens under providers: local: "):
        list(configured.stream(ask(), CancelToken()))


def test_tool_choice_is_sent_only_with_tools(server):
    server.replies += [{"events": text_stream("a")}, {"events": text_stream("b")}]
    tool = ToolSpec("word-count", "Counts words.", {"type": "object", "properties": {}})
    collect(ask(), tool_choice="required")
    collect(ask(tools=[tool]), tool_choice="required")
    assert "tool_choice" not in server.requests[0] and server.requests[1]["tool_choice"] == "required"


def test_the_provider_goes_through_the_one_client_whose_transport_a_test_can_swap(monkeypatch):
    """engine.http.use_transport reaches the providers too (httpx's MockTransport here):
    the stream is read from it, no network involved."""
    import json

    import httpx

    from rienda_kernel.engine import http

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://nowhere.invalid/v1")
    seen = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, str(request.url), request.headers["authorization"]))
        body = "".join(f"data: {json.dumps(event)}\n\n" for event in text_stream("Hel", "lo")) + "data: [DONE]\n\n"
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=body)

    http.use_transport(httpx.MockTransport(answer))
    try:
        chunks = CALLER.collect(CALLER.ask())
    finally:
        http.use_transport(None)
    assert [c.text for c in chunks if isinstance(c, TextChunk)] == ["Hel", "lo"]
    assert seen == [("POST", "http://nowhere.invalid/v1/chat/completions", f"Bearer {KEY}")]
