"""``rienda gate AGENT`` as the real agents' hook (issue 31). That a JavaScript hook in a
throwaway Rienda home refuses ``rm -rf`` and rewrites a command in every agent is shown by
``test_hooks_in_agents`` (the gate is one of conftest's ``GUARDS``); here, whatever goes wrong
in the gate is a refusal in every agent, where a failing hook command is let through by three
of the four (``test_agent_facts``), and a confirm never hangs nor runs the call."""

from __future__ import annotations

from ..helpers.homes import write_agent_file
from .harness.gate_policy import GatePolicy

THROWS = "module.exports = { beforeToolExecute(ctx, call) { throw new Error('the policy broke'); } };"
CONFIRMS = """module.exports = { beforeToolExecute(ctx, call) {
  if (!ctx.confirm({ title: "Run it?", body: call.arguments.command })) return { allow: false, reason: "not confirmed" };
} };"""
# What the gate answers a hook's ctx.confirm with (its default, confirm: ask): the agent's own
# question where it can ask (headless, Claude Code and Copilot CLI refuse), else a deny.
CONFIRM_ANSWER = {"claude-code": "ask", "codex": "deny", "gemini-cli": "deny", "copilot-cli": "ask"}


def _refused(agent, agent_trial, policy: GatePolicy):
    trial = agent_trial(agent, policy, "echo RAN > ran.txt", timeout=60)
    assert trial.run.exit_code == 0, trial.describe()
    assert not (trial.project / "ran.txt").exists(), trial.describe()
    return trial


def test_a_hook_that_throws_is_a_refusal_in_every_agent(agent, agent_trial, gate_policy):
    policy = gate_policy(THROWS)
    trial = _refused(agent, agent_trial, policy)
    assert policy.commands_seen() == ["echo RAN > ran.txt"], trial.describe()
    assert any("the policy broke" in result for result in trial.server.tool_results()), trial.describe()


def test_a_broken_agent_file_is_a_refusal_in_every_agent(agent, agent_trial, gate_policy):
    policy = gate_policy()
    write_agent_file(policy.home, "gate", "---\nhooks: [unclosed\n---\n")
    trial = _refused(agent, agent_trial, policy)
    assert policy.commands_seen() == ["echo RAN > ran.txt"], trial.describe()
    assert any("denied by the Rienda gate" in result and "gate.md" in result
               for result in trial.server.tool_results()), trial.describe()


def test_a_confirm_is_a_refusal_in_every_agent_run_headless_and_never_hangs(agent, agent_trial, gate_policy):
    """Claude Code and Copilot CLI get ``ask`` (headless, they refuse); Codex would run an
    ``ask`` and Gemini CLI would hang on one, so they get a deny."""
    policy = gate_policy(CONFIRMS)
    trial = _refused(agent, agent_trial, policy)
    assert policy.commands_seen() == ["echo RAN > ran.txt"], trial.describe()
    assert policy.answers() == [CONFIRM_ANSWER[agent]], trial.describe()
