"""JSON that is legal but pathological, at every boundary where it enters the engine: the
model's tool-call arguments, a server's events and error bodies, session lines, the
``rienda call`` and ``rienda hook`` payloads. Each ends in one clear line naming the call or
the file (a tool error result the model can read, a skipped line, exit 1), never a
``RecursionError``, a traceback, or a tool call left without a result."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rienda_kernel.engine import NonInteractiveUI, ToolCall
from rienda_kernel.engine.providers import PROVIDERS, Provider, TextChunk, ToolCallChunk
from rienda_kernel.engine.providers.openai import OpenAIProvider
from rienda_kernel.engine.runtime.rienda import Rienda
from rienda_kernel.engine.common import bounded
from rienda_kernel.engine.sessions.pairing import unanswered

from ...helpers.vendor_streams import openai as openai_wire
from ...helpers.vendor_wire import Caller, counting_agent, serving
from ...helpers.vendors import fake_openai

DEEP = "[" * 5000 + "]" * 5000
MIDDLE = '{"path": ' + "[" * 300 + "]" * 300 + "}"  # Python reads it; the bound refuses it


def deep_object(levels: int) -> dict:
    value: dict = {}
    for _ in range(levels):
        value = {"a": value}
    return value


def test_loads_bounds_depth_and_size_and_refuses_repeated_keys_when_asked():
    assert bounded.loads('{"a": [1, {"b": 2}]}') == {"a": [1, {"b": 2}]}
    for text in (DEEP, MIDDLE):
        with pytest.raises(bounded.Unreadable, match="^nested more than 200 levels deep$"):
            bounded.loads(text)
    assert bounded.loads("[" * 200 + "]" * 200) is not None
    with pytest.raises(bounded.Unreadable, match="^larger than 1 KiB$"):
        bounded.loads(" " * 2000, max_bytes=1024)
    assert bounded.loads('{"a": 1, "a": 2}') == {"a": 2}
    with pytest.raises(bounded.Unreadable, match="holding the key 'a' twice"):
        bounded.loads('{"x": {"a": 1, "a": 2}}', unique_keys=True)
    assert bounded.too_deep(deep_object(201)) and not bounded.too_deep(deep_object(199))


@pytest.mark.parametrize("arguments", [DEEP, MIDDLE], ids=["5000 deep", "300 deep"])
def test_a_model_sending_arguments_nested_thousands_deep_gets_an_error_result(rig, monkeypatch, arguments):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    counting_agent(rig, "writer", "openai/gpt-4o-mini")
    with serving(fake_openai()) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        server.replies += [{"events": openai_wire.tool_stream("call_deep", "word-count", arguments)},
                           {"events": openai_wire.text_stream("Sorry.")}]
        engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
        result = engine.conversation("writer").run("count", NonInteractiveUI())
    assert (result.reason, result.error, result.text) == ("end_turn", None, "Sorry.")
    [(call, answer)] = result.tool_calls
    assert (answer.text, answer.is_error) == ("arguments for word-count are nested more than 200 levels deep", True)
    loaded = engine.load_session(result.session_id)
    assert loaded.warnings == [] and unanswered(loaded.messages) == []


class DeepProvider(Provider):
    """A provider of its own, handing over arguments as objects nested 5,000 deep."""

    def stream(self, request, cancel):
        if any(m.role == "tool" for m in request.messages):
            yield TextChunk("ok")
            return
        yield ToolCallChunk(ToolCall("call_deep", "word-count", deep_object(5000)))


def test_arguments_a_provider_hands_over_as_deep_objects_are_not_kept(rig, monkeypatch):
    monkeypatch.setitem(PROVIDERS, "deep", lambda config: DeepProvider())
    counting_agent(rig, "writer", "deep/m")
    engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    result = engine.conversation("writer").run("count", NonInteractiveUI())
    assert (result.reason, result.error) == ("end_turn", None)
    [(call, answer)] = result.tool_calls
    assert call.arguments == bounded.DEEP_ARGUMENTS
    assert answer.text == "arguments for word-count are nested more than 200 levels deep"


def test_a_server_event_or_error_body_nested_too_deep_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    with serving(fake_openai()) as server:
        server.replies += [{"events": [DEEP]}, {"status": 400, "raw": '{"error": ' + DEEP + "}"}]
        provider = OpenAIProvider(base_url=server.url, api_key_env="OPENAI_API_KEY", backoff=0.01)
        request = Caller(OpenAIProvider, "gpt-4o-mini").ask()
        from rienda_kernel.engine import CancelToken, ProviderError

        with pytest.raises(ProviderError, match="the server sent data nested more than 200 levels deep: '"):
            list(provider.stream(request, CancelToken()))
        with pytest.raises(ProviderError, match=r"HTTP 400: {\"error\": \[\[\["):
            list(provider.stream(request, CancelToken()))


def test_a_session_line_nested_too_deep_is_skipped_with_a_warning(rig):
    engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    (rig.home / "sessions").mkdir(parents=True)
    path = rig.home / "sessions" / "s1.jsonl"
    header = {"type": "session", "version": 1, "id": "s1", "agent": "default", "model": "scripted/x"}
    deep_line = '{"type": "message", "role": "user", "text": "x", "meta": ' + DEEP + "}"
    path.write_text("\n".join([json.dumps(header), json.dumps({"type": "message", "role": "user", "text": "hi"}),
                               deep_line, '{"type": "note", "x": ' + MIDDLE + "}"]) + "\n")
    loaded = engine.load_session("s1")
    assert [m.text for m in loaded.messages] == ["hi"]
    assert loaded.warnings == [f"{path}:3: nested more than 200 levels deep; skipped",
                               f"{path}:4: nested more than 200 levels deep; skipped"]
    assert [info.messages for info in engine.sessions()] == [2]  # the listing does not choke either


def cli(rig, *args):
    env = {**os.environ, "RIENDA_HOME": str(rig.home)}
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", *args], cwd=rig.workdir, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("payload", "problem"), [
    (DEEP, "nested more than 200 levels deep"),
    ('{"path": "a", "path": "b"}', "holding the key 'path' twice (JSON keeps only the last; say it once)"),
])
def test_rienda_call_and_hook_payloads_end_in_one_line_naming_the_call(rig, payload, problem):
    rig.write_hook("watch", "module.exports = { beforeToolExecute(ctx, call) {} };")
    for args, said in ((["call", "read"], f"rienda: the arguments for read are {problem}"),
                       (["hook", "watch", "beforeToolExecute"], f"rienda: the payload for beforeToolExecute is {problem}")):
        done = cli(rig, *args, payload)
        assert (done.returncode, done.stderr.strip()) == (1, said)
