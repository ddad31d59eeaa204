"""Golden answers of ``rienda gate`` per protocol, for every answer shape: deny, allow,
rewrite (in the agent's own shape), no opinion, ask (only where the agent can ask a person),
and after the call. Each is the real command on a pipe, fed the event the agent sent."""

from __future__ import annotations

import json

import pytest

from tests.gate.conftest import AGENTS, answer, deny, gate, gate_session_id, sample
from tests.helpers.homes import write_agent, write_extension

PRE = {"hookEventName": "PreToolUse"}


@pytest.mark.parametrize("agent", AGENTS)
def test_a_refusal_is_the_agents_deny_with_the_hooks_reason(home, agent):
    done = gate(home, agent, sample(agent, command="rm -rf build"))
    assert answer(done) == deny(agent, f"no rm -rf here ({agent})")
    assert done.stderr.decode() == f"rienda gate: no rm -rf here ({agent})\n"


REWRITTEN = {
    "claude-code": {"hookSpecificOutput": {**PRE, "permissionDecision": "allow", "updatedInput": {
        "command": "echo BYE > proof.txt", "description": "write proof file"}}},
    "codex": {"hookSpecificOutput": {**PRE, "permissionDecision": "allow",
                                     "updatedInput": {"command": "echo BYE > proof.txt"}}},
    "gemini-cli": {"hookSpecificOutput": {"tool_input": {"command": "echo BYE > proof.txt",
                                                         "description": "write proof file"}}},
    "copilot-cli": {"hookSpecificOutput": {**PRE, "permissionDecision": "allow",
                                           "updatedInput": {"command": "echo BYE > proof.txt"}}},
}


@pytest.mark.parametrize("agent", AGENTS)
def test_a_rewrite_goes_back_in_the_agents_own_shape(home, agent):
    done = gate(home, agent, sample(agent))  # the samples' own command: echo HELLO > proof.txt
    assert answer(done) == REWRITTEN[agent]
    assert done.stderr == b""


@pytest.mark.parametrize("agent", AGENTS)
def test_an_explicit_allow_is_the_agents_allow(home, agent):
    expected = ({"decision": "allow"} if agent == "gemini-cli"
                else {"hookSpecificOutput": {**PRE, "permissionDecision": "allow"}})
    assert answer(gate(home, agent, sample(agent, command="ls -la"))) == expected


@pytest.mark.parametrize("agent", AGENTS)
def test_no_opinion_leaves_the_call_to_the_agent(home, agent):
    assert answer(gate(home, agent, sample(agent, command="pwd"))) == {}


def _asked(agent):
    return {"hookSpecificOutput": {**PRE, "permissionDecision": "ask",
                                   "permissionDecisionReason": "Push: git push origin",
                                   "updatedInput": {**sample(agent)["tool_input"], "command": "git push origin --dry-run"}}}


@pytest.mark.parametrize("agent", AGENTS)
def test_a_confirm_asks_where_the_agent_can_ask_and_is_denied_elsewhere(home, agent):
    done = gate(home, agent, sample(agent, command="git push origin"))
    if agent in ("claude-code", "copilot-cli"):
        assert answer(done) == _asked(agent)  # the rewrite the hook makes on a yes goes with the question
    else:  # Codex would run the call on `ask`, Gemini CLI would hang: no
        assert answer(done) == deny(agent, "the push was not confirmed")


@pytest.mark.parametrize("agent", AGENTS)
def test_the_confirm_policy_decides_when_given(home, agent):
    allowed = answer(gate(home, agent, sample(agent, command="git push origin"), "--confirm", "allow"))
    if agent == "gemini-cli":
        assert allowed == {"hookSpecificOutput": {"tool_input": {"command": "git push origin --dry-run",
                                                                 "description": "write proof file"}}}
    else:
        assert allowed["hookSpecificOutput"]["permissionDecision"] == "allow"
        assert allowed["hookSpecificOutput"]["updatedInput"]["command"] == "git push origin --dry-run"
    denied = gate(home, agent, sample(agent, command="git push origin"), "--confirm", "deny")
    assert answer(denied) == deny(agent, "the push was not confirmed")
    (home / "config.yaml").write_text("gate:\n  confirm: allow\n")
    assert answer(gate(home, agent, sample(agent, command="git push origin"))) == allowed


MIRROR = """module.exports = { beforeToolExecute(ctx, call) {
  return { allow: false, reason: JSON.stringify({ call, gate: ctx.session.gate, workdir: ctx.workdir,
                                                   agent: ctx.agent.id, session: ctx.session.id }) };
} };"""


