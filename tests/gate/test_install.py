"""``rienda gate install | uninstall AGENT``, ``rienda gate status``: the entries of every
event written into each agent's own settings file, merged with what is there (never
clobbering), once however often it is run, reversed exactly; ``--dry-run`` prints the
change; a file that cannot be merged with is one line naming it. (The agents running what
is installed: tests/agents/test_gate_points.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from rienda_kernel.engine.gate.protocols import WIRED_EVENTS

CLAUDE_SETTINGS = """{
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "my-own-hook.sh"
          }
        ]
      }
    ]
  }
}
"""
CODEX_CONFIG = """model = "gpt-5"  # mine

[features]
web_search = true

[[hooks.PreToolUse]]
matcher = "Bash"

[[hooks.PreToolUse.hooks]]
type = "command"
command = "my-own-hook.sh"
"""


def gate(home: Path, user: Path, cwd: Path, *words: str) -> subprocess.CompletedProcess:
    env = {**{k: v for k, v in os.environ.items() if k not in ("RIENDA_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME",
                                                                  "COPILOT_HOME")}, "HOME": str(user)}
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), "gate", *words], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def places(home, tmp_path):
    user, project = tmp_path / "user", tmp_path / "project"
    user.mkdir()
    project.mkdir()
    return home, user, project


FILES = {"claude-code": ".claude/settings.json", "codex": ".codex/config.toml", "gemini-cli": ".gemini/settings.json",
         "copilot-cli": ".copilot/hooks/rienda-gate.json"}


def _read(path: Path, agent: str) -> dict:
    return tomllib.loads(path.read_text()) if agent == "codex" else json.loads(path.read_text())


@pytest.mark.parametrize("agent", list(FILES))
def test_install_is_one_entry_per_event_however_often_and_uninstall_leaves_the_file_as_it_was(places, agent):
    home, user, project = places
    path = user / FILES[agent]
    path.parent.mkdir(parents=True)
    own = json.loads(CLAUDE_SETTINGS)  # a hook of the user's own, in the agent's own shape (2-space JSON)
    original = {"claude-code": CLAUDE_SETTINGS, "codex": CODEX_CONFIG,
                "gemini-cli": json.dumps({"general": {"vimMode": True}, "hooks": own["hooks"]}, indent=2) + "\n",
                "copilot-cli": json.dumps({"version": 1, "hooks": own["hooks"]}, indent=2) + "\n"}[agent]
    path.write_text(original)
    for _ in range(3):
        done = gate(home, user, project, "install", agent)
        assert done.returncode == 0, done.stderr
    data = _read(path, agent)
    for event in WIRED_EVENTS[agent]:
        ours = [entry for group in data["hooks"][event] for entry in group["hooks"] if "rienda-gate" in entry["command"]]
        assert len(ours) == 1, event
        command = ours[0]["command"].split()
        assert Path(command[0]).is_absolute() and command[1:] == [agent, "--home", str(home.resolve()), "--agent",
                                                                  "gate", "--timeout", "10"]
        assert ours[0]["timeout"] == (15000 if agent == "gemini-cli" else 15)  # above the gate's own 10 s
    if agent != "gemini-cli":  # the entry that was there stays as it was (Gemini CLI's tool event is BeforeTool)
        assert data["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "my-own-hook.sh"
    if agent == "codex":
        assert data["features"] == {"web_search": True, "hooks": True} and data["model"] == "gpt-5"
    done = gate(home, user, project, "uninstall", agent)
    assert done.returncode == 0, done.stderr
    assert path.read_text() == original


@pytest.mark.parametrize("agent", list(FILES))
def test_a_file_made_by_install_is_gone_after_uninstall(places, agent):
    home, user, project = places
    assert gate(home, user, project, "install", agent).returncode == 0
    assert (user / FILES[agent]).exists()
    assert gate(home, user, project, "uninstall", agent).returncode == 0
    assert not (user / FILES[agent]).exists()


def test_dry_run_prints_the_change_and_makes_none(places):
    home, user, project = places
    done = gate(home, user, project, "install", "gemini-cli", "--project", "--dry-run")
    assert done.returncode == 0 and done.stdout.startswith("--- /dev/null\n+++ ")
    assert '+        "matcher": "*",' in done.stdout and "(--dry-run:" in done.stdout.splitlines()[-1]
    assert not (project / ".gemini").exists()


def test_status_says_what_is_wired_where_and_whether_the_server_is_warm(places):
    home, user, project = places
    gate(home, user, project, "install", "claude-code", "--project")
    lines = gate(home, user, project, "status").stdout.splitlines()
    assert f"claude-code (project): 6 events wired in {project / '.claude/settings.json'}" in lines[1]
    assert lines[0] == f"claude-code (user): not wired ({user / '.claude/settings.json'})"
    assert lines[-1] == f"gate server of {home.resolve()}: not running (the next call decides cold and starts it)"


@pytest.mark.parametrize("agent,text,why", [
    ("claude-code", "{not json", "not valid JSON"),
    ("claude-code", '{"hooks": []}', "its hooks are not a JSON object"),
    ("codex", "[features]\nhooks = false\n", "[features] sets hooks = false"),
    ("codex", "hooks = 1\n", "its hooks are written in a form rienda gate cannot add to"),
])
def test_a_file_that_cannot_be_merged_with_is_one_line_and_left_alone(places, agent, text, why):
    home, user, project = places
    path = user / FILES[agent]
    path.parent.mkdir(parents=True)
    path.write_text(text)
    done = gate(home, user, project, "install", agent)
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1 and why in done.stderr, done.stderr
    assert f"~/{FILES[agent]}" in done.stderr and path.read_text() == text  # the path as the reader sees it


def test_agents_without_project_hooks_and_unknown_agents_are_one_line(places):
    home, user, project = places
    done = gate(home, user, project, "install", "codex", "--project")
    assert (done.returncode, done.stderr) == (1, "rienda: codex reads no hooks from a project's folder (in the "
                                                 "version tested); use --user\n")
    done = gate(home, user, project, "install", "cursor")
    assert done.returncode == 1 and "takes the agent: one of claude-code" in done.stderr
