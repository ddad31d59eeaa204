"""What ``rienda run`` (on a pipe and on a terminal) and ``rienda show`` print of what the
hooks did and of the results: the walk-through home of tests/helpers/hook_walk.py, where
every kind of hook action happens in one run."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time

import pytest

from ..helpers.cli import table_rows
from ..helpers.hook_walk import JSON_COMMAND, THROW_AT, walk_home
from ..helpers.homes import scripted_home, write_agent, write_extension, write_script

REFUSED = ['→ shell {"command": "rm -rf victim"}',
           "  ✋ hook guard refused the call: no rm -rf here",
           "✗ shell: no rm -rf here"]
REWRITTEN = ['→ shell {"command": "ls -1 nothing-here"}',
             """  ✎ hook tidy rewrote the call's arguments: command "ls" → "ls -1 nothing-here\""""]
REQUEST = "✎ hook brief rewrote the model request: system 13 → 23 characters"
ANSWER = "✎ hook brief rewrote the model's answer: text 4 → 4 characters"
RESULT_REWRITE = "  ✎ hook redact rewrote the result: text 153 → 148 characters"


@pytest.fixture
def walk(tmp_path):
    home, work = scripted_home(tmp_path)
    walk_home(home, work)
    return home, work


def rienda(home, work, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", *args], cwd=work, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "RIENDA_HOME": str(home)})


def test_run_on_a_pipe_shows_each_hook_action_where_it_happened(walk):
    home, work = walk
    done = rienda(home, work, "run", "--agent", "walk", "go")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"  # streamed as the model produced it; the line below says it was rewritten
    lines = done.stderr.splitlines()
    assert lines[0] == REQUEST and lines[1:4] == REFUSED
    start = lines.index(REWRITTEN[0])
    assert lines[start + 1] == REWRITTEN[1]
    thrown = [line for line in lines if "hook thrower threw" in line]
    assert len(thrown) == 2  # once under each call that ran
    assert thrown[0].startswith("diagnostic: hook thrower threw in afterToolExecute and was skipped: TypeError: "
                                "Cannot read properties of null (reading 'boom') (at ")
    assert THROW_AT in thrown[0]
    result = lines.index("← shell:")
    assert lines[result + 1:result + 4] == ["    {", '      "items": [', "        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, "
                                            "12, 13, 14, 15, 16, 17, 18, 19, 20,"]
    assert lines[result + 6:result + 9] == ["      ],", '      "***": "x"', "    }"]  # as the model read it
    assert lines[result + 9:result + 11] == ["    … 2 more lines (-v shows all of it)", RESULT_REWRITE]
    assert lines[-3:-1] == [REQUEST, ANSWER]
    assert lines.count(REQUEST) == 4  # before each model request
    assert (work / "victim").is_dir()


def test_run_verbose_shows_every_result_whole(walk):
    home, work = walk
    done = rienda(home, work, "run", "-v", "--agent", "walk", "go")
    lines = done.stderr.splitlines()
    result = lines.index("← shell:")
    assert lines[result + 9:result + 12] == ["", "    exit code 0", RESULT_REWRITE]
    assert not any("more line" in line for line in lines)


def test_run_on_a_terminal_shows_the_same_lines(walk):
    """stdout and stderr on a pty, as a person runs it (the model's text and the activity
    interleave, so each expected line is looked for on its own)."""
    home, work = walk
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "rienda_kernel.cli", "run", "--agent", "walk", "go"], cwd=work,
                            stdin=slave, stdout=slave, stderr=slave, env={**os.environ, "RIENDA_HOME": str(home)})
    os.close(slave)
    shown = _read_all(master, proc)
    lines = [line.replace("\x1b[2m", "").replace("\x1b[0m", "") for line in shown.replace("\r\n", "\n").splitlines()]
    assert proc.returncode == 0, shown
    for expected in [*REFUSED, *REWRITTEN, REQUEST, ANSWER, RESULT_REWRITE, "    … 2 more lines (-v shows all of it)"]:
        assert expected in lines, (expected, shown)


def _read_all(master: int, proc: subprocess.Popen, within: float = 60.0) -> str:
    """Everything the child writes on the pty until it exits (bounded; the child is killed
    when it overstays)."""
    chunks, deadline = [], time.monotonic() + within
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


