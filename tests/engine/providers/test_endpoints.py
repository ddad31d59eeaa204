"""Endpoints as a user configures them: keys, request options, retry notices, the
errors a server's reply deserves. Every request goes to a real HTTP server on 127.0.0.1
speaking the vendor's format (``vendors.py``), through the engine as a run uses it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from rienda_kernel.engine import NonInteractiveUI, Notify
from rienda_kernel.engine.errors import ConfigError, ProviderError
from rienda_kernel.engine.providers import provider_for
from rienda_kernel.engine.runtime.rienda import Rienda

from ...helpers.ports import free_port
from ...helpers.vendor_streams.anthropic import text_stream as anthropic_text
from ...helpers.vendor_streams.ollama import done, part
from ...helpers.vendor_streams.openai import text_stream as openai_text
from ...helpers.vendor_wire import serving
from ...helpers.vendors import fake_anthropic, fake_ollama, fake_openai


@pytest.fixture
def keyless(monkeypatch):
    """No vendor key and no base URL in the environment."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_API_KEY", "LOCAL_API_KEY",
                 "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)


def configure(rig, endpoints: dict, agent_options: dict | None = None, model: str = "local/m") -> Rienda:
    """config.yaml with ``endpoints`` under providers:, and agent ``a`` on ``model``."""
    (rig.home / "config.yaml").write_text(yaml.safe_dump({"providers": endpoints}))
    front = {"description": "A test agent.", "model": model, "tools": []}
    if agent_options is not None:
        front["options"] = agent_options
    path = rig.home / "agents" / "a.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{yaml.safe_dump(front)}---\nBe brief.\n")
    return Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)


# -- keys ----------------------------------------------------------------------------------------


def test_an_endpoint_with_its_own_base_url_needs_no_key(rig, keyless):
    with serving(fake_openai()) as server:
        engine = configure(rig, {"local": {"api": "openai", "base_url": server.url}})
        server.replies.append({"events": openai_text("hello")})
        result = engine.conversation("a").run("Hi", NonInteractiveUI())
    assert (result.reason, result.error, result.text) == ("end_turn", None, "hello")
    assert "Authorization" not in server.headers[0]


def test_a_configured_key_variable_that_is_unset_fails_before_the_session_file(rig, keyless):
    with serving(fake_openai()) as server:
        engine = configure(rig, {"local": {"api": "openai", "base_url": server.url, "api_key_env": "LOCAL_API_KEY"}})
        result = engine.conversation("a").run("Hi", NonInteractiveUI())
    assert result.reason == "error" and "set the environment variable LOCAL_API_KEY" in result.error
    assert server.requests == [] and engine.sessions() == []


def test_the_configured_key_is_sent_to_the_endpoint(rig, keyless, monkeypatch):
    monkeypatch.setenv("LOCAL_API_KEY", "sk-local-0123456789")
    with serving(fake_openai()) as server:
        engine = configure(rig, {"local": {"api": "openai", "base_url": server.url, "api_key_env": "LOCAL_API_KEY"}})
        server.replies.append({"events": openai_text("ok")})
        assert engine.conversation("a").run("Hi", NonInteractiveUI()).reason == "end_turn"
    assert server.headers[0]["Authorization"] == "Bearer sk-local-0123456789"


def test_the_vendor_default_still_demands_its_key_before_any_file(rig, keyless):
    engine = configure(rig, {}, model="openai/gpt-4o-mini")
    result = engine.conversation("a").run("Hi", NonInteractiveUI())
    assert result.reason == "error" and "OPENAI_API_KEY" in result.error
    assert engine.sessions() == []


# -- request options -------------------------------------------------------------------------------

TOOL = """module.exports = { description: "Counts words.", parameters: { type: "object" },
  execute: function () { return "4"; } };"""


