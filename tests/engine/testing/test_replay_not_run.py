"""``--run-tools`` never passes a call it could not make (issue 33): a tool since removed,
one whose file no longer loads, one the agent no longer declares, each is a difference
naming the tool and why, in the report, its text, ``--json`` and the exit code of
``rienda replay`` (a real process); a call that was to an undeclared tool when recorded
ran nothing then and is not one. The MCP cases are in tests/engine/tools/test_mcp_replay.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from rienda_kernel.engine import NonInteractiveUI
from rienda_kernel.engine.testing.replay import replay_session

from ...helpers.homes import write_agent, write_script
from ...helpers.recorded_session import record_session


def cli_replay(rig, *args):
    env = {**os.environ, "RIENDA_HOME": str(rig.home)}
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "replay", "last", *args], cwd=rig.workdir,
                          env=env, capture_output=True, text=True, timeout=60)


def test_a_removed_tool_is_a_difference_not_the_recorded_result(rig):
    rienda, result = record_session(rig)
    shutil.rmtree(rig.home / "tools" / "echo")
    report = replay_session(rienda, result.session_id, run_tools=True)
    assert report.changed
    first = report.calls[0]
    assert first.now_result is None
    assert first.differences == [f"not run again: no tool 'echo' in {rig.home / 'tools'} or the built-ins"]
    assert "= echo" not in "\n".join(report.lines()) and report.lines()[-1] == "differences found"
    assert not replay_session(rienda, result.session_id).changed  # without --run-tools the recording stands
    done = cli_replay(rig, "--run-tools")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "≠ echo [call_1_1]" in done.stdout and "not run again: no tool 'echo'" in done.stdout
    as_json = json.loads(cli_replay(rig, "--run-tools", "--json").stdout)
    assert as_json["changed"] is True
    assert as_json["calls"][0]["not_run"].startswith("no tool 'echo' in ")


def test_a_tool_whose_file_no_longer_loads_is_a_difference_naming_the_skip(rig):
    rienda, result = record_session(rig)
    (rig.home / "tools" / "echo" / "index.js").write_text("module.exports = {{ not javascript")
    report = replay_session(rienda, result.session_id, run_tools=True)
    reason = report.calls[0].not_run
    assert reason.startswith("tool 'echo' was skipped: ") and "SyntaxError" in reason, reason
    done = cli_replay(rig, "--run-tools")
    assert done.returncode == 1 and "not run again: tool 'echo' was skipped" in done.stdout, done.stdout + done.stderr


def test_a_tool_the_agent_no_longer_declares_is_a_difference(rig):
    rienda, result = record_session(rig)
    agent = write_agent(rig.home, "worker", ["shell"], description=None, body="Work.")
    report = replay_session(rienda, result.session_id, run_tools=True)
    assert report.calls[0].differences == [f"not run again: {agent} no longer declares tool 'echo' (its tools: shell)"]
    done = cli_replay(rig, "--run-tools")
    assert done.returncode == 1 and "no longer declares tool 'echo'" in done.stdout, done.stdout + done.stderr


def test_a_call_to_a_tool_not_declared_when_recorded_ran_nothing_then_and_is_no_difference(rig):
    rienda, _ = record_session(rig)
    write_script(rig.workdir, [{"text": "Trying.", "tool_calls": [{"name": "nope", "arguments": {}}]}, {"text": "Ok."}])
    result = rienda.conversation("worker").run("go", NonInteractiveUI())
    assert [m.text for m in result.messages if m.role == "tool"][0].startswith("unknown tool 'nope'; ")
    report = replay_session(rienda, result.session_id, run_tools=True)
    assert not report.changed, report.lines()
