"""What the ``%rienda`` magics show of the hooks' actions: in a terminal IPython (no kernel:
the terminal's lines) and in a python3 kernel through jupyter_client (the cell's outputs)."""

from __future__ import annotations

import subprocess
import sys

from ...helpers import terminal_ipython
from ...helpers.hook_walk import THROW_AT, walk_home
from ...helpers.homes import scripted_home


def test_terminal_ipython_shows_each_hook_action_and_how_to_see_a_whole_result(tmp_path):
    home, work = scripted_home(tmp_path)
    walk_home(home, work)
    program = terminal_ipython.program('ip.run_line_magic("rienda", "use walk")', 'r = ip.run_line_magic("rienda", "ask go")',
                                       'print("RESULT", r.reason, r.session_id)')
    done = subprocess.run([sys.executable, "-c", program], cwd=work, capture_output=True, text=True, timeout=120,
                          env=terminal_ipython.environment(tmp_path, home))
    assert "RESULT end_turn" in done.stdout, done.stderr
    session = done.stdout.split("RESULT end_turn ")[1].split()[0]
    lines = done.stderr.splitlines()
    for expected in ['→ shell {"command": "rm -rf victim"}', "  ✋ hook guard refused the call: no rm -rf here",
                     """  ✎ hook tidy rewrote the call's arguments: command "ls" → "ls -1 nothing-here\"""",
                     "  ✎ hook redact rewrote the result: text 153 → 148 characters",
                     "✎ hook brief rewrote the model request: system 13 → 23 characters",
                     "✎ hook brief rewrote the model's answer: text 4 → 4 characters",
                     f"    … 2 more lines (all of it: rienda show {session} --full)"]:
        assert expected in lines, (expected, done.stderr)
    thrown = [line for line in lines if line.startswith("diagnostic: hook thrower threw in afterToolExecute")]
    assert len(thrown) == 2 and THROW_AT in thrown[0]


def test_a_python_kernel_shows_each_hook_action_in_the_cell(python_kernel):
    home, work, start = python_kernel
    walk_home(home, work)
    fe = start()
    reply, _ = fe.run("%rienda use walk")
    assert reply["status"] == "ok"
    reply, messages = fe.run("r = %rienda ask go")
    assert reply["status"] == "ok", reply
    plain = [m["content"]["data"].get("text/plain", "") for m in messages if m["msg_type"] == "display_data"]
    shown = "\n".join(plain)
    assert "  ✋ hook guard refused the call: no rm -rf here" in shown
    assert """  ✎ hook tidy rewrote the call's arguments: command "ls" → "ls -1 nothing-here\"""" in shown
    assert "  ✎ hook redact rewrote the result: text 153 → 148 characters" in shown
    assert "  ⚠ hook thrower threw in afterToolExecute and was skipped: TypeError" in shown and THROW_AT in shown
    assert "✎ hook brief rewrote the model's answer: text 4 → 4 characters" in plain
    assert '← shell: {\n  "items": [' in shown