def test_openai_options_from_the_endpoint_and_the_agent_which_wins(rig, keyless):
    rig.write_tool("word-count", TOOL)
    with serving(fake_openai()) as server:
        endpoint = {"api": "openai", "base_url": server.url, "max_tokens": 64, "temperature": 0.2,
                    "stop": "END", "extra_body": {"seed": 7}}
        engine = configure(rig, {"local": endpoint}, {"max_tokens": 16, "tool_choice": "word-count", "top_p": 0.9})
        (rig.home / "agents" / "a.md").write_text((rig.home / "agents" / "a.md").read_text().replace(
            "tools: []", "tools: [word-count]"))
        server.replies.append({"events": openai_text("ok")})
        assert engine.conversation("a").run("Hi", NonInteractiveUI()).reason == "end_turn"
    body = server.requests[0]
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["stop"], body["seed"]) == (16, 0.2, 0.9, ["END"], 7)
    assert body["tool_choice"] == {"type": "function", "function": {"name": "word-count"}}


def test_anthropic_options_in_its_own_shape(rig, keyless):
    rig.write_tool("word-count", TOOL)
    with serving(fake_anthropic()) as server:
        engine = configure(rig, {"claude": {"api": "anthropic", "base_url": server.url, "stop": ["END"]}},
                           {"max_tokens": 100, "tool_choice": "required", "extra_body": {"metadata": {"user_id": "u1"}}},
                           model="claude/claude-sonnet-4-5")
        (rig.home / "agents" / "a.md").write_text((rig.home / "agents" / "a.md").read_text().replace(
            "tools: []", "tools: [word-count]"))
        server.replies.append({"events": anthropic_text("ok")})
        assert engine.conversation("a").run("Hi", NonInteractiveUI()).reason == "end_turn"
    body = server.requests[0]
    assert (body["max_tokens"], body["stop_sequences"], body["tool_choice"], body["metadata"]) == (
        100, ["END"], {"type": "any"}, {"user_id": "u1"})


def test_ollama_options_go_into_its_model_options(rig, keyless):
    with serving(fake_ollama()) as server:
        engine = configure(rig, {"box": {"api": "ollama", "base_url": server.url, "options": {"num_ctx": 8192},
                                         "temperature": 0.5}},
                           {"max_tokens": 32, "stop": ["END"], "think": False}, model="box/qwen3")
        server.replies.append({"events": [part("ok"), done()]})
        assert engine.conversation("a").run("Hi", NonInteractiveUI()).reason == "end_turn"
    body = server.requests[0]
    assert body["options"] == {"num_ctx": 8192, "temperature": 0.5, "num_predict": 32, "stop": ["END"]}
    assert body["think"] is False


@pytest.mark.parametrize(("endpoint", "agent_options", "message"), [
    ({"max_tokenz": 5}, None, "config.yaml: providers.local: unknown option(s) max_tokenz (did you mean max_tokens?)"),
    ({"max_tokens": 0}, None, "config.yaml: providers.local: option max_tokens must be a whole number of at least 1, got 0"),
    ({"temperature": "hot"}, None, "providers.local: option temperature must be a number, got 'hot'"),
    ({}, {"top_p": 0}, "a.md: options: option top_p must be above 0 and at most 1, got 0"),
    ({}, {"stopp": "x"}, "a.md: options: unknown option(s) stopp (did you mean stop?)"),
    ({}, {"base_url": "http://elsewhere"}, "a.md: options: unknown option(s) base_url"),
    ({}, {"extra_body": ["seed"]}, "a.md: options: option extra_body must be a mapping"),
])
def test_bad_options_name_the_file_and_the_option_before_anything_is_saved(rig, keyless, endpoint, agent_options,
                                                                          message):
    engine = configure(rig, {"local": {"api": "openai", "base_url": "http://127.0.0.1:9/v1", **endpoint}}, agent_options)
    result = engine.conversation("a").run("Hi", NonInteractiveUI())
    assert result.reason == "error" and message in result.error
    assert engine.sessions() == []


def test_options_a_vendor_lacks_are_refused_naming_it(rig, keyless):
    with pytest.raises(ConfigError, match=r"providers.claude: unknown option\(s\) temperature;"):
        provider_for("claude/m", {"providers": {"claude": {"api": "anthropic", "temperature": 0.1}}})
    engine = configure(rig, {"box": {"api": "ollama", "base_url": "http://127.0.0.1:9"}}, {"tool_choice": "auto"},
                       model="box/qwen3")
    result = engine.conversation("a").run("Hi", NonInteractiveUI())
    assert "a.md: options: unknown option(s) tool_choice" in result.error


# -- retries say so ----------------------------------------------------------------------------------