@pytest.mark.parametrize("agent", AGENTS)
def test_the_hook_sees_one_shell_call_and_who_asked(home, agent, tmp_path):
    write_extension(home, "hooks", "mirror", MIRROR)
    write_agent(home, "mirror", hooks=["mirror"], model="openai/unused")
    project = tmp_path / "project"
    project.mkdir()
    event = sample(agent, cwd=str(project))
    done = answer(gate(home, agent, event, "--agent", "mirror"))
    reason = done["reason"] if agent == "gemini-cli" else done["hookSpecificOutput"]["permissionDecisionReason"]
    seen = json.loads(reason)
    assert seen["call"]["name"] == "shell" and seen["call"]["arguments"] == {"command": "echo HELLO > proof.txt"}
    assert seen["gate"] == {"agent": agent, "sessionId": event["session_id"], "cwd": str(project),
                            "event": event["hook_event_name"], "tool": event["tool_name"],
                            "toolInput": event["tool_input"]}
    assert seen["workdir"] == str(project.resolve())
    assert seen["agent"] == "mirror" and seen["session"] == gate_session_id(home, agent, event["session_id"])
    if agent in ("claude-code", "codex"):
        assert seen["call"]["id"] == event["tool_use_id"]


@pytest.mark.parametrize("agent", AGENTS)
def test_other_tools_keep_their_names_and_arguments(home, agent):
    write_extension(home, "hooks", "mirror", MIRROR)
    write_agent(home, "mirror", hooks=["mirror"], model="openai/unused")
    for name, arguments in (("mcp__github__create_issue", {"title": "t", "labels": ["a"]}),
                            ("Read", {"file_path": "/etc/hosts"})):
        done = answer(gate(home, agent, sample(agent, tool_name=name, tool_input=arguments), "--agent", "mirror"))
        reason = done["reason"] if agent == "gemini-cli" else done["hookSpecificOutput"]["permissionDecisionReason"]
        assert json.loads(reason)["call"]["name"] == name
        assert json.loads(reason)["call"]["arguments"] == arguments


def _after(agent, tool_name, tool_input, response):
    event = sample(agent, tool_name=tool_name, tool_input=tool_input, tool_response=response)
    event["hook_event_name"] = "AfterTool" if agent == "gemini-cli" else "PostToolUse"
    return event


def test_after_the_call_claude_code_reads_the_rewritten_result_as_context(home):
    response = {"stdout": "token SECRET123 ok", "stderr": "", "interrupted": False, "isImage": False}
    done = answer(gate(home, "claude-code", _after("claude-code", "Bash", {"command": "env"}, response)))
    assert done == {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext":
                    "The tool's result as the Rienda gate's hooks rewrote it:\ntoken [withheld] ok"}}


def test_after_an_mcp_call_claude_code_gets_the_rewritten_output(home):
    response = [{"type": "text", "text": "key SECRET9"}]
    done = answer(gate(home, "claude-code", _after("claude-code", "mcp__vault__get", {"name": "k"}, response)))
    assert done == {"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                           "updatedMCPToolOutput": [{"type": "text", "text": "key [withheld]"}]}}


@pytest.mark.parametrize("agent", AGENTS)
def test_after_the_call_an_unchanged_result_and_the_agents_that_cannot_take_one_get_nothing(home, agent):
    unchanged = _after(agent, "Bash", {"command": "pwd"}, {"stdout": "/home/dev", "stderr": ""})
    assert answer(gate(home, agent, unchanged)) == {}
    changed = answer(gate(home, agent, _after(agent, "Bash", {"command": "env"}, {"stdout": "SECRET1", "stderr": ""})))
    if agent != "copilot-cli":  # they read additionalContext after a call (seen by running them)
        name = "AfterTool" if agent == "gemini-cli" else "PostToolUse"
        assert changed == {"hookSpecificOutput": {"hookEventName": name, "additionalContext":
                           "The tool's result as the Rienda gate's hooks rewrote it:\n[withheld]"}}
    else:  # Copilot CLI: a hook cannot change what the model reads
        assert changed == {}


def test_after_the_call_a_hook_that_throws_tells_claude_code(home):
    write_extension(home, "hooks", "policy", 'module.exports = { afterToolExecute() { throw new Error("nope"); } };')
    done = answer(gate(home, "claude-code", _after("claude-code", "Bash", {"command": "pwd"}, {"stdout": "x"})))
    assert done["decision"] == "block"
    assert "hook policy threw in afterToolExecute" in done["reason"] and "nope" in done["reason"]


@pytest.mark.parametrize("tool,tool_input,back", [
    ("exec_command", {"cmd": "echo HELLO", "workdir": "/w"}, {"cmd": "echo BYE", "workdir": "/w"}),
    ("shell", {"command": ["bash", "-lc", "echo HELLO"]}, {"command": ["bash", "-lc", "echo BYE"]}),
])
def test_codex_shell_calls_in_other_shapes_are_shell_too(home, tool, tool_input, back):
    done = answer(gate(home, "codex", sample("codex", tool_name=tool, tool_input=tool_input)))
    assert done["hookSpecificOutput"]["updatedInput"] == back
