"""A hook that never returns, through the real ``rienda`` command: on a pipe (``rienda run``),
on a pty (``rienda chat``, where Ctrl-C is the terminal's), and as ``--json``.

The run says which hook it waits on once the hook has run NOTICE_AFTER_S seconds, live; a
stop while it runs names it in the call's result, in the ledger and in ``rienda show``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from ..helpers.cli import rienda
from ..helpers.homes import call_script, only_session_lines, scripted_home, write_agent, write_extension, write_script
from ..helpers.pipes import read_until
from ..helpers.signals import interruptible
from ..helpers.terminals import CTRL_C, CTRL_D, PtyChat

WAITING = "waiting on hook loop (beforeToolExecute)… Ctrl-C stops it\n"
STOPPED = "interrupted while hook loop was running (beforeToolExecute, "


@pytest.fixture
def looping(tmp_path):
    """A home whose agent ``looper`` has a hook that never returns at beforeToolExecute
    (30 s at most: a test's own bound) and a tool it would call."""
    home, work = scripted_home(tmp_path)
    write_extension(home, "hooks", "loop", "module.exports = { beforeToolExecute() {"
                    " const end = Date.now() + 30000; while (Date.now() < end) {} } };")
    write_extension(home, "tools", "noop", 'module.exports = { description: "n", parameters: { type: "object" },'
                    ' execute: () => "ran" };')
    write_agent(home, "looper", ["noop"], ["loop"])
    write_script(work, call_script("noop", then="Next turn."))
    return home, work


def started(home, work, *args: str) -> subprocess.Popen:
    """``rienda *args`` on pipes, with SIGINT at its default (as a person's Ctrl-C finds it)."""
    return subprocess.Popen(interruptible([sys.executable, "-m", "rienda_kernel.cli", *args]), cwd=work,
                            env={**os.environ, "RIENDA_HOME": str(home)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_on_a_pipe_the_hook_is_named_live_and_in_everything_a_stop_leaves(looping):
    home, work = looping
    run = started(home, work, "run", "--agent", "looper", "go")
    shown = read_until(run, "stderr", WAITING)
    run.send_signal(signal.SIGINT)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 130
    assert shown.endswith(WAITING) and shown.count("waiting on") == 1
    assert err.startswith(f"✗ noop: {STOPPED}") and "; the tool never ran\n" in err
    assert "\n  ⏹ hook loop was stopped in beforeToolExecute after " in err
    assert "rienda: interrupted\n" in err
    records = only_session_lines(home)
    [decision] = [r for r in records if r["type"] == "hook_decision"]
    assert (decision["hook"], decision["point"], decision["effect"]) == ("loop", "beforeToolExecute", "stopped")
    [result] = [r for r in records if r.get("role") == "tool"]
    assert result["text"].startswith(STOPPED) and result["text"].endswith("; the tool never ran")
    show = rienda(home, work, "show", "last")
    assert "    ⏹ hook loop was stopped in beforeToolExecute after " in show.stdout
    assert f"  ✗ noop [{result['tool_call_id']}]: {STOPPED}" in show.stdout


def test_json_has_the_waiting_event(looping):
    home, work = looping
    run = started(home, work, "run", "--agent", "looper", "--json", "go")
    line = read_until(run, "stdout", '"type": "waiting"')
    line += read_until(run, "stdout", "\n")
    run.send_signal(signal.SIGINT)
    out, _ = run.communicate(timeout=60)
    waiting = json.loads(line.splitlines()[-1])
    assert waiting == {"type": "waiting", "depth": 0, "session_id": None, "on": "hook", "name": "loop",
                       "seconds": 2.0, "point": "beforeToolExecute", "call_id": "call_1_1"}
    events = [json.loads(text) for text in out.splitlines()]
    assert [(e["hook"], e["effect"]) for e in events if e["type"] == "hook_decision"] == [("loop", "stopped")]
    assert events[-1]["type"] == "run_end" and events[-1]["reason"] == "interrupted"


def test_on_a_terminal_ctrl_c_stops_the_named_hook_and_the_chat_goes_on(looping):
    home, work = looping
    chat = PtyChat(home, work, "--agent", "looper")
    try:
        chat.expect("looper> ")
        chat.line("go")
        chat.expect(WAITING.rstrip("\n"))
        chat.send(CTRL_C)
        shown = chat.expect("looper> ")
        assert f"✗ noop: {STOPPED}" in shown and "; the tool never ran" in shown
        assert "⏹ hook loop was stopped in beforeToolExecute after " in shown
        chat.line("and now?")
        assert "Next turn." in chat.expect("looper> ")
        chat.send(CTRL_D)
        assert chat.wait() == 0
    finally:
        chat.close()
