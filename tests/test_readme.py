"""README.md's first two commands: the newcomer's pair, true as written and in that order.

CI (``.ci/run``) runs both exactly as the README shows them, on a fresh clone, and checks
that the first leaves the checkout clean; these tests check the same promises from inside
the suite (without running the suite from inside itself).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    block = re.search(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block, "README.md must start with a ```sh block holding the two commands"
    return [line for line in block.group(1).splitlines() if line.strip()][:2]


def checkout_state() -> str:
    """Everything git sees in the checkout, ignored files included (but the virtualenv
    CI makes there before running the README's commands)."""
    listing = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
    return "\n".join(line for line in listing.splitlines() if not line[3:].startswith(".venv/"))


def test_the_readme_starts_with_the_install_and_run_command_then_the_test_command():
    first, second = readme_commands()
    assert first.split(" && ") == ["pip install .", "rienda demo"]
    assert second.split(" && ") == ["pip install -e '.[test]'", "python -m pytest -q"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "readme_command 1" in ci and "readme_command 2" in ci  # CI runs these very lines


def test_the_first_readme_command_runs_an_agent_turn_offline_and_writes_nothing_into_the_checkout(tmp_path):
    first, _ = readme_commands()
    command = shlex.split(first.split(" && ")[1])
    before = checkout_state()
    rienda = Path(sys.executable).parent / command[0]  # the entry point pip installed beside this Python
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "HOME": str(tmp_path / "user")}
    env.pop("RIENDA_HOME", None)
    done = subprocess.run([str(rienda), *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("notes.txt has 27 words.\n")
    assert "← word-count: 27" in done.stderr
    assert "registered the Rienda Jupyter kernel in" in done.stderr and '"Rienda" in the launcher' in done.stderr
    sessions = list((tmp_path / "data" / "rienda" / "demo" / "home" / "sessions").glob("*.jsonl"))
    assert len(sessions) == 1
    assert f"{sessions[0].stem} saved" in done.stderr
    assert checkout_state() == before


def test_the_demo_run_twice_keeps_its_sessions_and_refreshes_its_examples(tmp_path):
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    demo = [sys.executable, "-m", "rienda_kernel.cli", "demo", "--no-kernel"]
    subprocess.run(demo, cwd=tmp_path, env=env, capture_output=True, check=True, timeout=120)
    tool = tmp_path / "data" / "rienda" / "demo" / "home" / "tools" / "word-count" / "index.js"
    tool.write_text("broken(")
    done = subprocess.run(demo, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "registered the Rienda Jupyter kernel" not in done.stderr
    assert len(list(tool.parents[2].joinpath("sessions").glob("*.jsonl"))) == 2
    assert list(tmp_path.iterdir()) == [tmp_path / "data"]  # nothing in the directory it ran from
