"""The Ollama provider against a real HTTP server on 127.0.0.1.

No maintained Ollama mock server exists offline, so the server replays NDJSON fixtures that
the official ``ollama`` package's types accept: every line it serves and every request body
passes them (see ``vendors.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from ollama._client import _parse_host

from rienda_kernel.engine import NonInteractiveUI
from rienda_kernel.engine.errors import ConfigError, ProviderError
from rienda_kernel.engine.sessions.messages import Message, ToolCall
from rienda_kernel.engine.providers import (
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    ToolSpec,
    UsageChunk,
    provider_for,
)
from rienda_kernel.engine.providers.ollama import OllamaProvider, host_url
from rienda_kernel.engine.runtime.rienda import Rienda

from ...helpers.vendors import fake_ollama
from ...helpers.ports import free_port
from ...helpers.vendor_wire import Caller, counting_agent, serving
from ...helpers.vendor_streams.ollama import MODEL, done, part, text_stream, tool_stream


@pytest.fixture
def server(monkeypatch):
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    with serving(fake_ollama()) as fake:
        monkeypatch.setenv("OLLAMA_HOST", fake.url)
        yield fake


CALLER = Caller(OllamaProvider, MODEL)
provider, ask, collect = CALLER.provider, CALLER.ask, CALLER.collect


# -- streaming -------------------------------------------------------------------------------------------


def test_the_registry_knows_ollama_and_its_options():
    found, name = provider_for(f"ollama/{MODEL}", {})
    assert isinstance(found, OllamaProvider) and name == MODEL
    with pytest.raises(ConfigError, match="options must be a mapping"):
        provider_for("ollama/m", {"providers": {"ollama": {"options": 8192}}})
    with pytest.raises(ConfigError, match="unknown option.*num_ctx"):
        provider_for("ollama/m", {"providers": {"ollama": {"num_ctx": 8192}}})


@pytest.mark.parametrize("host", ["", "1.2.3.4", ":56789", "1.2.3.4:56789", "http://1.2.3.4", "https://1.2.3.4",
                                  "https://1.2.3.4:56789", "example.com", "example.com:56789/", "example.com/path",
                                  "https://example.com:56789/path/", "[0001:002:003:0004::1]",
                                  "[0001:002:003:0004::1]:56789", "0.0.0.0"])
def test_ollama_host_is_read_as_the_ollama_package_reads_it(host):
    assert host_url(host) == _parse_host(host)


def test_text_streams_in_pieces_with_usage(server):
    server.replies.append({"events": text_stream("Hel", "lo", " there")})
    chunks = collect(ask())
    assert chunks == [TextChunk("Hel"), TextChunk("lo"), TextChunk(" there"), UsageChunk(chunks[-1].usage)]
    assert (chunks[-1].usage.input_tokens, chunks[-1].usage.output_tokens) == (26, 9)
    assert server.requests == [{"model": MODEL, "stream": True, "messages": [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], "options": {"num_ctx": 8192}}]
    assert "Authorization" not in server.headers[0]


def test_options_think_and_an_optional_key_are_sent(server, monkeypatch):
    monkeypatch.setenv("OLLAMA_API_KEY", "ollama-key-123")
    server.replies.append({"events": [part("", thinking="Hmm, "), part("", thinking="short."), part("Yes."), done()]})
    chunks = collect(ask(), think=True, options={"num_ctx": 8192, "temperature": 0}, keep_alive="5m")
    assert chunks[:3] == [ThinkingChunk("Hmm, "), ThinkingChunk("short."), TextChunk("Yes.")]
    body = server.requests[0]
    assert (body["think"], body["options"], body["keep_alive"]) == (True, {"num_ctx": 8192, "temperature": 0}, "5m")
    assert server.headers[0]["Authorization"] == "Bearer ollama-key-123"


def test_tool_calls_arrive_whole_and_get_ids(server):
    server.replies.append({"events": [part("Counting."),
                                      part("", tool_calls=[{"function": {"name": "word-count", "arguments": {"path": "a.txt"}}},
                                                           {"function": {"name": "word-count", "arguments": {"path": "b.txt"}}}]),
                                      done(40, 12)]})
    tool = ToolSpec("word-count", "Counts words.", {"type": "object", "properties": {"path": {"type": "string"}}})
    chunks = collect(ask(tools=[tool]))
    assert [c.call for c in chunks if isinstance(c, ToolCallChunk)] == [
        ToolCall("call_0_0", "word-count", {"path": "a.txt"}), ToolCall("call_0_1", "word-count", {"path": "b.txt"})]
    assert server.requests[0]["tools"] == [{"type": "function", "function": {
        "name": "word-count", "description": "Counts words.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]


def test_a_multi_turn_conversation_sends_tool_results_back_by_name(server):
    server.replies.append({"events": text_stream("Done.")})
    first, second = ToolCall("call_0_0", "word-count", {"path": "a.txt"}), ToolCall("call_0_1", "stat", "{bad")
    messages = [Message.user("How many?"),
                Message("assistant", "Counting.", "I should count.", (first, second)),
                Message.tool_result(first, "4", False),
                Message.tool_result(second, "arguments are not JSON", True),
                Message.user("Thanks")]
    chunks = collect(ask(messages))
    assert server.requests[0]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "How many?"},
        {"role": "assistant", "content": "Counting.", "thinking": "I should count.", "tool_calls": [
            {"function": {"name": "word-count", "arguments": {"path": "a.txt"}}},
            {"function": {"name": "stat", "arguments": {}}}]},
        {"role": "tool", "content": "4", "tool_name": "word-count"},
        {"role": "tool", "content": "arguments are not JSON", "tool_name": "stat"},
        {"role": "user", "content": "Thanks"},
    ]
    assert chunks[0] == TextChunk("Done.")


def test_a_call_in_a_later_turn_gets_an_id_of_its_own(server):
    server.replies.append({"events": tool_stream("word-count", {"path": "c.txt"})})
    earlier = ToolCall("call_0_0", "word-count", {"path": "a.txt"})
    messages = [Message.user("Count"), Message("assistant", "", tool_calls=(earlier,)),
                Message.tool_result(earlier, "4", False)]
    [call] = [c.call for c in collect(ask(messages)) if isinstance(c, ToolCallChunk)]
    assert call.id == "call_1_0"


# -- failures ---------------------------------------------------------------------------------------------


def test_a_missing_model_is_reported_as_ollama_says_and_not_retried(server):
    server.replies.append({"status": 404, "body": {"error": f'model "{MODEL}" not found, try pulling it first'}})
    with pytest.raises(ProviderError, match=r'HTTP 404: model "qwen3:0.6b" not found, try pulling it first$'):
        collect(ask())
    assert len(server.requests) == 1


def test_server_errors_are_retried_then_reported(server):
    server.replies += [{"status": 503, "headers": {"Retry-After": "0"}, "body": {"error": "server busy"}}] * 3
    with pytest.raises(ProviderError, match="gave up after 3 attempts: HTTP 503: server busy$"):
        collect(ask(), max_retries=2)
    assert len(server.requests) == 3


def test_no_server_says_how_to_start_one(monkeypatch):
    url = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    with pytest.raises(ProviderError, match="cannot connect.*ollama serve.*OLLAMA_HOST"):
        collect(ask(), base_url=url, max_retries=1)


def test_an_error_line_mid_stream_is_reported(server):
    server.replies.append({"events": [part("a"), {"error": "an error was encountered while running the model: out of memory"}]})
    with pytest.raises(ProviderError, match="mid-stream: an error was encountered.*out of memory$"):
        collect(ask())


def test_a_stream_cut_before_done_is_an_error(server):
    server.replies.append({"events": [part("par"), part("tial")]})
    with pytest.raises(ProviderError, match=r"ended before the line with done: true.*tial") as raised:
        collect(ask())
    assert str(raised.value).startswith(f"{server.url}/")  # the URL, as every provider error


def test_a_garbled_line_is_an_error_quoting_it(server):
    server.replies.append({"events": [part("a"), '{"model": "qwen3", "message": {"con']})
    with pytest.raises(ProviderError, match=r"not JSON: .*\"con") as raised:
        collect(ask())
    assert str(raised.value).startswith(f"{server.url}/")  # the URL, as every provider error


def test_an_answer_cut_at_the_length_limit_is_an_error(server):
    server.replies.append({"events": [part("The first half"), done(reason="length")]})
    with pytest.raises(ProviderError, match="cut off.*done_reason: length.*max_tokens.*num_predict.*providers: ollama:"):
        collect(ask())


def test_cancel_during_a_slow_stream_stops_at_once(server):
    server.replies.append({"events": [part("first"), *[part(" more")] * 5, done()], "delay": 2.0})
    CALLER.assert_cancel_stops_at_once("first")


# -- through the engine -------------------------------------------------------------------------------------


def test_a_run_end_to_end_through_rienda(rig, server):
    counting_agent(rig, "local", f"ollama/{MODEL}")
    server.replies += [{"events": tool_stream("word-count", {"path": "notes.txt"}, text="Let me count.")},
                       {"events": text_stream("There are ", "4 words.")}]
    engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    result = engine.conversation("local").run("How many words?", NonInteractiveUI())
    assert (result.error, result.text) == (None, "There are 4 words.")
    [(call, answer)] = result.tool_calls
    assert (call.arguments, answer.text) == ({"path": "notes.txt"}, "4")
    assert server.requests[1]["messages"][1:] == [
        {"role": "user", "content": "How many words?"},
        {"role": "assistant", "content": "Let me count.", "tool_calls": [
            {"function": {"name": "word-count", "arguments": {"path": "notes.txt"}}}]},
        {"role": "tool", "content": "4", "tool_name": "word-count"},
    ]
    usages = [(m.usage.input_tokens, m.usage.output_tokens) for m in engine.store.load(result.session_id).messages if m.usage]
    assert usages == [(40, 12), (26, 9)]
    shown = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "show", "last"], capture_output=True, text=True,
                           env={**os.environ, "RIENDA_HOME": str(rig.home)}, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "  usage: 40 in, 12 out" in shown.stdout and "  usage: 26 in, 9 out" in shown.stdout
    assert shown.stdout.rstrip().endswith("usage: 66 in, 21 out over 2 model turns")


def test_lines_without_a_message_are_an_error_quoting_them_not_an_empty_answer(rig, server):
    """What an /api/generate translator streams (``response``) where /api/chat lines belong."""
    counting_agent(rig, "local", f"ollama/{MODEL}")
    server.replies.append({"events": ['{"model": "qwen3", "response": "Hel", "done": false}',
                                      '{"model": "qwen3", "response": "lo", "done": false}',
                                      '{"model": "qwen3", "response": "", "done": true, "eval_count": 0}']})
    engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    result = engine.conversation("local").run("Hi", NonInteractiveUI())
    assert result.reason == "error"
    assert "held no answer in the /api/chat format (message.content)" in result.error
    assert '"response": ""' in result.error and "done" in result.error
