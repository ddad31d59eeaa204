"""A session whose run was killed mid-tool resumes with every vendor: the call left without a
result gets an error result saying the run ended (saved, shown by ``rienda show``), and every
request pairs each call with one result, which the vendors' wire servers check (they answer
HTTP 400, in the vendor's words, to a dangling call, as the real APIs do)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rienda_kernel.engine import Message, MessageMeta, NonInteractiveUI, ToolCall
from rienda_kernel.engine.runtime.rienda import Rienda
from rienda_kernel.engine.sessions.pairing import ENDED, for_vendors, unanswered, unique_calls

from ...helpers.vendor_streams import anthropic as anthropic_wire
from ...helpers.vendor_streams import ollama as ollama_wire
from ...helpers.vendor_streams import openai as openai_wire
from ...helpers.vendor_wire import serving
from ...helpers.vendors import (
    Rejected,
    anthropic_conversation,
    fake_anthropic,
    fake_ollama,
    fake_openai,
    ollama_conversation,
    openai_conversation,
)

VENDORS = {
    "openai": (fake_openai, "OPENAI_BASE_URL", "openai/gpt-4o-mini", lambda: openai_wire.text_stream("Resumed.")),
    "anthropic": (fake_anthropic, "ANTHROPIC_BASE_URL", "anthropic/claude-sonnet-4-5",
                  lambda: anthropic_wire.text_stream("Resumed.")),
    "ollama": (fake_ollama, "OLLAMA_HOST", "ollama/qwen3", lambda: ollama_wire.text_stream("Resumed.")),
}


def test_the_killed_session_ends_with_calls_that_have_no_result(killed_mid_tool):
    home, work, session_id = killed_mid_tool
    messages = Rienda(home=home, workdir=work).load_session(session_id).messages
    assert [m.role for m in messages] == ["user", "assistant"]
    assert [call.id for call in unanswered(messages)] == ["call_long", "call_after"]


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_a_session_killed_mid_tool_resumes_with_each_vendor(killed_mid_tool, vendor, monkeypatch):
    home, work, session_id = killed_mid_tool
    make, base_env, model, answer = VENDORS[vendor]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with serving(make()) as server:
        monkeypatch.setenv(base_env, server.url)
        server.replies.append({"events": answer()})
        engine = Rienda(home=home, workdir=work)
        ui = NonInteractiveUI()
        result = engine.conversation("busy", session_id, model=model).run("Go on.", ui)
        assert (result.reason, result.error, result.text) == ("end_turn", None, "Resumed.")
    sent = json.dumps(server.requests[0])
    assert ENDED in sent and sent.count(ENDED) == 2
    saved = engine.load_session(session_id).messages
    assert [(m.role, m.tool_call_id, m.is_error) for m in saved] == [
        ("user", None, False), ("assistant", None, False), ("tool", "call_long", True),
        ("tool", "call_after", True), ("user", None, False), ("assistant", None, False)]
    assert saved[2].text == ENDED and saved[2].meta == MessageMeta(run_ended=True)
    assert any("an earlier run ended before shell [call_long], read [call_after] finished" in e.body
               for e in ui.events if e.type == "notify")
    shown = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "show", session_id], cwd=work,
                           env={**os.environ, "RIENDA_HOME": str(home)}, capture_output=True, text=True, timeout=60)
    assert f"✗ shell [call_long]: {ENDED}" in shown.stdout, shown.stdout + shown.stderr


@pytest.mark.parametrize("check", [openai_conversation, anthropic_conversation, ollama_conversation])
def test_the_vendor_servers_refuse_a_dangling_call_as_the_real_apis_do(check):
    from rienda_kernel.engine.providers import ModelRequest, anthropic, ollama, openai

    dangling = [Message.user("go"), Message("assistant", "Working.", tool_calls=(ToolCall("c1", "shell", {}),)),
                Message.user("again")]
    shape = {openai_conversation: lambda r: openai.request_body(r)["messages"],
             anthropic_conversation: lambda r: anthropic.request_body(r)["messages"],
             ollama_conversation: lambda r: ollama.request_body(r)["messages"]}[check]
    with pytest.raises(Rejected):
        check(shape(ModelRequest("m", "", dangling)))
    check(shape(ModelRequest("m", "", for_vendors(dangling))))


def _call(call_id: str, name: str = "read") -> ToolCall:
    return ToolCall(call_id, name, {"path": "x"})


def _result(call_id: str, text: str = "ok", name: str = "read") -> Message:
    return Message.tool_result(_call(call_id, name), text, False)


def test_for_vendors_puts_each_result_after_its_call_and_drops_results_of_no_call():
    first = Message("assistant", "", tool_calls=(_call("a"), _call("b")))
    second = Message("assistant", "", tool_calls=(_call("c"),))
    history = [Message.user("go"), first, _result("b", "B"), _result("zzz", "orphan"), Message.user("more"),
               second, _result("c", "C"), _result("c", "twice"), _result("a", "late A")]
    paired = for_vendors(history)
    assert [(m.role, m.tool_call_id, m.text) for m in paired] == [
        ("user", None, "go"), ("assistant", None, ""), ("tool", "a", "late A"), ("tool", "b", "B"),
        ("user", None, "more"), ("assistant", None, ""), ("tool", "c", "C")]
    assert unanswered(history) == []
    for check, module in ((openai_conversation, "openai"), (anthropic_conversation, "anthropic"),
                          (ollama_conversation, "ollama")):
        from rienda_kernel.engine.providers import ModelRequest, anthropic, ollama, openai

        body = {"openai": openai, "anthropic": anthropic, "ollama": ollama}[module].request_body(
            ModelRequest("m", "", [Message.user("x")] + paired[1:]))
        check(body["messages"])


def test_call_ids_a_model_repeats_or_leaves_empty_are_made_unique():
    history = [Message("assistant", "", tool_calls=(_call("call_0"),)), _result("call_0")]
    calls = unique_calls([_call("call_0"), _call(""), _call("call_0"), _call("fresh")], history)
    assert [c.id for c in calls] == ["call_0_2", "call_2", "call_0_3", "fresh"]
