"""The real agent CLIs call a hook command on a shell call and obey its answer.

Each agent runs headless against the fake model server, which asks for one shell command.
The ``guard`` fixture is the hook, each of conftest's ``GUARDS`` in turn (a Python script;
an entry more, such as ``rienda gate AGENT`` with a JS hook, runs these tests unchanged
against it). A test proves the hook ran from what the hook itself recorded, not only from
the command's effect: Codex and Gemini CLI skip an untrusted hook without a word.
"""

from __future__ import annotations

from .harness.policies import DENY_REASON


def test_a_refused_rm_rf_leaves_the_file_and_the_model_reads_why(agent, guard, agent_trial):
    """Codex refuses ``rm -rf`` by itself (``test_agent_facts``): there the proof that the
    hook denied is its reason in what the model read."""
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
