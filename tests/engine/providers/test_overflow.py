"""A request refused for its length ends the run in one line naming the window and the fill,
the session kept: each vendor's refusal, served in its own wire format by a real HTTP server
on 127.0.0.1 (llama.cpp's own refusal is in ``test_real_model.py``, from the real server)."""

from __future__ import annotations

import json

import pytest
import yaml

from rienda_kernel.engine import NonInteractiveUI
from rienda_kernel.engine.errors import ContextOverflow
from rienda_kernel.engine.providers.openai import OpenAIProvider
from rienda_kernel.engine.providers.overflow import overflow
from rienda_kernel.engine.runtime.rienda import Rienda

from ...helpers.homes import write_agent
from ...helpers.vendor_streams.openai import text_stream
from ...helpers.vendor_wire import Caller, serving
from ...helpers.vendors import fake_anthropic, fake_openai

OPENAI = {"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages "
                               "resulted in 130523 tokens. Please reduce the length of the messages.",
                    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
ANTHROPIC = {"type": "error", "error": {"type": "invalid_request_error",
                                        "message": "prompt is too long: 208310 tokens > 200000 maximum"}}
LLAMA = {"error": {"code": 400, "message": "request (831 tokens) exceeds the available context size (512 tokens), "
                   "try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 831, "n_ctx": 512}}
VLLM = {"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested "
        "5000 tokens (4000 in the messages, 1000 in the completion).", "type": "BadRequestError", "code": 400}


@pytest.mark.parametrize("body, figures", [
    (OPENAI, (130523, 128000)), (ANTHROPIC, (208310, 200000)), (LLAMA, (831, 512)),
    ({"error": {"type": "invalid_request_error", "code": "context_length_exceeded",
                "message": "Your input exceeds the context window of this model."}}, (None, None)),
    ({"type": "error", "error": {"type": "invalid_request_error", "message": "input length and `max_tokens` exceed "
                                 "context limit: 197202 + 21333 > 200000, decrease input length"}}, (197202, 200000)),
])
def test_each_vendors_refusal_is_recognised_with_its_figures(body, figures):
    assert overflow(json.dumps(body)) == figures


def test_vllms_words_at_the_top_level_are_recognised():
    assert overflow(json.dumps(VLLM)) == (5000, 4096)


@pytest.mark.parametrize("body", [
    {"error": {"message": "Invalid parameter: messages with role 'tool' must be a response", "type": "invalid_request_error"}},
    {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: must be at most 8192"}},
    {"error": 'model "qwen3" not found, try pulling it first'},
])
def test_other_refusals_are_not_overflows(body):
    assert overflow(json.dumps(body)) is None


def test_the_refusal_is_not_retried_and_carries_the_servers_figures():
    caller = Caller(OpenAIProvider, "gpt-4o")
    with serving(fake_openai()) as server:
        server.replies.append({"status": 400, "body": OPENAI})
        with pytest.raises(ContextOverflow) as raised:
            caller.collect(caller.ask(), base_url=server.url, api_key_env=None)
        assert len(server.requests) == 1
    assert (raised.value.tokens, raised.value.window) == (130523, 128000)
    assert str(raised.value).startswith(f"{server.url}/chat/completions: HTTP 400: This model's maximum context")


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_a_run_refused_for_its_length_ends_in_one_line_and_keeps_the_session(rig, vendor):
    server = (fake_openai if vendor == "openai" else fake_anthropic)()
    with serving(server):
        (rig.home / "config.yaml").write_text(yaml.safe_dump({"providers": {"cloud": {"api": vendor, "base_url": server.url}}}))
        write_agent(rig.home, "talker", [], [], "cloud/claude-sonnet-4-5" if vendor == "anthropic" else "cloud/gpt-4o",
                    description="Talks.", body="Be brief.")
        engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
        if vendor == "openai":
            server.replies += [{"events": text_stream("Hello", " there.")}, {"status": 400, "body": OPENAI}]
            first = engine.conversation("talker").run("Hi", NonInteractiveUI())
            assert (first.context.tokens, first.context.window) == (12, 128_000)  # 10 in + 2 out; the table's window
            result = engine.conversation("talker", first.session_id).run("And now?", NonInteractiveUI())
            said = "This model's maximum context length is 128000 tokens."
            line = "130,523 tokens against a window of 128,000"
        else:
            server.replies.append({"status": 400, "body": ANTHROPIC})
            result = engine.conversation("talker").run("Hi", NonInteractiveUI())
            said = "prompt is too long: 208310 tokens > 200000 maximum"
            line = "208,310 tokens against a window of 200,000"
    model = "cloud/gpt-4o" if vendor == "openai" else "cloud/claude-sonnet-4-5"
    assert result.reason == "error" and "\n" not in result.error
    assert result.error.startswith(f"the conversation no longer fits {model}'s context window, and nothing could be "
                                   f"compacted: {line}; session {result.session_id} is kept: compact it (rienda "
                                   f"compact {result.session_id}, or %rienda compact), or resume it once the window is "
                                   "larger")
    assert f"the server said: HTTP 400: {said}" in result.error
    assert engine.store.load(result.session_id).messages[-1].role == "user"  # the prompt is kept for a resume
