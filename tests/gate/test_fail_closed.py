"""``rienda gate`` fails closed: whatever goes wrong is a deny in the agent's format with
the reason, exit 0 and one line on stderr; never exit 1 (which three of the four agents read
as allow) and never a traceback. Only an agent that is none of the four exits 2."""

from __future__ import annotations

import json

import pytest

from tests.gate.conftest import AGENTS, answer, gate, sample
from tests.helpers.homes import write_agent, write_agent_file, write_extension


def denied(done, agent: str) -> str:
    """The reason of the deny ``done`` answered, checked to be one."""
    got = answer(done)
    if agent == "gemini-cli":
        assert set(got) == {"decision", "reason"} and got["decision"] == "deny"
        reason = got["reason"]
    else:
        inner = got["hookSpecificOutput"]
        assert set(inner) == {"hookEventName", "permissionDecision", "permissionDecisionReason"}
        assert inner["permissionDecision"] == "deny" and inner["hookEventName"] == "PreToolUse"
        reason = inner["permissionDecisionReason"]
    lines = done.stderr.decode().splitlines()
    assert lines[-1] == f"rienda gate: {reason}", lines
    return reason


HOOKS = {
    "throws": 'module.exports = { beforeToolExecute() { throw new TypeError("policy bug"); } };',
    "hungry": """module.exports = { beforeToolExecute() {
                   const a = []; while (true) a.push(new Array(100000).fill(a.length)); } };""",
    "odd": 'module.exports = { beforeToolExecute() { return { allow: "no" }; } };',
    "word": 'module.exports = { beforeToolExecute() { return "deny"; } };',
}


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("hook,why", [("throws", "threw in beforeToolExecute: TypeError: policy bug"),
                                      ("hungry", "ran out of memory"),
                                      ("odd", "returned what it ignores in beforeToolExecute"),
                                      ("word", "returned what it ignores in beforeToolExecute")])
def test_a_hook_that_fails_denies_where_a_run_would_skip_it(home, agent, hook, why):
    write_extension(home, "hooks", hook, HOOKS[hook])
    write_agent(home, "gate", hooks=[hook, "policy"], model="openai/unused")
    reason = denied(gate(home, agent, sample(agent, command="pwd")), agent)
    assert f"hook {hook}" in reason and why in reason and "a gate denies when a hook fails" in reason


SPIN = 'module.exports = { beforeToolExecute() { while (true) {} } };'


def test_a_hook_that_never_returns_is_denied_at_the_bound_and_named(home):
    """The bound is the same whichever agent asks (the deny's form per agent is checked
    above, for each way a hook fails): one agent is enough, the hook spins a core until the
    bound. Gemini CLI here, Codex for config.yaml's bound below: both forms of deny."""
    write_extension(home, "hooks", "spin", SPIN)
    write_agent(home, "gate", hooks=["policy", "spin"], model="openai/unused")
    agent = "gemini-cli"
    reason = denied(gate(home, agent, sample(agent, command="pwd"), "--timeout", "5"), agent)
    assert reason == ("denied by the Rienda gate: no decision within 5 s (the gate's timeout): hook spin did not "
                      "return from beforeToolExecute; the hooks were stopped")


def test_the_bound_of_config_yaml_is_the_gates_timeout(home):
    """The same bound, from ``gate.timeout`` (read the same way whichever agent asks)."""
    write_extension(home, "hooks", "spin", SPIN)
    write_agent(home, "gate", hooks=["policy", "spin"], model="openai/unused")
    (home / "config.yaml").write_text("gate:\n  timeout: 4\n")
    assert "no decision within 4 s (the gate's timeout): hook spin did not return" in denied(
        gate(home, "codex", sample("codex", command="pwd")), "codex")


@pytest.mark.parametrize("value", ["inf", "1e10", "nan", "0", "-1"])
def test_an_unusable_timeout_is_a_deny_naming_it(home, value):
    reason = denied(gate(home, "codex", sample("codex"), "--timeout", value), "codex")
    shown = {"1e10": "1e+10", "0": "0", "-1": "-1"}.get(value, value)
    assert reason == f"denied by the Rienda gate: --timeout must be a positive number of seconds up to 3600, got {shown}"


@pytest.mark.parametrize("agent", AGENTS)
def test_a_hook_that_does_not_load_denies(home, agent):
    write_extension(home, "hooks", "policy", "module.exports = { beforeToolExecute( };")
    reason = denied(gate(home, agent, sample(agent)), agent)
    assert "hook policy did not load" in reason and "SyntaxError" in reason


