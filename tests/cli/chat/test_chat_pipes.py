"""``rienda chat`` with lines on a pipe (no terminal): each line a turn or a command, no
prompt, confirms that nobody can answer; and every way it can fail is one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from ...helpers.cli import popen_rienda, rienda
from ...helpers.hook_walk import walk_home
from ...helpers.homes import scripted_home, write_agent, write_script
from ...helpers.pipes import read_until
from ...helpers.trees import shell

CLOSED = 128 + signal.SIGPIPE


def test_lines_on_a_pipe_are_turns_and_commands(setup):
    home, work = setup
    write_script(work, [{"text": "First answer."}, {"text": "Second answer."}])
    done = rienda(home, work, "chat", input="one\n\n/show\ntwo\n/exit\nnever read\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("First answer.\nsession ")  # /show: the session as rienda show prints it
    assert "user: one\nassistant: First answer.\n-- run ended: end_turn" in done.stdout
    assert done.stdout.endswith("Second answer.\n")
    assert "> " not in done.stdout + done.stderr  # no prompt on a pipe
    [bye] = [line for line in done.stderr.splitlines() if line.startswith("bye")]
    session_id = bye.split()[2]
    assert done.stderr.count(f"session {session_id} · usage") == 2


def test_a_turn_shows_what_the_hooks_did_as_rienda_run_does(tmp_path):
    home, work = scripted_home(tmp_path)
    walk_home(home, work)
    done = rienda(home, work, "chat", "--agent", "walk", input="go\n")
    assert done.returncode == 0, done.stderr
    session_id = done.stderr.split("bye: session ")[1].split()[0]
    lines = done.stderr.splitlines()
    for expected in ["  ✋ hook guard refused the call: no rm -rf here",
                     """  ✎ hook tidy rewrote the call's arguments: command "ls" → "ls -1 nothing-here\"""",
                     "  ✎ hook redact rewrote the result: text 153 → 148 characters",
                     "✎ hook brief rewrote the model's answer: text 4 → 4 characters",
                     f"    … 2 more lines (all of it: rienda show {session_id} --full)"]:
        assert expected in lines, (expected, done.stderr)


def test_a_confirm_on_a_pipe_is_denied_saying_how_to_allow_it(setup):
    home, work = setup
    write_script(work, [{"text": "", "tool_calls": [{"name": "publish", "arguments": {}}]}, {"text": "Not done."}])
    done = rienda(home, work, "chat", "--agent", "pub", input="publish\ny\n")
    assert "confirm 'Publish': denied (default-deny); to allow it: /confirm allow, or rienda chat --yes\n" in done.stderr
    assert "unknown command" not in done.stderr and done.returncode == 0  # "y" was a turn, not an answer
    assert done.stdout.count("Not done.") == 1


def test_a_failing_model_is_one_line_and_the_chat_goes_on(setup):
    home, work = setup
    write_script(work, [{"error": "the server fell over"}])
    done = rienda(home, work, "chat", input="one\n/agents\n")
    assert done.returncode == 0
    assert "Traceback" not in done.stderr
    assert "the server fell over" in done.stderr
    assert "agents in" in done.stdout  # the next line still ran


def test_every_mistake_at_the_start_is_one_line_and_exit_1(setup):
    home, work = setup
    for args, says in ((["--agent", "nope"], "rienda: no agent 'nope'"),
                       (["--model", "nope/x"], "rienda: model 'nope/x': no provider named 'nope'"),
                       (["--resume", "nosuch"], "rienda: no session 'nosuch'")):
        done = rienda(home, work, "chat", *args, input="hi\n")
        assert (done.returncode, done.stdout) == (1, ""), args
        assert done.stderr.startswith(says) and done.stderr.count("\n") == 1, done.stderr


def test_a_closed_stdin_is_one_line(setup):
    home, work = setup
    launch = "import os, sys; os.close(0); os.execvp(sys.argv[1], sys.argv[1:])"
    env = {**os.environ, "RIENDA_HOME": str(home)}
    done = subprocess.run([sys.executable, "-c", launch, sys.executable, "-m", "rienda_kernel.cli", "chat"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == ("rienda: rienda chat reads standard input, which is closed: run it at a terminal, "
                           "or pipe lines to it\n")


def test_sigterm_stops_the_turn_and_leaves_naming_the_session(tmp_path):
    home, work = scripted_home(tmp_path)
    write_agent(home, "sleeper", tools=["shell"])
    write_script(work, [shell("sleep 30", "Sleeping.")])
    proc = popen_rienda(home, work, "chat", "--agent", "sleeper", "--yes", stdin=subprocess.PIPE)
    try:
        proc.stdin.write("sleep\n")
        proc.stdin.flush()
        read_until(proc, "stderr", "→ shell")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM
    assert "interrupted; the session kept what was produced" in err
    assert err.splitlines()[-1].startswith("bye: session ")


def test_a_closed_stdout_stops_the_chat(setup):
    home, work = setup
    write_script(work, [{"text": "First answer."}, {"text": "Second answer."}])
    read, write = os.pipe()
    os.close(read)
    env = {**os.environ, "RIENDA_HOME": str(home)}
    try:
        done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "chat"], cwd=work, env=env, stdout=write,
                              stderr=subprocess.PIPE, input="one\ntwo\n", text=True, timeout=60)
    finally:
        os.close(write)
    assert done.returncode == CLOSED
    assert "Traceback" not in done.stderr
    assert "rienda: standard output was closed, so the chat stopped" in done.stderr
    assert done.stderr.count("· usage") == 1  # the second line never ran


def test_the_help_names_chat_and_its_options(setup):
    home, work = setup
    listed = rienda(home, work, "--help").stdout
    assert "chat       talk with an agent turn after turn, in one session" in listed
    own = rienda(home, work, "chat", "--help").stdout
    for option in ("--agent AGENT | --resume ID", "--model MODEL", "--confirm {ask,allow,deny} | --yes",
                   "/COMMAND is a %rienda command", "Ctrl-C stops a turn, Ctrl-D leaves"):
        assert option in " ".join(own.split()), option
