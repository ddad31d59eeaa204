"""``--run-tools`` and MCP servers (issue 33): a recorded call whose server no longer
starts, or starts but no longer lists the tool, is a difference naming the tool and why,
never the recorded result passed as "same as recorded"; real stdio servers, and
``rienda replay`` as a real process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rienda_kernel.engine import Rienda

from ...helpers.mcp_servers import lab_server, quitter_server, time_server, write_config
from .mcp_setup import Home, results


@pytest.fixture
def recorded(tmp_path, sandbox):
    """A session whose agent called mcp__lab__double once, its Rienda closed."""
    setup = Home(tmp_path, {"lab": lab_server(tmp_path / "lab")}, sandbox)
    result, _ = setup.run(["mcp__lab"], [("mcp__lab__double", {"n": 7})])
    assert results(result) == [("14", False)]
    setup.rienda.close()
    return setup, result.session_id


def replay_again(setup, session_id):
    rienda = Rienda(setup.home, setup.work, sandbox=setup.sandbox)
    try:
        return rienda.replay(session_id, run_tools=True)
    finally:
        rienda.close()


def test_a_server_that_no_longer_starts_fails_the_replay_naming_the_tool_and_why(recorded):
    setup, session_id = recorded
    write_config(setup.home, {"lab": quitter_server("lab: no API token given\n")})
    report = replay_again(setup, session_id)
    assert report.changed and report.calls[0].now_result is None
    [difference] = report.calls[0].differences
    assert difference.startswith("not run again: tool 'mcp__lab__double': MCP server 'lab' (")
    assert "lab: no API token given" in difference
    env = {**os.environ, "RIENDA_HOME": str(setup.home)}
    done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "replay", session_id, "--run-tools"],
                          cwd=setup.work, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "not run again: tool 'mcp__lab__double': MCP server 'lab'" in done.stdout
    assert "same as recorded" not in done.stdout and done.stdout.strip().endswith("differences found")


def test_a_server_that_starts_but_no_longer_lists_the_tool_fails_the_replay(recorded):
    setup, session_id = recorded
    write_config(setup.home, {"lab": time_server()})
    report = replay_again(setup, session_id)
    [difference] = report.calls[0].differences
    assert difference.startswith("not run again: tool 'mcp__lab__double': MCP server 'lab' has no tool 'double' "
                                 "(its tools: convert_time, get_current_time)"), difference
