"""README.md's first command (the newcomer's main job) keeps working."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_first_readme_command_runs_an_agent_turn_offline(tmp_path):
    block = re.search(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    install, _, command = block.splitlines()[0].partition(" && ")
    assert install == "pip install -e ."
    examples = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", examples)  # the run writes a session into examples/home
    done = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": os.environ["PATH"]})
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("notes.txt has 27 words.\n")
    assert "← word-count: 27" in done.stderr
    assert len(list((examples / "home" / "sessions").glob("*.jsonl"))) == 1