def test_show_puts_each_hook_action_under_its_call_and_indents_results(walk):
    home, work = walk
    assert rienda(home, work, "run", "--agent", "walk", "go").returncode == 0
    lines = rienda(home, work, "show", "last").stdout.splitlines()
    refused = lines.index('  → shell [call_1_1] {"command": "rm -rf victim"}')
    assert lines[refused + 1:refused + 3] == ["    ✋ hook guard refused the call: no rm -rf here",
                                              "  ✗ shell [call_1_1]: no rm -rf here"]
    rewritten = lines.index('  → shell [call_2_1] {"command": "ls -1 nothing-here"}')  # what ran, as rienda run shows
    assert lines[rewritten + 1] == """    ✎ hook tidy rewrote the call's arguments: command "ls" → "ls -1 nothing-here\""""
    assert lines[rewritten + 2].startswith("    ⚠ hook thrower threw in afterToolExecute and was skipped: TypeError")
    assert THROW_AT in lines[rewritten + 2]
    assert lines[rewritten + 3:rewritten + 5] == ["  ✗ shell [call_2_1]:",
                                                  "      ls: cannot access 'nothing-here': No such file or directory"]
    result = lines.index("  ← shell [call_3_1]:")
    assert lines[result - 2] == "    ✎ hook redact rewrote the result: text 153 → 148 characters"
    assert lines[result + 1:result + 3] == ["      {", '        "items": [']
    assert lines[result + 9] == "      … 2 more lines (--full shows all of it)"
    assert f"    {REQUEST}" in lines and f"    {ANSWER}" in lines and "assistant: DONE" in lines
    full = rienda(home, work, "show", "last", "--full").stdout.splitlines()
    assert full[full.index("  ← shell [call_3_1]:") + 10] == "      exit code 0"
    assert not any("more line" in line for line in full)


def test_show_puts_each_line_under_its_own_call_when_one_answer_makes_three(walk):
    """Three calls in one answer (a result redacted, a call refused, a call's arguments
    rewritten): each hook line sits under its own call, and each call line shows what ran
    (issue 40: they were listed first, each hook line under another call)."""
    home, work = walk
    write_script(work, [{"text": "All three.", "tool_calls": [
        {"name": "shell", "arguments": {"command": JSON_COMMAND}},
        {"name": "shell", "arguments": {"command": "rm -rf victim"}},
        {"name": "shell", "arguments": {"command": "ls"}}]}, {"text": "done"}])
    assert rienda(home, work, "run", "--agent", "walk", "go").returncode == 0
    lines = rienda(home, work, "show", "last").stdout.splitlines()
    first = lines.index(f"  → shell [call_1_1] {json.dumps({'command': JSON_COMMAND})}")
    second = lines.index('  → shell [call_1_2] {"command": "rm -rf victim"}')
    third = lines.index('  → shell [call_1_3] {"command": "ls -1 nothing-here"}')
    assert lines.index("assistant: ALL THREE.") < first < second < third
    under_first = lines[first:second]
    assert "  " + RESULT_REWRITE in under_first and "  ← shell [call_1_1]:" in under_first
    assert lines[second + 1:second + 3] == ["    ✋ hook guard refused the call: no rm -rf here",
                                            "  ✗ shell [call_1_2]: no rm -rf here"]
    assert lines[third + 1] == "    " + REWRITTEN[1].strip()
    assert "  ✗ shell [call_1_3]:" in lines[third:]
    assert not any("✋" in line or "tidy" in line for line in under_first)


def test_json_events_carry_every_decision_for_readers_of_json(walk):
    home, work = walk
    done = rienda(home, work, "run", "--json", "--agent", "walk", "go")
    decisions = [event for event in map(json.loads, done.stdout.splitlines()) if event["type"] == "hook_decision"
                 and event["effect"] != "none"]
    assert {(d["hook"], d["effect"]) for d in decisions} == {
        ("guard", "refused"), ("tidy", "rewrote"), ("redact", "rewrote"), ("thrower", "threw"), ("brief", "rewrote")}
    assert "✎" not in done.stdout and "→ shell" not in done.stderr  # --json prints events, not lines


def test_show_has_each_confirms_answer_under_its_call(tmp_path):
    home, work = scripted_home(tmp_path)
    write_extension(home, "tools", "publish", """module.exports = { description: "Asks first.",
      parameters: { type: "object" }, execute(ctx) { return ctx.confirm({ title: "Publish", body: "Push?" })
        ? "pushed" : { text: "cancelled", isError: true }; } };""")
    write_agent(home, "pub", tools=["publish"])
    write_script(work, [{"text": "", "tool_calls": [{"name": "publish", "arguments": {}}]}, {"text": "ok"},
                        {"text": "", "tool_calls": [{"name": "publish", "arguments": {}}]}, {"text": "ok"}])
    assert rienda(home, work, "run", "--agent", "pub", "--yes", "go").returncode == 0
    [session] = [row["id"] for row in table_rows(rienda(home, work, "sessions").stdout)]
    assert rienda(home, work, "run", "--session", session, "--confirm", "deny", "again").returncode == 0
    lines = rienda(home, work, "show", session).stdout.splitlines()
    assert [line for line in lines if "confirm" in line] == ["    ✓ confirm 'Publish': allowed (auto-approve)",
                                                             "    ✗ confirm 'Publish': denied (auto-deny)"]
    assert lines[lines.index("    ✓ confirm 'Publish': allowed (auto-approve)") + 1] == "  ← publish [call_1_1]: pushed"
