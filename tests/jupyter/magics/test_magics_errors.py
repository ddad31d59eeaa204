"""The %rienda magics in a real python3 kernel: a command given a bad path or payload, and a
bug (injected through IPython's startup files), are one line (IPython's UsageError, not
its 38-line traceback), and the next cell works."""

from __future__ import annotations

import json

from ...helpers.frontend import streams
from ...helpers.homes import write_script

BUG = """
import rienda_kernel.jupyter.magics as magics

def broken(*args, **kwargs):
    raise ZeroDivisionError("a deliberate bug")

magics.run_rienda_command = broken
"""


def one_line(frontend, code):
    reply, messages = frontend.run(code)
    assert reply["status"] == "error" and reply["ename"] == "UsageError", reply
    assert "Traceback" not in json.dumps(messages, default=str)
    assert not [m for m in messages if m["msg_type"] == "error" and len(m["content"]["traceback"]) > 1]
    [line] = streams(messages, "stderr").splitlines()
    return line


def the_next_cell_works(frontend):
    reply, messages = frontend.run("r = %rienda ask hello\nprint(r.text)")
    assert reply["status"] == "ok" and "fine" in streams(messages, "stdout"), reply


def test_a_command_given_a_bad_path_or_payload_is_one_line(python_kernel, tmp_path):
    home, work, start = python_kernel
    (home / "hooks" / "g").mkdir(parents=True)
    (home / "hooks" / "g" / "index.js").write_text("module.exports = { beforeToolExecute(ctx, call) {} };")
    write_script(work, [{"text": "fine"}] * 20)
    fe = start()
    the_next_cell_works(fe)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    cases = {
        f"%rienda home {a_file}": f"UsageError: %rienda home: {a_file} is a file, not a folder",
        f"%rienda script last {tmp_path}/missing/x.yaml": f"UsageError: %rienda script: {tmp_path}/missing/x.yaml: "
                                                          f"the folder {tmp_path}/missing does not exist",
        "%rienda script last .": "UsageError: %rienda script: . is a folder, not a file",
        "%rienda hook g beforeToolExecute " + "[" * 100_000: None,
    }
    for code, expected in cases.items():
        line = one_line(fe, code)
        assert line == expected if expected else line.startswith("UsageError: ") and len(line) < 400, (code, line)
        the_next_cell_works(fe)


def test_a_bug_is_one_line_and_the_next_cell_works(python_kernel, tmp_path):
    home, work, start = python_kernel
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-bug.py").write_text(BUG)
    write_script(work, [{"text": "fine"}] * 20)
    fe = start()
    assert one_line(fe, "%rienda sessions") == ("UsageError: ZeroDivisionError: a deliberate bug (an internal error "
                                                "of Rienda)")
    the_next_cell_works(fe)