def test_a_refused_connection_is_retried_with_notices_the_run_shows(rig, keyless):
    url = f"http://127.0.0.1:{free_port()}/v1"  # nobody listens there
    engine = configure(rig, {"local": {"api": "openai", "base_url": url, "max_retries": 2, "backoff": 0.01}})
    ui = NonInteractiveUI()
    result = engine.conversation("a").run("Hi", ui)
    notices = [(e.source, e.body) for e in ui.events if isinstance(e, Notify)]
    assert notices == [("provider:local", "retrying (1/2) in 0.01 s"), ("provider:local", "retrying (2/2) in 0.02 s")]
    assert result.reason == "error" and "gave up after 3 attempts: cannot connect" in result.error


def test_the_terminal_shows_the_retries_and_the_usage_on_the_last_line(rig, keyless):
    with serving(fake_openai()) as server:
        configure(rig, {"local": {"api": "openai", "base_url": server.url, "backoff": 0.01}})
        server.replies += [{"status": 503, "body": {"error": {"message": "Loading model", "type": "unavailable_error"}}},
                           {"events": openai_text("Hel", "lo")}]
        done_run = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "--home", str(rig.home), "run",
                                   "--agent", "a", "Hi"], cwd=rig.workdir, capture_output=True, text=True, timeout=60,
                                  env={**os.environ})
    assert done_run.returncode == 0 and done_run.stdout == "Hello\n"
    lines = done_run.stderr.splitlines()
    assert "[provider:local] notice: HTTP 503: Loading model: retrying (1/3) in 0.01 s" in lines
    assert lines[-1].startswith("session ") and lines[-1].endswith("· usage: 10 in, 2 out over 1 model turn")


def test_the_last_line_says_when_the_server_reported_no_usage(rig, keyless):
    with serving(fake_openai()) as server:
        configure(rig, {"local": {"api": "openai", "base_url": server.url}})
        server.replies.append({"events": openai_text("ok")[:-1]})  # no usage chunk
        done_run = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "--home", str(rig.home), "run",
                                   "--agent", "a", "Hi"], cwd=rig.workdir, capture_output=True, text=True, timeout=60)
    assert done_run.returncode == 0
    assert done_run.stderr.splitlines()[-1].endswith("· usage: none reported by the model (1 model turn)")


def test_an_unknown_provider_gets_a_did_you_mean_from_the_built_ins_and_the_named_endpoints():
    with pytest.raises(ConfigError, match=r"no provider named 'opnai' \(did you mean 'openai'\? known: "):
        provider_for("opnai/gpt-4o", {})
    with pytest.raises(ConfigError, match=r"did you mean 'local'\?"):
        provider_for("locl/qwen", {"providers": {"local": {"api": "openai", "base_url": "http://127.0.0.1:1"}}})
    with pytest.raises(ConfigError, match=r"no provider named 'zzz' \(known: "):
        provider_for("zzz/m", {})


def test_a_misspelt_api_key_is_named_before_the_api_it_leaves_missing():
    entry = {"apii": "openai", "base_url": "http://127.0.0.1:1/v1"}
    with pytest.raises(ConfigError, match=r"providers\.local: unknown option\(s\) apii \(did you mean api\?\)"):
        provider_for("local/qwen", {"providers": {"local": entry}})


def test_a_server_that_cannot_be_reached_names_where_its_url_was_set(monkeypatch):
    from rienda_kernel.engine import CancelToken
    from rienda_kernel.engine.providers import ModelRequest
    from rienda_kernel.engine.sessions.messages import Message

    from ...helpers.ports import free_port

    closed = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    request = ModelRequest("qwen", "", [Message.user("hi")], [])
    entry = {"api": "openai", "base_url": closed, "max_retries": 0}
    provider, _ = provider_for("local/qwen", {"providers": {"local": entry}})
    with pytest.raises(ProviderError, match=r"cannot connect: .*\(check base_url under providers: local: in config.yaml\)$"):
        list(provider.stream(request, CancelToken()))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", closed)
    provider, _ = provider_for("openai/gpt-4o", {"providers": {"openai": {"max_retries": 0}}})
    with pytest.raises(ProviderError, match=r"\(check \$OPENAI_BASE_URL, or set base_url under providers: openai: "):
        list(provider.stream(request, CancelToken()))
