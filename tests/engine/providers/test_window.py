"""Each model's context window (``providers/window.py``): configured, asked of the server, or
from the table; and the ``num_ctx`` every Ollama request carries, checked on the request
body an emulated Ollama server (the ``ollama`` package's types) receives."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from rienda_kernel.engine.errors import ConfigError, ContextOverflow, ProviderError
from rienda_kernel.engine.providers import provider_for
from rienda_kernel.engine.providers.ollama import OllamaProvider
from rienda_kernel.engine.providers.openai import OpenAIProvider
from rienda_kernel.engine.providers.window import OLLAMA_WINDOW, Window, known_window, llama_props

from ...helpers.vendor_streams.ollama import MODEL, done, part, text_stream
from ...helpers.vendor_wire import Caller, serving
from ...helpers.vendors import fake_ollama, fake_openai, ollama_show

CALLER = Caller(OllamaProvider, MODEL)


@pytest.fixture
def ollama(monkeypatch):
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    with serving(fake_ollama()) as fake:
        monkeypatch.setenv("OLLAMA_HOST", fake.url)
        yield fake


@pytest.mark.parametrize("model, tokens", [
    ("gpt-4o", 128_000), ("gpt-4o-2024-08-06", 128_000), ("gpt-4o-mini", 128_000), ("gpt-4", 8_192),
    ("gpt-4-0613", 8_192), ("gpt-4.1-mini-2025-04-14", 1_047_576), ("o3-mini", 200_000),
    ("claude-sonnet-4-5", 200_000), ("claude-3-5-haiku-20241022", 200_000), ("gpt-5", 400_000),
])
def test_the_table_knows_the_vendors_models_and_their_snapshots(model, tokens):
    assert known_window(model) == Window(tokens, "table")


@pytest.mark.parametrize("model", ["gpt-4oo", "smollm2", "qwen3:0.6b", "o", "claude"])
def test_a_model_the_table_does_not_list_is_unknown(model):
    assert known_window(model) is None


def test_context_window_is_an_option_of_every_endpoint_and_agent(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    provider, name = provider_for("openai/gpt-4o", {"providers": {"openai": {"context_window": 32_000}}})
    assert provider.context_window(name, {}) == Window(32_000, "config")
    assert provider.context_window(name, {"context_window": 16_000}) == Window(16_000, "config")  # the agent's wins
    provider.preflight(name, {"context_window": 16_000}, "agents/a.md", workdir=Path("."))
    with pytest.raises(ConfigError, match=r"agents/a.md: options: option context_window must be a whole number"):
        provider.preflight(name, {"context_window": "big"}, "agents/a.md", workdir=Path("."))
    with pytest.raises(ConfigError, match=r"unknown option\(s\) context_windw \(did you mean context_window\?\)"):
        provider_for("local/m", {"providers": {"local": {"api": "openai", "base_url": "http://x", "context_windw": 1}}})


def test_the_vendors_own_url_is_never_asked_and_the_table_answers(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert OpenAIProvider().context_window("gpt-4o-mini", {}) == Window(128_000, "table")
    assert OpenAIProvider().context_window("my-finetune", {}) is None


def test_a_server_without_props_is_unknown():
    with serving(fake_openai()) as server:  # answers GET /props with 404, as vLLM does
        provider = OpenAIProvider(base_url=server.url)
        assert provider.context_window("served-model", {}) is None
        assert provider.context_window("gpt-4o", {}) == Window(128_000, "table")


def test_a_server_that_never_answers_props_is_unknown_within_the_bound():
    listener = socket.create_server(("127.0.0.1", 0))  # accepts, reads, never answers
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(listener.accept()[0]), daemon=True).start()
    try:
        assert llama_props(f"http://127.0.0.1:{listener.getsockname()[1]}/v1") is None
    finally:
        for connection in held:
            connection.close()
        listener.close()


# -- Ollama: an explicit num_ctx in every request --------------------------------------------------


def _num_ctx(server, **options) -> int:
    server.replies.append({"events": text_stream("Hi.")})
    CALLER.collect(CALLER.ask(), **options)
    return server.requests[-1]["options"]["num_ctx"]


def test_ollama_gets_the_models_length_up_to_the_default_window(ollama):
    assert _num_ctx(ollama) == OLLAMA_WINDOW == 8192
    assert ollama.asked == [("/api/show", {"model": MODEL})]
    ollama.posts["/api/show"] = ollama_show(context_length=2048)  # a model trained for less
    assert _num_ctx(ollama) == 2048


def test_ollama_gets_the_num_ctx_its_modelfile_sets(ollama):
    ollama.posts["/api/show"] = ollama_show(parameters='num_ctx                        32768\nstop "<|im_end|>"')
    assert _num_ctx(ollama) == 32768
    provider = CALLER.provider()
    assert provider.context_window(MODEL, {}) == Window(32768, "server")


def test_ollama_gets_the_configured_window_without_asking(ollama):
    assert _num_ctx(ollama, context_window=16_384) == 16_384
    assert _num_ctx(ollama, options={"num_ctx": 4096, "temperature": 0}) == 4096
    assert ollama.requests[-1]["options"] == {"num_ctx": 4096, "temperature": 0}
    assert ollama.asked == []


def test_ollama_that_does_not_answer_show_gets_the_default_window(ollama):
    ollama.posts["/api/show"] = lambda body: (404, {"error": f"model '{body['model']}' not found"})
    assert _num_ctx(ollama) == OLLAMA_WINDOW
    assert CALLER.provider().context_window(MODEL, {}) == Window(OLLAMA_WINDOW, "default")


def test_an_ollama_answer_cut_off_when_it_filled_num_ctx_is_an_overflow(ollama):
    ollama.replies.append({"events": [part("hello hello"), done(prompt=8150, output=42, reason="length")]})
    with pytest.raises(ContextOverflow) as raised:
        CALLER.collect(CALLER.ask())
    assert (raised.value.tokens, raised.value.window) == (8192, 8192)
    assert str(raised.value) == (f"{ollama.url}/api/chat: the answer was cut off when the request and the answer "
                                 "filled the context window (8192 of 8192 tokens)")
    ollama.replies.append({"events": [part("hello"), done(prompt=100, output=42, reason="length")]})  # num_predict
    with pytest.raises(ProviderError, match="cut off at the model's length limit") as raised:
        CALLER.collect(CALLER.ask())
    assert not isinstance(raised.value, ContextOverflow)
