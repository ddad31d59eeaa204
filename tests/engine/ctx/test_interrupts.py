"""A tool blocked in a system call still ends at an interrupt: every built-in and every host
call behind ``ctx`` (issue 25: the built-in ``read`` on a named pipe nobody writes hung
``rienda run``; two Ctrl-C's did not end it).

Each case is a real ``rienda run`` process blocked on a real thing (a FIFO, a file another
process holds a lease on, a connection nobody accepts, a command whose output a process
outside its group holds), sent a real SIGINT once it shows the call started. Every wait on
it is bounded; the run must end with 130 and save the call's result.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from ...helpers.pipes import read_until
from ...helpers.processes import alive, wait_for_file

CTX_READ = """module.exports = { description: "Reads with ctx.file.read.", parameters: { type: "object" },
  execute(ctx, a) { return ctx.file.read(a.path); } };"""
CTX_FETCH = """module.exports = { description: "Fetches.", parameters: { type: "object" },
  execute(ctx, a) { return ctx.http.fetch(a.url).body; } };"""
CTX_EXEC = """module.exports = { description: "Runs.", parameters: { type: "object" },
  execute(ctx, a) { return ctx.system.exec(a.command).stdout; } };"""


@pytest.fixture
def home(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    for name, source in (("ctx-read", CTX_READ), ("ctx-fetch", CTX_FETCH), ("ctx-exec", CTX_EXEC)):
        (home / "tools" / name).mkdir(parents=True)
        (home / "tools" / name / "index.js").write_text(source)
    (home / "agents").mkdir()
    (home / "agents" / "a.md").write_text(textwrap.dedent("""\
        ---
        model: scripted/script.yaml
        tools: [read, write, http, shell, ctx-read, ctx-fetch, ctx-exec]
        ---
        Hi.
        """))
    work.mkdir()
    return home, work


def interrupted_run(home, work, tool: str, arguments: dict, ready=None) -> tuple[str, list]:
    """`rienda run` calling ``tool``, sent SIGINT once the call is under way (and ``ready()``
    has returned): its stderr and the saved messages."""
    (work / "script.yaml").write_text(yaml.safe_dump([
        {"tool_calls": [{"id": "call_blocked", "name": tool, "arguments": arguments}]}, {"text": "never"}]))
    env = {**os.environ, "RIENDA_HOME": str(home)}
    run = subprocess.Popen([sys.executable, "-m", "rienda_kernel.cli", "run", "--agent", "a", "--yes", "go"],
                           cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = read_until(run, "stderr", f"→ {tool} ")
        if ready is not None:
            ready()
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=30)  # bounded: before the fix it never ended
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate(timeout=30)
    assert run.returncode == 130, seen + err
    (session,) = (home / "sessions").glob("*.jsonl")
    lines = [json.loads(line) for line in session.read_text().splitlines()]
    return seen + err, [line for line in lines if line["type"] == "message"]


def assert_interrupted(messages) -> None:
    result = messages[-1]
    assert (result["role"], result["tool_call_id"], result["isError"]) == ("tool", "call_blocked", True)
    assert result["text"] == "interrupted before the tool finished"


@pytest.mark.parametrize("tool", ["read", "ctx-read"])
def test_reading_a_fifo_nobody_writes_ends_at_ctrl_c(home, tool):
    home_dir, work = home
    os.mkfifo(work / "pipe")
    _, messages = interrupted_run(home_dir, work, tool, {"path": "pipe"})
    assert_interrupted(messages)


def test_reading_a_file_another_process_holds_a_lease_on_ends_at_ctrl_c(home, tmp_path):
    """A write lease makes every open for reading wait until its holder lets go (the kernel
    breaks it after /proc/sys/fs/lease-break-time seconds): a lock the reader cannot see."""
    home_dir, work = home
    break_time = Path("/proc/sys/fs/lease-break-time")
    if not break_time.exists() or int(break_time.read_text()) < 30:
        pytest.skip("needs leases that wait at least 30 s (/proc/sys/fs/lease-break-time)")
    (work / "leased.txt").write_text("held")
    ready = tmp_path / "lease-held"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""\
        import fcntl, os, signal, time
        signal.signal(signal.SIGIO, signal.SIG_IGN)  # told to let go: it does not
        fd = os.open({str(work / "leased.txt")!r}, os.O_RDWR)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
        open({str(ready)!r}, "w").write("held\\n")
        time.sleep(600)
        """)])
    try:
        wait_for_file(ready)
        _, messages = interrupted_run(home_dir, work, "read", {"path": "leased.txt"})
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert_interrupted(messages)
    assert fcntl.F_WRLCK is not None


def test_a_fetch_stuck_connecting_ends_at_ctrl_c(home):
    """A listener that never accepts, its backlog full: the next connection waits for an
    answer to its SYN that never comes."""
    home_dir, work = home
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    try:
        for _ in range(4):
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
            fillers.append(filler)
        _, messages = interrupted_run(home_dir, work, "ctx-fetch", {"url": f"http://127.0.0.1:{port}/"})
    finally:
        for closing in (*fillers, listener):
            closing.close()
    assert_interrupted(messages)


@pytest.mark.parametrize("tool", ["shell", "ctx-exec"])
def test_a_command_whose_output_a_process_outside_its_group_holds_ends_at_ctrl_c(home, tool):
    """The shell's group is killed, but a process that left it (setsid) and ignores SIGTERM
    keeps the output pipe open: it is not waited for."""
    home_dir, work = home
    marker = work / "escaped.pid"
    command = f"setsid sh -c 'trap \"\" TERM; echo $$ > {marker}; exec sleep 600'; sleep 600"
    try:
        _, messages = interrupted_run(home_dir, work, tool, {"command": command}, ready=lambda: wait_for_file(marker))
    finally:
        if marker.exists() and marker.read_text().strip():
            escaped = int(marker.read_text())
            if alive(escaped):
                os.kill(escaped, signal.SIGKILL)
    assert_interrupted(messages)