@pytest.mark.parametrize("agent", AGENTS)
def test_a_broken_missing_or_unnamed_agent_denies(home, agent):
    write_agent_file(home, "gate", "---\nhooks: [policy\n---\n")
    assert "gate.md" in denied(gate(home, agent, sample(agent)), agent)
    assert "no agent 'nobody'" in denied(gate(home, agent, sample(agent), "--agent", "nobody"), agent)
    assert "not a valid agent id" in denied(gate(home, agent, sample(agent), "--agent", "../x"), agent)


@pytest.mark.parametrize("agent", AGENTS)
def test_a_missing_home_or_a_broken_config_denies(home, agent, tmp_path):
    reason = denied(gate(tmp_path / "nowhere", agent, sample(agent)), agent)
    assert f"the Rienda home {tmp_path / 'nowhere'} does not exist" in reason
    assert not (tmp_path / "nowhere").exists()  # a gate never makes a home
    (home / "config.yaml").write_text("gate: [1\n")
    assert "config.yaml" in denied(gate(home, agent, sample(agent)), agent)
    (home / "config.yaml").write_text("gate:\n  timeout: -1\n")
    assert "gate.timeout must be a positive number" in denied(gate(home, agent, sample(agent)), agent)


BAD_INPUT = {
    "empty": (b"", "the hook event is empty: nothing came on stdin"),
    "blank": (b" \n", "the hook event is empty: nothing came on stdin"),
    "not JSON": (b"{'tool_name': 'Bash'", "not valid JSON"),
    "not an object": (b'["PreToolUse"]', "must be a JSON object, got list"),
    "too large": (b'{"pad": "' + b"x" * (1024 * 1024) + b'"}', "larger than 1024 KiB"),
    "too deep": (b'{"tool_input": ' + b'{"a": ' * 100 + b"1" + b"}" * 101, "nested more than 64 levels deep"),
    "no tool": (b'{"hook_event_name": "PreToolUse", "tool_input": {}}', "has no tool_name"),
    "input not an object": (b'{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": "rm -rf /"}',
                            "tool_input must be a JSON object, got str"),
    "no input": (b'{"hook_event_name": "PreToolUse", "tool_name": "Bash", "toolArgs": {"command": "rm -rf /"}}',
                 "the PreToolUse event has no tool_input (the call's arguments); a gate cannot decide a call"),
    "not UTF-8": (b'{"tool_name": "\xff"}', "not valid JSON"),
}


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_denies(home, agent, case):
    data, why = BAD_INPUT[case]
    if case in ("no tool", "input not an object", "no input") and agent == "gemini-cli":
        data, why = data.replace(b"PreToolUse", b"BeforeTool"), why.replace("PreToolUse", "BeforeTool")
    assert why in denied(gate(home, agent, data), agent)
    assert not (home / "sessions").exists()  # nothing to record


@pytest.mark.parametrize("agent", AGENTS)
def test_an_event_no_point_answers_denies(home, agent):
    reason = denied(gate(home, agent, sample(agent, hook_event_name="Notification")), agent)
    assert f"{agent} sent the event 'Notification'; a gate answers" in reason


def test_an_unknown_agent_exits_2_with_the_reason_alone(home):
    done = gate(home, "cursor", sample("claude-code"))
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode() == ("rienda gate: unknown agent 'cursor' (one of claude-code, codex, gemini-cli, "
                                    "copilot-cli); denied\n")


@pytest.mark.parametrize("agent", AGENTS)
def test_a_failure_is_recorded_like_a_decision(home, agent):
    write_extension(home, "hooks", "policy", HOOKS["throws"])
    event = sample(agent)
    denied(gate(home, agent, event), agent)
    [session] = (home / "sessions").glob("*.jsonl")
    lines = [json.loads(line) for line in session.read_text().splitlines()]
    assert [line.get("effect") for line in lines if line["type"] == "hook_decision"] == ["threw"]
    result = lines[-1]
    assert result["role"] == "tool" and result["isError"] and result["meta"]["refused_by"] == "gate"
    assert result["meta"]["gate"] == {"answer": "deny", "failed": True}


def test_with_a_terminal_on_stdin_it_says_what_it_reads_and_waits_for_it(home):
    """A person trying the command at a prompt is told what to type; the gate's time starts
    once the event is in."""
    import os
    import pty
    import subprocess
    import sys

    main, terminal = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("RIENDA_HOME", "RIENDA_CONFIRM")}
    process = subprocess.Popen([sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), "gate", "codex",
                                "--timeout", "2"], stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=env)
    os.close(terminal)
    try:
        first = process.stderr.readline().decode()
        assert first == "rienda gate: reading one hook event (a JSON object) from stdin; end it with Ctrl-D\n"
        os.write(main, json.dumps(sample("codex", command="rm -rf /")).encode() + b"\n\x04")
        out, err = process.communicate(timeout=60)
    finally:
        os.close(main)
        process.kill()
    assert json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"] == "no rm -rf here (codex)"
