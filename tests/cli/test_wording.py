"""One thing said one way, wherever it is said (issue 40): a file a tool cannot find is named
once, as the reader sees it; what a compaction pruned and folded is one phrase, singular
and plural right; the demo's hint names its home whole, so it runs from any folder. (The
arrow of ``rienda hook``'s changes: tests/cli/test_hook.py.)"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

from rienda_kernel.engine import pruned_and_folded

from ..helpers.cli import rienda


def test_a_missing_file_is_named_once_as_the_reader_sees_it(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    here = rienda(tmp_path / "home", work, "call", "read", '{"path": "missing.txt"}')
    assert (here.returncode, here.stdout) == (1, "no such file: missing.txt\n")
    above = rienda(tmp_path / "home", tmp_path, "call", "read", '{"path": "missing.txt"}', "--workdir", "work")
    assert (above.returncode, above.stdout) == (1, "no such file: work/missing.txt\n")
    elsewhere = rienda(tmp_path / "home", work, "call", "read", '{"path": "../gone/x.txt"}')
    assert elsewhere.stdout == "no such file: ../gone/x.txt\n"


def test_what_a_compaction_pruned_and_folded_is_one_phrase():
    assert pruned_and_folded(1, 0) == "pruned 1 tool result"
    assert pruned_and_folded(0, 1) == "folded 1 message into a summary"
    assert pruned_and_folded(3, 12) == "pruned 3 tool results, folded 12 messages into a summary"
    assert pruned_and_folded(0, 0) == "nothing pruned or folded"


def demo(data, cwd) -> str:
    """``rienda demo --no-kernel`` run from ``cwd`` with its data in ``data``: the hint's command."""
    env = {**os.environ, "XDG_DATA_HOME": str(data)}
    done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "demo", "--no-kernel"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    [hint] = [line for line in done.stderr.splitlines() if " saved; see it with: " in line]
    return hint.split(" saved; see it with: ", 1)[1]


def test_the_demos_hint_is_the_same_and_right_from_any_folder(tmp_path):
    data = tmp_path / "data"
    root = data / "rienda" / "demo"
    hints = [demo(data, tmp_path), demo(data, tmp_path)]
    (root / "home" / "deeper").mkdir(parents=True, exist_ok=True)
    hints += [demo(data, root), demo(data, root / "home"), demo(data, root / "home" / "deeper")]
    assert set(hints) == {f"rienda --home {root / 'home'} show last"}, hints
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    command = [sys.executable, "-m", "rienda_kernel.cli", *shlex.split(hints[0])[1:]]
    shown = subprocess.run(command, cwd=elsewhere, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "notes.txt has 27 words." in shown.stdout, shown.stderr
