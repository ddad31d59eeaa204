"""Sub-agents through the ``rienda`` command, as real processes: ``rienda run`` indents a
child's run under its call and asks its confirms at the terminal, ``--json`` events carry
the depth and the child's session, ``rienda show`` links parent and child both ways,
``rienda replay --run-tools`` replays the child, SIGTERM stops the whole tree."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys

import pytest

from ..helpers.cli import table_rows
from ..helpers.pipes import read_until
from ..helpers.trees import (
    delegate,
    lead_and_cleaner,
    lead_to_asker,
    session_lines,
    shell,
    tracer,
    write_agent,
    write_hook,
    write_script,
)


@pytest.fixture
def dirs(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    return home, work


def rienda(home, work, *args):
    env = {**os.environ, "RIENDA_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", *args], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)


def sessions(home):
    """(top-level id, child id) of the one delegation made."""
    headers = [json.loads(p.read_text().splitlines()[0]) for p in (home / "sessions").glob("*.jsonl")]
    top = next(h["id"] for h in headers if "parent_session_id" not in h)
    child = next(h["id"] for h in headers if h.get("parent_session_id") == top)
    return top, child


def test_run_indents_the_childs_run_under_its_call_and_the_guard_keeps_the_files(dirs):
    home, work = dirs
    victim = lead_and_cleaner(home, work)
    done = rienda(home, work, "run", "--agent", "lead", "Clean up.")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The cleaner is done.\n"  # only the lead's answer on stdout
    top, child = sessions(home)
    lines = done.stderr.splitlines()
    start = lines.index(f"  ┌ sub-agent cleaner (session {child})")
    assert lines[start - 1] == '→ agent {"agent": "cleaner", "prompt": "Clean the workspace."}'
    assert lines[start + 1:start + 6] == [
        '  → shell {"command": "rm -rf victim"}',
        "    ✋ hook guard refused the call: rm -rf refused by the lead's guard",
        "  ✗ shell: rm -rf refused by the lead's guard",
        "  I could not delete victim.",
        "  └ sub-agent ended: end_turn"]
    assert lines[start + 6] == "← agent: I could not delete victim."
    assert (victim / "keep.txt").exists()


def test_run_json_events_carry_the_depth_and_the_childs_session(dirs):
    home, work = dirs
    lead_and_cleaner(home, work)
    done = rienda(home, work, "run", "--agent", "lead", "--json", "Clean up.")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    top, child = sessions(home)
    assert all(isinstance(e["depth"], int) for e in events)
    starts = [e for e in events if e["type"] == "run_start"]
    assert [(e["depth"], e["session_id"], e["parent_session_id"]) for e in starts] == [(0, top, None), (1, child, top)]
    call = next(e for e in events if e["type"] == "tool_call" and e["name"] == "agent")
    assert starts[1]["parent_call_id"] == call["id"]
    refused = next(e for e in events if e["type"] == "tool_call" and e["name"] == "shell")
    assert (refused["depth"], refused["refused_by"]) == (1, "guard")
    decision = next(e for e in events if e["type"] == "hook_decision" and e["effect"] == "refused")
    assert decision["depth"] == 1
    result = next(e for e in events if e["type"] == "tool_result" and e["name"] == "agent")
    assert (result["depth"], result["subagent_session_id"], result["isError"]) == (0, child, False)
    # only additions: every field the events had before is still there
    assert set(events[0]) >= {"type", "session_id", "agent", "model"}
    assert set(result) >= {"type", "id", "name", "text", "isError"}
    assert [e["type"] for e in events if e["depth"] == 0][-1] == "run_end"


def test_a_childs_confirm_is_asked_at_the_terminal_titled_with_the_sub_agent(dirs):
    home, work = dirs
    write_hook(home, "guard", """module.exports = { beforeToolExecute(ctx, call) {
      if (call.name === "shell" && !ctx.confirm({ title: "Run a command", body: call.arguments.command })) {
        return { allow: false, reason: "refused by the user" };
      } } };""")
    write_agent(home, "lead", tools=("agent",), hooks=("guard",))
    write_agent(home, "worker", tools=("shell",))
    write_script(work, "lead", [delegate("worker", "w"), {"text": "lead done"}])
    write_script(work, "worker", [shell("echo asked > asked.txt"), {"text": "worker done"}])
    proc, asked, out, rest = lead_answered_yes_on_a_terminal(home, work)
    assert "? Run a command (sub-agent worker)\n  echo asked > asked.txt" in asked
    assert proc.returncode == 0 and out == "lead done\n"
    assert "  [hook:guard.beforeToolExecute] confirm 'Run a command': allowed (user)" in rest
    assert (work / "asked.txt").read_text() == "asked\n"


def test_what_a_grandchild_did_is_on_the_terminal_indented_before_its_prompt(dirs):
    home, work = dirs
    lead_to_asker(home, work, 2)
    proc, asked, out, _ = lead_answered_yes_on_a_terminal(home, work)
    before = asked.split("? Go on (sub-agent level1 › asker)")[0].rstrip("\n").splitlines()
    assert before[-5:] == ['    → prepare {}', "    exec-before-asking", "    [tool:prepare] notice: heads up: notice-before-asking",
                           "    [tool:prepare] log-before-asking 1", "    [tool:prepare] log-before-asking 2"]
    assert proc.returncode == 0 and out == "lead done\n"


def lead_answered_yes_on_a_terminal(home, work):
    """``rienda run --agent lead go`` with a terminal on stdin, answering y at the first
    confirm: (the process, stderr up to the question, stdout, the rest of stderr)."""
    master, slave = pty.openpty()
    env = {**os.environ, "RIENDA_HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-m", "rienda_kernel.cli", "run", "--agent", "lead", "go"], cwd=work,
                            env=env, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.close(slave)
    try:
        asked = read_until(proc, "stderr", "Allow? [y = once, s = for this session, N = no]")
        os.write(master, b"y\n")
        out, rest = proc.communicate(timeout=60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc, asked, out, rest


def test_show_links_the_parent_and_the_child_both_ways(dirs):
    home, work = dirs
    lead_and_cleaner(home, work)
    assert rienda(home, work, "run", "--agent", "lead", "Clean up.").returncode == 0
    top, child = sessions(home)
    parent_view = rienda(home, work, "show", top).stdout.splitlines()
    assert f"  ← agent [call_1_1]: I could not delete victim.  (sub-agent cleaner, session {child})" in parent_view
    child_view = rienda(home, work, "show", child).stdout.splitlines()
    assert child_view[1] == f"sub-agent of session {top} (call call_1_1, depth 1); rienda show {top} shows its lead"
    assert "    ✋ hook guard refused the call: rm -rf refused by the lead's guard [depth 1]" in child_view
    listed = table_rows(rienda(home, work, "sessions").stdout)
    assert [row["sub-agent of"] for row in listed] == ["", top]
    resumed = rienda(home, work, "run", "--session", child, "again")
    assert resumed.returncode == 1
    assert f"session {child} is a sub-agent's run, started by session {top}: resume that session instead" in (
        resumed.stderr)


def test_replay_run_tools_json_reports_the_childs_session(dirs):
    home, work = dirs
    lead_and_cleaner(home, work)
    assert rienda(home, work, "run", "--agent", "lead", "Clean up.").returncode == 0
    top, child = sessions(home)
    done = rienda(home, work, "replay", top, "--run-tools", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["changed"] is False and [c["name"] for c in report["calls"]] == ["agent"]
    [nested] = report["children"]
    assert (nested["session_id"], nested["hooks"], nested["children"]) == (child, ["guard"], [])


def test_sigterm_during_a_grandchilds_command_stops_the_tree_after_run_innermost_first(dirs):
    home, work = dirs
    for name in ("top", "mid", "low"):
        write_hook(home, name, tracer(name).replace('ctx.log("', 'ctx.log("trace '))
    write_agent(home, "lead", tools=("agent",), hooks=("top",))
    write_agent(home, "middle", tools=("agent",), hooks=("mid",))
    write_agent(home, "bottom", tools=("shell",), hooks=("low",))
    write_script(work, "lead", [delegate("middle", "m"), {"text": "never"}])
    write_script(work, "middle", [delegate("bottom", "b"), {"text": "never"}])
    write_script(work, "bottom", [shell("echo sleeping; exec sleep 60"), {"text": "never"}])
    env = {**os.environ, "RIENDA_HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-m", "rienda_kernel.cli", "run", "--agent", "lead", "go"], cwd=work,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        read_until(proc, "stderr", "sleeping")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 143
    after_runs = [line.strip().split("] ", 1)[1] for line in err.splitlines() if "afterRun" in line]
    assert after_runs == ["trace top afterRun 2", "trace mid afterRun 2", "trace low afterRun 2",
                          "trace top afterRun 1", "trace mid afterRun 1", "trace top afterRun 0"]
    for path in (home / "sessions").glob("*.jsonl"):
        assert session_lines(home, path.stem)[-1] == {"type": "run_end", "reason": "interrupted", "error": None}
    assert len(list((home / "sessions").glob("*.jsonl"))) == 3


def test_a_secret_in_a_childs_output_reaches_no_terminal_line_json_event_or_session(dirs):
    home, work = dirs
    secret = "sk-live-0123456789abcdef"
    write_agent(home, "lead", tools=("agent",))
    write_agent(home, "leaker", tools=("shell",))
    write_script(work, "lead", [delegate("leaker", "Find the key."), {"text": "ok"}])
    write_script(work, "leaker", [shell("echo key=$OPENAI_API_KEY"), {"text": f"The key is {secret}."}])
    env = {**os.environ, "RIENDA_HOME": str(home), "OPENAI_API_KEY": secret}
    for json_flag in (["--json"], []):
        done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "run", "--agent", "lead", *json_flag, "go"],
                              cwd=work, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert secret not in done.stdout + done.stderr
        assert "[redacted]" in done.stdout + done.stderr
    assert all(secret not in path.read_text() for path in (home / "sessions").glob("*.jsonl"))


def test_every_json_event_of_a_child_or_grandchild_names_its_own_session(dirs):
    """Each event of depth > 0 names the session its run is saved in (a grandchild's its
    own); what a child reports while it is set up (config.yaml's diagnostic) comes before
    its run_start, with the id; a child whose setup fails names no session (none exists)."""
    home, work = dirs
    (home / "config.yaml").write_text("colour: blue\n", encoding="utf-8")  # a diagnostic in every run's setup
    for name in ("top", "mid", "low"):
        write_hook(home, name, tracer(name))
    write_agent(home, "lead", tools=("agent",), hooks=("top",))
    write_agent(home, "middle", tools=("agent",), hooks=("mid",))
    write_agent(home, "bottom", tools=("shell",), hooks=("low",))
    write_agent(home, "broken", body="x").write_text(
        "---\nmodel: scripted/broken.yaml\noptions: {no_such_option: 1}\n---\nx\n", encoding="utf-8")
    write_script(work, "lead", [delegate("middle", "m"), delegate("broken", "b"), {"text": "lead done"}])
    write_script(work, "middle", [delegate("bottom", "b"), {"text": "middle done"}])
    write_script(work, "bottom", [shell("echo bottom-output"), {"text": "bottom done"}])
    done = rienda(home, work, "run", "--agent", "lead", "--json", "go")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    headers = {p.stem: json.loads(p.read_text().splitlines()[0]) for p in (home / "sessions").glob("*.jsonl")}
    saved = {(h["agent"], h.get("depth", 0)): sid for sid, h in headers.items()}
    assert set(saved) == {("lead", 0), ("middle", 1), ("bottom", 2)}  # the broken child saved nothing
    # the run open at each depth, from the run_starts: every child event names its session
    open_at, kinds = {}, set()
    for event in events:
        if event["type"] == "run_start":
            open_at[event["depth"]] = event["session_id"]
            assert event["session_id"] == saved[(event["agent"], event["depth"])]
        if event["depth"] == 0:
            assert event["session_id"] == (open_at[0] if event["type"] == "run_start" else None)
            continue
        if event.get("session_id") is None:  # the broken child: no run_start, no session
            continue
        kinds.add(event["type"])
        assert event["session_id"] == open_at.get(event["depth"], event["session_id"]), event
        assert headers[event["session_id"]]["depth"] == event["depth"], event
    assert {"run_start", "log", "output", "tool_call", "tool_result", "message", "run_end", "diagnostic"} <= kinds
    # the child's setup diagnostic: held until its run_start, then first, with its session
    middle = saved[("middle", 1)]
    first = next(i for i, e in enumerate(events) if e["depth"] == 1)
    assert events[first]["type"] == "diagnostic" and events[first]["session_id"] == middle
    assert events[first + 1]["type"] == "run_start" and events[first + 1]["session_id"] == middle
    grandchild = [e for e in events if e["depth"] == 2]
    assert grandchild and {e["session_id"] for e in grandchild} == {saved[("bottom", 2)]}
    assert any(e["type"] == "output" and "bottom-output" in e["text"] for e in grandchild)
    # the broken child: its setup's events and its run_end, no session named
    broken = events[next(i for i, e in enumerate(events) if e["type"] == "tool_call"
                         and e.get("arguments", {}).get("agent") == "broken") + 1:]
    broken = broken[:next(i for i, e in enumerate(broken) if e["depth"] == 0)]
    assert broken[-1]["type"] == "run_end" and broken[-1]["reason"] == "error"
    assert all(e["depth"] == 1 and e["session_id"] is None for e in broken)
    assert sum(1 for e in events if e["depth"] and e["session_id"] is None) == len(broken)
