"""How full the model's window is, where a run ends: ``rienda run``'s last line, ``--json``'s
``run_end`` event (the kernel's status line and ``%rienda ask``'s result are tested with
the kernel and the magics)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ..helpers.homes import scripted_home, write_agent_file, write_script


def run(home, work, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "run", *args], cwd=work, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "RIENDA_HOME": str(home)})


def test_run_end_carries_the_fill_and_the_last_line_says_it(tmp_path):
    home, work = scripted_home(tmp_path)
    write_agent_file(home, "small", "---\ndescription: d\nmodel: scripted/script.yaml\n"
                                    "options: {context_window: 2000}\n---\nBe brief.\n")
    write_script(work, [{"text": "Hi.", "usage": {"input_tokens": 1000, "output_tokens": 10}}])
    done = run(home, work, "--agent", "small", "--json", "hello")
    assert done.returncode == 0, done.stderr
    end = json.loads(done.stdout.splitlines()[-1])
    assert end["type"] == "run_end" and end["context"] == {"tokens": 1010, "window": 2000, "estimated": 0}
    write_script(work, [{"text": "Hi.", "usage": {"input_tokens": 1000, "output_tokens": 10}}])
    shown = run(home, work, "--agent", "small", "hello")
    assert shown.stderr.splitlines()[-1].endswith(" · usage: 1000 in, 10 out over 1 model turn · context 50 % of 2,000")


def test_an_unknown_window_is_null_and_not_shown(tmp_path):
    home, work = scripted_home(tmp_path)
    write_script(work, [{"text": "Hi."}])
    done = run(home, work, "--json", "hello")
    end = json.loads(done.stdout.splitlines()[-1])
    assert end["context"]["window"] is None and end["context"]["tokens"] == end["context"]["estimated"] > 0
    write_script(work, [{"text": "Hi."}])
    assert "context" not in run(home, work, "hello").stderr
