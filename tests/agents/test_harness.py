"""The harness itself, without an agent: the fake model server read by the vendors' own SDKs
(the wire is theirs, not ours), the runner's timeout ending a whole process group, and the
installer's one clear line when npm cannot install."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import anthropic
import openai
import pytest

from ..helpers.ports import free_port
from ..helpers.processes import wait_exit, wait_for_file
from .harness import install
from .harness.model_server import FakeModelServer
from .harness.runners import AgentRunner

BASH = {"name": "Bash", "description": "Run a command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"},
                                                           "description": {"type": "string"}},
                         "required": ["command", "description"]}}


def test_the_anthropic_stream_asks_for_one_shell_call_then_answers_once_the_result_is_read():
    with FakeModelServer("ls -la") as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="dummy", max_retries=0)
        ask = [{"role": "user", "content": "go"}]
        with client.messages.stream(model="m", max_tokens=100, messages=ask, tools=[BASH]) as stream:
            first = stream.get_final_message()
        call = first.content[0]
        assert (first.stop_reason, call.type, call.name, call.input) == (
            "tool_use", "tool_use", "Bash", {"command": "ls -la", "description": "run the test's command"})
        ask += [{"role": "assistant", "content": [call.model_dump()]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "a b"}]}]
        with client.messages.stream(model="m", max_tokens=100, messages=ask, tools=[BASH]) as stream:
            final = stream.get_final_message()
    assert (final.stop_reason, final.content[0].text) == ("end_turn", "All done.")
    assert server.tool_results() == ["a b"]


def test_the_responses_stream_calls_exec_command_with_cmd_then_answers():
    tool = {"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {
        "cmd": {"type": "string"}}}, "strict": False}
    with FakeModelServer("ls -la") as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="dummy", max_retries=0)
        with client.responses.stream(model="m", input="go", tools=[tool]) as stream:
            first = stream.get_final_response()
        call = first.output[0]
        assert (call.type, call.name, json.loads(call.arguments)) == ("function_call", "exec_command", {"cmd": "ls -la"})
        done = [{"type": "function_call_output", "call_id": call.call_id, "output": "a b"}]
        with client.responses.stream(model="m", input=done, tools=[tool]) as stream:
            final = stream.get_final_response()
    assert final.output_text == "All done."
    assert server.tool_results() == ["a b"]


def _gemini(server: FakeModelServer, contents: list) -> dict:
    body = {"contents": contents, "tools": [{"functionDeclarations": [{"name": "run_shell_command"}]}]}
    request = urllib.request.Request(f"{server.url}/v1beta/models/g:streamGenerateContent?alt=sse",
                                     data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        events = [json.loads(line[5:]) for line in answer.read().decode().splitlines() if line.startswith("data:")]
    return events[0]["candidates"][0]["content"]["parts"][0]


def test_the_gemini_stream_calls_run_shell_command_then_answers():
    with FakeModelServer("ls -la") as server:
        call = _gemini(server, [{"role": "user", "parts": [{"text": "go"}]}])
        assert call["functionCall"]["name"] == "run_shell_command"
        assert call["functionCall"]["args"]["command"] == "ls -la"
        response = {"functionResponse": {"name": "run_shell_command", "response": {"output": "a b"}}}
        assert _gemini(server, [{"role": "user", "parts": [response]}]) == {"text": "All done."}
    assert server.tool_results() == ['{"output": "a b"}']


class _Stubborn(AgentRunner):
    """An 'agent' that starts a grandchild and never ends."""

    name = "stubborn"

    def configure(self) -> None:
        """Nothing to write."""

    def argv(self, prompt: str) -> list[str]:
        return ["sh", "-c", "sleep 300 & echo $! > grandchild.pid; wait"]

    def agent_env(self) -> dict[str, str]:
        return {}


def test_a_run_past_its_timeout_ends_with_its_whole_process_group(tmp_path: Path):
    runner = _Stubborn(tmp_path, "http://127.0.0.1:9", "true")
    run = runner.run(timeout=2)
    assert run.exit_code is None
    grandchild = int(wait_for_file(runner.project / "grandchild.pid"))
    assert wait_exit(grandchild, timeout=30)


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_without_npm_the_install_says_so(empty_cache: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PATH", str(empty_cache))
    with pytest.raises(install.AgentInstallError, match="npm is not on PATH.*@openai/codex@"):
        install.executable("codex")


def test_an_unreachable_registry_fails_the_install_with_npms_reason(empty_cache: Path,
                                                                     monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("npm_config_registry", f"http://127.0.0.1:{free_port()}/")
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    with pytest.raises(install.AgentInstallError, match="failed.*registry reachable.*ECONNREFUSED"):
        install.executable("codex")
    assert [p.name for p in (empty_cache / "rienda-tests" / "agents").iterdir()] == ["openai-codex-0.171.0.lock"]
