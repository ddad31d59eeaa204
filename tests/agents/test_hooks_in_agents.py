"""The real agent CLIs call a hook command on a shell call and obey its answer.

Each agent runs headless against the fake model server, which asks for one shell command.
The ``guard`` fixture is the hook (a Python script here; Rienda's gate tests give their own
and import the first two tests). A test proves the hook ran from what the hook itself
recorded, not only from the command's effect: Codex and Gemini CLI skip an untrusted hook
without a word.
"""

from __future__ import annotations

from .harness.policies import DENY_REASON

# Codex refuses `rm -f` style commands by itself, even with approvals and sandbox bypassed:
# there the file surviving proves nothing, the hook's reason in what the model read does.
REFUSES_RM_RF_ITSELF = {"claude-code": False, "codex": True, "gemini-cli": False, "copilot-cli": False}
# Whether the agent runs the call when its hook exits 1 (measured; agents-gate.md says the same).
RUNS_THE_CALL_WHEN_THE_HOOK_FAILS = {"claude-code": True, "codex": True, "gemini-cli": True, "copilot-cli": False}


def test_a_refused_rm_rf_leaves_the_file_and_the_model_reads_why(agent, guard, agent_trial):
    trial = agent_trial(agent, guard, "rm -rf target.txt", files={"target.txt": "keep\n"})
    assert trial.run.exit_code == 0, trial.describe()
    assert "rm -rf target.txt" in guard.commands_seen(), trial.describe()
    assert (trial.project / "target.txt").read_text() == "keep\n", trial.describe()
    assert any(DENY_REASON in result for result in trial.server.tool_results()), trial.describe()


def test_a_rewritten_command_is_the_one_that_runs(agent, guard, agent_trial):
    trial = agent_trial(agent, guard, "echo A > out.txt")
    assert trial.run.exit_code == 0, trial.describe()
    assert "echo A > out.txt" in guard.commands_seen(), trial.describe()
    assert (trial.project / "out.txt").read_text() == "B\n", trial.describe()


def test_whether_a_hook_that_exits_1_lets_the_call_run(agent, crashing_hook, agent_trial):
    """Documents each agent's answer to a failing hook: three of four fail open."""
    trial = agent_trial(agent, crashing_hook, "echo RAN > ran.txt")
    assert crashing_hook.commands_seen() == ["echo RAN > ran.txt"], trial.describe()
    ran = (trial.project / "ran.txt").exists()
    assert ran == RUNS_THE_CALL_WHEN_THE_HOOK_FAILS[agent], trial.describe()


def test_without_a_deny_rm_rf_runs_except_where_the_agent_refuses_it(agent, allowing_hook, agent_trial):
    """The control for the first test: an allowing hook, the same command."""
    trial = agent_trial(agent, allowing_hook, "rm -rf target.txt", files={"target.txt": "keep\n"})
    assert allowing_hook.commands_seen() == ["rm -rf target.txt"], trial.describe()
    survived = (trial.project / "target.txt").exists()
    assert survived == REFUSES_RM_RF_ITSELF[agent], trial.describe()
    assert not any(DENY_REASON in result for result in trial.server.tool_results()), trial.describe()
