"""One session, resumed with each vendor in turn: the saved conversation (a tool call and its
result included) goes to each in that vendor's own shape, checked by its official types."""

from __future__ import annotations

import pytest

from rienda_kernel.engine import NonInteractiveUI
from rienda_kernel.engine.runtime.rienda import Rienda

from ...helpers.vendor_streams import anthropic as anthropic_wire
from ...helpers.vendor_streams import ollama as ollama_wire
from ...helpers.vendor_streams import openai as openai_wire
from ...helpers.vendor_wire import counting_agent
from ...helpers.vendors import fake_anthropic, fake_ollama, fake_openai


@pytest.fixture
def servers(monkeypatch):
    started = {"openai": fake_openai(), "anthropic": fake_anthropic(), "ollama": fake_ollama()}
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_BASE_URL", started["openai"].url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", started["anthropic"].url)
    monkeypatch.setenv("OLLAMA_HOST", started["ollama"].url)
    yield started
    for server in started.values():
        server.close()
    assert {name: server.problems for name, server in started.items()} == {name: [] for name in started}


def test_a_session_begun_with_openai_resumes_with_anthropic_then_ollama(rig, servers):
    counting_agent(rig, "writer", "openai/gpt-4o-mini")
    servers["openai"].replies += [
        {"events": openai_wire.tool_stream("call_wc.1", "word-count", '{"path": "notes.txt"}', text="Counting.")},
        {"events": openai_wire.text_stream("Four words.")}]
    engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    first = engine.conversation("writer").run("How many words?", NonInteractiveUI())
    assert (first.error, first.text) == (None, "Four words.")

    servers["anthropic"].replies.append({"events": anthropic_wire.text_stream("Still four.")})
    again = engine.conversation("writer", first.session_id, model="anthropic/claude-sonnet-4-5")
    assert again.run("Sure?", NonInteractiveUI()).text == "Still four."
    assert servers["anthropic"].requests[0]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "How many words?"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Counting."},
            {"type": "tool_use", "id": "call_wc_1", "name": "word-count", "input": {"path": "notes.txt"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_wc_1", "content": "4"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Four words."}]},
        {"role": "user", "content": [{"type": "text", "text": "Sure?"}]},
    ]

    servers["ollama"].replies.append({"events": ollama_wire.text_stream("Yes, four.")})
    last = engine.conversation("writer", first.session_id, model="ollama/qwen3")
    assert last.run("Really?", NonInteractiveUI()).text == "Yes, four."
    assert servers["ollama"].requests[0]["messages"][1:] == [
        {"role": "user", "content": "How many words?"},
        {"role": "assistant", "content": "Counting.", "tool_calls": [
            {"function": {"name": "word-count", "arguments": {"path": "notes.txt"}}}]},
        {"role": "tool", "content": "4", "tool_name": "word-count"},
        {"role": "assistant", "content": "Four words."},
        {"role": "user", "content": "Sure?"},
        {"role": "assistant", "content": "Still four."},
        {"role": "user", "content": "Really?"},
    ]
    roles = [m.role for m in engine.store.load(first.session_id).messages]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant", "user", "assistant"]
