"""Every exit status docs/cli.md promises ("Exit status"), each seen from a real ``rienda``
process in a situation the page names, with its one line on stderr and never a traceback
(issue 40). (Each status has its own tests beside its command too: this file holds the
page to the program, row by row.)"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from ..helpers.homes import scripted_home, write_agent, write_extension, write_script
from ..helpers.paths import REPO
from ..helpers.pipes import read_until
from ..helpers.ports import free_port
from ..helpers.signals import interruptible


def promised() -> set[int]:
    """The statuses of docs/cli.md's "Exit status" table."""
    section = (REPO / "docs" / "cli.md").read_text().split("## Exit status", 1)[1]
    return {int(status) for status in re.findall(r"^\| (\d+) \|", section, re.M)}


@pytest.fixture
def dirs(tmp_path):
    """(home, work): the default agent on the scripted model (one answer), a tool that spins,
    a tool that fails, a hook that throws, one that does nothing, one that shouts results."""
    home, work = scripted_home(tmp_path)
    write_script(work, [{"text": "first"}])
    write_extension(home, "hooks", "quiet", "module.exports = { beforeRun() {} };")
    write_extension(home, "hooks", "upper", "module.exports = { afterToolExecute(ctx, call, result) { "
                                            "return { text: result.text.toUpperCase() }; } };")
    write_extension(home, "tools", "spin", 'module.exports = { description: "Spins.", parameters: { type: "object" },'
                                           ' execute(ctx) { ctx.log("spinning"); while (true) {} } };')
    write_extension(home, "tools", "fail", 'module.exports = { description: "Fails.", parameters: { type: "object" },'
                                           ' execute: () => ({ text: "no", isError: true }) };')
    write_extension(home, "hooks", "thrower", "module.exports = { afterRun() { throw new Error('boom'); } };")
    return home, work


def command(home, *args: str) -> list[str]:
    return [sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), *args]


def ran(home, work, *args: str, env: dict[str, str] | None = None, stdin: str = "") -> tuple[int, str]:
    done = subprocess.run(command(home, *args), cwd=work, env={**os.environ, **(env or {})}, input=stdin,
                          capture_output=True, text=True, timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stderr


def test_the_page_promises_these_statuses():
    assert promised() == {0, 1, 2, 130, 141, 143}


def test_0_done(dirs):
    home, work = dirs
    for args in (["run", "hi"], ["agents"], ["sessions"], ["show"], ["script"], ["pin", "last"], ["replay"],
                 ["hook", "quiet", "beforeRun"], ["compact", "last"], ["gate", "codex"]):
        assert ran(home, work, *args)[0] == 0, args
    assert ran(home, work, "chat", stdin="/exit\n")[0] == 0


def test_1_an_error_said_in_one_line(dirs):
    home, work = dirs
    assert ran(home, work, "run", "hi")[0] == 0
    for args in (["run", "--session", "last", "again"],  # the script's one answer is used: the run ends with error
                 ["run", "--agent", "nobody", "hi"], ["show", "nosuch"], ["call", "nosuch"],
                 ["run", "--workdir", "missing", "hi"], ["chat", "--resume", "nosuch"]):
        status, err = ran(home, work, *args)
        assert status == 1 and err.splitlines()[-1].startswith(("rienda: ", "session ")), (args, err)
    for args in (["call", "fail"], ["hook", "thrower", "afterRun"]):  # the tool's result, the hook's report: stdout
        assert ran(home, work, *args)[0] == 1, args
    write_agent(home, "failing", tools=["fail"], model="scripted/calls.yaml")
    write_script(work, [{"text": "", "tool_calls": [{"name": "fail", "arguments": {}}]}, {"text": "done"}], "calls.yaml")
    assert ran(home, work, "run", "--agent", "failing", "go")[0] == 0
    assert ran(home, work, "replay")[0] == 0
    status, err = ran(home, work, "replay", "--hooks", "upper")  # the result is shouted now: a difference
    assert (status, err) == (1, "")


def test_2_a_command_line_it_cannot_read_or_no_model(dirs):
    home, work = dirs
    for args in (["agnets"], ["run", "--agnet", "x", "hi"], ["pin", "last", "abc"], ["sessions", "remove", "x"]):
        status, err = ran(home, work, *args)
        assert status == 2 and err.count("\n") == 1 and err.startswith("rienda: "), (args, err)
    (home / "config.yaml").write_text("")
    nothing = {"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "", "OLLAMA_HOST": f"127.0.0.1:{free_port()}"}
    status, err = ran(home, work, "run", "hi", env=nothing)
    assert status == 2 and err.startswith("rienda: no model for the default agent"), err


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_130_and_143_a_stop(dirs, signum, status):
    home, work = dirs
    proc = subprocess.Popen(interruptible(command(home, "call", "spin")), cwd=work, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        read_until(proc, "stderr", "spinning")
        proc.send_signal(signum)
        assert proc.wait(timeout=30) == status
    finally:
        proc.kill()
        proc.communicate(timeout=30)


def test_141_standard_output_closed(dirs):
    home, work = dirs
    write_script(work, [{"text": " ".join(["word"] * 400), "chunk_delay_ms": 20}])
    line = " ".join(f"'{word}'" for word in command(home, "run", "hi"))
    done = subprocess.run(["bash", "-c", f"{line} 2>/dev/null | head -c 4 >/dev/null; echo \"${{PIPESTATUS[0]}}\""],
                          cwd=work, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["141"]
