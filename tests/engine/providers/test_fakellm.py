"""OpenAI and Anthropic runs against fakellm, a mock LLM server from PyPI that this project
did not write.

fakellm (pinned) serves both vendors' streams from YAML rules: streamed tool-call arguments
in pieces, and an answer chosen by the tool result it receives, so a run only ends well
when Rienda sent the result back paired with its call in the vendor's own shape. A relay
between the two checks every request and every event with the vendors' official types.
Failure cases live in the per-vendor tests, whose servers can cut streams and garble JSON;
fakellm cannot.
"""

from __future__ import annotations

import json
import sys

import httpx
import pytest
from anthropic.types import RawMessageStreamEvent
from openai.types.chat import ChatCompletionChunk
from pydantic import TypeAdapter

from rienda_kernel.engine import NonInteractiveUI
from rienda_kernel.engine.runtime.rienda import Rienda

from ...helpers.vendors import fake_anthropic, fake_openai
from ...helpers.ports import free_port
from ...helpers.vendor_wire import counting_agent, server_process

RULES = """\
version: 1
rules:
  - name: answer-from-the-count
    when:
      tool_result_contains: "4"
    respond:
      content: "There are 4 words in notes.txt."
  - name: ask-for-a-count
    when:
      messages_contain: "how many words"
    respond:
      content: "Let me count."
      tool_calls:
        - name: word-count
          arguments: {path: notes.txt}
"""


@pytest.fixture(scope="module")
def fakellm(tmp_path_factory):
    """fakellm serving RULES on 127.0.0.1; its origin."""
    folder = tmp_path_factory.mktemp("fakellm")
    (folder / "fakellm.yaml").write_text(RULES)
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-c", "from fakellm.cli import main; main()", "serve", "--host", "127.0.0.1",
               "--port", str(port), "--config", str(folder / "fakellm.yaml")]
    with server_process("fakellm", command, origin + "/_fakellm/stats", folder / "fakellm.log", timeout=30):
        yield origin


@pytest.mark.parametrize(("api", "relay_for"), [("openai", fake_openai), ("anthropic", fake_anthropic)])
def test_a_tool_run_through_a_mock_server_we_did_not_write(rig, fakellm, api, relay_for):
    """Rienda -> a relay checking both directions with the vendor's types -> fakellm."""
    relay = relay_for(upstream=fakellm)
    (rig.home / "config.yaml").write_text(
        f"providers:\n  mock: {{api: {api}, base_url: '{relay.url}', api_key_env: null}}\n")
    model = f"mock/{api}-model"
    counting_agent(rig, "counter", model)
    engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    # fakellm keys its conversations by the first prompt: one per model keeps them apart.
    result = engine.conversation("counter").run(f"How many words are in notes.txt? ({model})", NonInteractiveUI())
    assert (result.reason, result.error) == ("end_turn", None)
    [(call, answer)] = result.tool_calls
    assert (call.name, call.arguments, answer.text, answer.is_error) == ("word-count", {"path": "notes.txt"}, "4", False)
    assert result.text == "There are 4 words in notes.txt."
    roles = [m.role for m in engine.store.load(result.session_id).messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    relay.close()
    assert len(relay.requests) == 2 and relay.problems == []


def _stream(origin: str, path: str, body: dict) -> list[tuple[str, str]]:
    """The (event, data) pairs of one streamed response."""
    pairs, name = [], ""
    with httpx.stream("POST", origin + path, json=body, timeout=10) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                pairs.append((name, line[5:].strip()))
    return pairs


def test_fakellm_speaks_the_vendors_wire_formats(fakellm):
    """What fakellm serves passes the official types, so the runs above parsed vendor streams."""
    prompt = [{"role": "user", "content": "how many words? (wire check)"}]
    openai_pairs = _stream(fakellm, "/v1/chat/completions", {"model": "gpt-4o-mini", "stream": True, "messages": prompt})
    assert openai_pairs[-1][1] == "[DONE]"
    chunks = [ChatCompletionChunk.model_validate_json(data) for _, data in openai_pairs[:-1]]
    assert any(choice.delta.tool_calls for chunk in chunks for choice in chunk.choices)

    anthropic_pairs = _stream(fakellm, "/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 100,
                                                        "stream": True, "messages": prompt})
    events = [TypeAdapter(RawMessageStreamEvent).validate_python(json.loads(data)) for _, data in anthropic_pairs]
    assert [name for name, _ in anthropic_pairs] == [event.type for event in events]
    assert events[-1].type == "message_stop"
    assert any(getattr(event.delta, "type", "") == "input_json_delta" for event in events if event.type == "content_block_delta")

