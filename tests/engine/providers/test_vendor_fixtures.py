"""The fixture servers are as strict as the APIs they stand for: a key the vendor's API does
not take, at any depth, is a problem the test sees, and so is a reply queued and never
asked for."""

from __future__ import annotations

import httpx
import pytest

from rienda_kernel.engine import CancelToken
from rienda_kernel.engine.sessions.messages import Message
from rienda_kernel.engine.providers import ModelRequest
from rienda_kernel.engine.providers.openai import OpenAIProvider

from ...helpers.vendor_streams.anthropic import text_stream as anthropic_text
from ...helpers.vendor_streams.openai import text_stream as openai_text
from ...helpers.vendor_wire import serving
from ...helpers.vendors import fake_anthropic, fake_openai

OPENAI_BODY = {"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "Hi"}]}
ANTHROPIC_BODY = {"model": "claude-sonnet-4-5", "max_tokens": 10, "stream": True,
                  "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]}


def post(server, body, reply):
    server.replies.append(reply)
    httpx.post(server.origin + server.path, json=body, timeout=10).read()
    server.close()
    return server.problems


@pytest.mark.parametrize(("body", "unknown"), [
    ({**OPENAI_BODY, "max_tokenz": 5}, "request.max_tokenz"),
    ({**OPENAI_BODY, "bogus_field": True}, "request.bogus_field"),
    ({**OPENAI_BODY, "messages": [{"role": "user", "content": "Hi", "nmae": "x"}]}, "request.messages[0].nmae"),
    ({**OPENAI_BODY, "tools": [{"type": "function", "function": {"name": "t", "params": {}}}]},
     "request.tools[0].function.params"),
])
def test_the_openai_fixture_rejects_a_key_the_api_does_not_take(body, unknown):
    problems = post(fake_openai(), body, {"events": openai_text("ok")})
    assert len(problems) == 1 and unknown in problems[0]


@pytest.mark.parametrize(("body", "unknown"), [
    ({**ANTHROPIC_BODY, "bogus_field": 1}, "request.bogus_field"),
    ({**ANTHROPIC_BODY, "temperature": 0.2}, "request.temperature"),  # not in this API version
    ({**ANTHROPIC_BODY, "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi", "txt": "x"}]}]},
     "request.messages[0].content[0].txt"),
])
def test_the_anthropic_fixture_rejects_a_key_the_api_does_not_take(body, unknown):
    problems = post(fake_anthropic(), body, {"events": anthropic_text("ok")})
    assert len(problems) == 1 and unknown in problems[0]


def test_the_fixtures_accept_what_the_apis_take():
    assert post(fake_openai(), {**OPENAI_BODY, "max_tokens": 5, "seed": 1}, {"events": openai_text("ok")}) == []
    assert post(fake_anthropic(), {**ANTHROPIC_BODY, "stop_sequences": ["x"]}, {"events": anthropic_text("ok")}) == []


def test_a_typo_sent_through_extra_body_fails_the_test_that_sent_it():
    request = ModelRequest("gpt-4o-mini", "", [Message.user("Hi")])
    with pytest.raises(AssertionError, match="request.max_tokenz"):
        with serving(fake_openai()) as server:
            server.replies.append({"events": openai_text("ok")})
            provider = OpenAIProvider(base_url=server.url, extra_body={"max_tokenz": 5})
            list(provider.stream(request, CancelToken()))


def test_serving_fails_when_a_queued_reply_was_never_asked_for():
    with pytest.raises(AssertionError, match="1 queued repl"):
        with serving(fake_openai()) as server:
            server.replies.append({"events": openai_text("never sent")})
