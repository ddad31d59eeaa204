"""The Rienda kernel replies to every request: a command given a path that is not what it
needs, a pathological payload, and a bug in any request handler (injected into the real
kernel through IPython's startup files) each end in one line, and the next cell works."""

from __future__ import annotations

import json

import pytest

from ...helpers.homes import write_script

BUG = """
import rienda_kernel.jupyter.kernel as kernel

def broken(*args, **kwargs):
    raise ZeroDivisionError("a deliberate bug")

kernel.run_rienda_command = kernel.complete = kernel.inspect = broken
"""


def one_error_line(reply, messages):
    """The error's one line: the reply and the cell's only error output agree, no traceback."""
    assert reply["status"] == "error", reply
    errors = [m["content"] for m in messages if m["msg_type"] == "error"]
    assert len(errors) == 1 and len(errors[0]["traceback"]) == 1, errors
    assert "Traceback" not in json.dumps(messages, default=str)
    return f"{reply['ename']}: {reply['evalue']}"


def the_next_cell_works(fe):
    reply, messages = fe.run("hello")
    assert reply["status"] == "ok", reply


@pytest.fixture
def recorded(frontend_factory, home):
    """A kernel whose home has a hook and one saved session."""
    root, work = home
    (root / "hooks" / "g").mkdir(parents=True)
    (root / "hooks" / "g" / "index.js").write_text("module.exports = { beforeToolExecute(ctx, call) {} };")
    write_script(work, [{"text": "fine"}] * 20)
    fe = frontend_factory()
    assert fe.run("hello")[0]["status"] == "ok"
    return fe


def test_a_command_given_a_bad_path_or_payload_is_one_line_and_the_next_cell_works(recorded, tmp_path):
    fe = recorded
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    cases = {
        f"%rienda home {a_file}": f"UsageError: %rienda home: {a_file} is a file, not a folder",
        f"%rienda script last {tmp_path}/missing/x.yaml": f"UsageError: %rienda script: {tmp_path}/missing/x.yaml: "
                                                          f"the folder {tmp_path}/missing does not exist",
        "%rienda script last .": "UsageError: %rienda script: . is a folder, not a file",
    }
    for code, line in cases.items():
        assert one_error_line(*fe.run(code)) == line, code
        the_next_cell_works(fe)
    deep = "%rienda hook g beforeToolExecute " + "[" * 100_000
    line = one_error_line(*fe.run(deep))
    assert line.startswith("UsageError: ") and len(line) < 400
    the_next_cell_works(fe)


def test_a_bug_in_any_request_handler_still_gets_its_reply(frontend_factory, tmp_path):
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-bug.py").write_text(BUG)
    write_script(tmp_path / "work", [{"text": "fine"}] * 20)
    fe = frontend_factory()
    completion = fe.kc.complete("%rienda res", 11, reply=True, timeout=30)["content"]
    assert (completion["status"], completion["matches"]) == ("ok", [])
    inspection = fe.kc.inspect("%rienda use", 10, reply=True, timeout=30)["content"]
    assert (inspection["status"], inspection["found"]) == ("ok", False)
    assert fe.reply(fe.kc.is_complete("hello"))["status"] == "complete"
    assert one_error_line(*fe.run("%rienda sessions")) == (
        "ZeroDivisionError: a deliberate bug (an internal error of Rienda: the kernel's log has its traceback)")
    the_next_cell_works(fe)
