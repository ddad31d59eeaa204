"""``rienda run`` and the session commands, as real processes with the scripted model."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys

import pytest

from ..helpers.cli import rienda, table_rows
from ..helpers.homes import only_session_lines, write_script
from ..helpers.pipes import read_until
from ..helpers.processes import alive, wait_for_file
from ..helpers.signals import interruptible

PUBLISH_SCRIPT = [{"text": "Publishing.", "tool_calls": [{"name": "publish", "arguments": {}}]}, {"text": "Done."}]


def test_run_streams_text_to_stdout_and_exits_0(setup):
    home, work = setup
    write_script(work, PUBLISH_SCRIPT)
    done = rienda(home, work, "run", "--agent", "pub", "publish it")
    assert done.returncode == 0
    assert done.stdout == "Publishing.\nDone.\n"
    assert "→ publish {}" in done.stderr and "✗ publish: cancelled" in done.stderr
    assert "[hook:audit.afterRun] afterRun end_turn" in done.stderr


def test_run_json_prints_one_event_per_line(setup):
    home, work = setup
    write_script(work, PUBLISH_SCRIPT)
    done = rienda(home, work, "run", "--agent", "pub", "--json", "--yes", "publish it")
    events = [json.loads(line) for line in done.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "run_start" and types[-1] == "run_end"
    assert {"text", "message", "tool_call", "tool_result", "confirm", "log", "hook_decision"} <= set(types)
    start = events[0]
    assert start["agent"] == "pub" and start["model"] == "scripted/script.yaml" and start["session_id"]
    call = next(e for e in events if e["type"] == "tool_call")
    assert (call["name"], call["arguments"]) == ("publish", {})
    result = next(e for e in events if e["type"] == "tool_result")
    assert (result["id"], result["name"], result["text"], result["isError"]) == (call["id"], "publish", "pushed", False)
    confirm = next(e for e in events if e["type"] == "confirm")
    assert (confirm["title"], confirm["body"], confirm["answer"]) == ("Publish", "Push?", True)
    assert events[-1]["reason"] == "end_turn"


def test_confirm_follows_the_configuration_when_not_given_yes(setup):
    home, work = setup
    write_script(work, PUBLISH_SCRIPT)
    (home / "config.yaml").write_text("auto_approve: true\n")
    done = rienda(home, work, "run", "--agent", "pub", "publish it")
    assert "confirm 'Publish': allowed (auto-approve)" in done.stderr


def answer_on_a_terminal(home, work, answer: bytes) -> tuple[int, str]:
    """Run the pub agent with a terminal on stdin; type ``answer`` at the first confirm.
    Returns the exit code and what stderr printed after the prompt."""
    master, slave = pty.openpty()
    env = {**os.environ, "RIENDA_HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-m", "rienda_kernel.cli", "run", "--agent", "pub", "go"], cwd=work,
                            env=env, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.close(slave)
    read_until(proc, "stderr", "Allow? [y = once, s = for this session, N = no]")
    os.write(master, answer)
    _, rest = proc.communicate(timeout=30)
    os.close(master)
    return proc.returncode, rest


def test_a_terminal_on_stdin_is_asked_y_n(setup):
    home, work = setup
    write_script(work, PUBLISH_SCRIPT)
    code, rest = answer_on_a_terminal(home, work, b"y\n")
    assert code == 0
    assert "confirm 'Publish': allowed (user)" in rest


def test_the_prompt_can_come_from_standard_input(setup):
    home, work = setup
    write_script(work, [{"text": "hello"}])
    done = rienda(home, work, "run", input="from stdin\n")
    assert (done.returncode, done.stdout) == (0, "hello\n")


def test_error_exits_1_with_the_reason(setup):
    home, work = setup
    write_script(work, [])
    done = rienda(home, work, "run", "--agent", "pub", "hi")
    assert done.returncode == 1
    assert "is exhausted" in done.stderr and "afterRun error" in done.stderr


def test_a_malformed_config_is_a_clear_error(setup):
    home, work = setup
    (home / "config.yaml").write_text("auto_approve: [\n")
    done = rienda(home, work, "run", "hi")
    assert done.returncode == 1
    assert f"rienda: {home / 'config.yaml'}:" in done.stderr and "malformed YAML" in done.stderr


def test_ctrl_c_mid_run_exits_130_and_after_run_sees_interrupted(setup):
    home, work = setup
    write_script(work, [{"text": " ".join(["word"] * 500), "chunk_delay_ms": 20}])
    env = {**os.environ, "RIENDA_HOME": str(home)}
    proc = subprocess.Popen(interruptible([sys.executable, "-m", "rienda_kernel.cli", "run", "--agent", "pub", "talk"]),
                            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert read_until(proc, "stdout", "word ") == "word "
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "afterRun interrupted" in err


def test_sessions_show_and_resume(setup):
    home, work = setup
    write_script(work, [{"text": "first"}, {"text": "second"}])
    rienda(home, work, "run", "hello there")
    [listed] = table_rows(rienda(home, work, "sessions").stdout)
    session_id = listed["id"]
    assert listed == {"id": session_id, "agent": "default", "model": "scripted/script.yaml", "messages": "2",
                      "title": "hello there"}
    resumed = rienda(home, work, "run", "--session", session_id, "again")
    assert resumed.stdout == "second\n"
    shown = rienda(home, work, "show", session_id).stdout
    assert "user: hello there\nassistant: first" in shown and "user: again\nassistant: second" in shown
    assert shown.count("-- run ended: end_turn") == 2


def test_agents_lists_the_builtin_default_and_files(setup):
    home, work = setup
    (home / "agents" / "broken.md").write_text("no front matter\n")
    done = rienda(home, work, "agents")
    assert [row["id"] for row in table_rows(done.stdout)] == ["default", "pub"]
    assert "broken.md" in done.stderr


def test_s_at_the_prompt_allows_the_same_request_for_the_rest_of_the_session(setup):
    home, work = setup
    write_script(work, [{"text": "", "tool_calls": [{"name": "publish", "arguments": {}}] * 2}, {"text": "Done."}])
    code, rest = answer_on_a_terminal(home, work, b"s\n")
    assert code == 0
    assert "confirm 'Publish': allowed (allowed for this session)" in rest
    assert "confirm 'Publish': allowed (allowed earlier in this session)" in rest
    assert "s = for this session" not in rest  # the second request was not asked


SLEEPER = """module.exports = { description: "Sleeps in a command.", parameters: { type: "object" },
  execute(ctx) { ctx.log("sleeping"); ctx.system.exec("echo $$ > child.pid; exec sleep 60"); return "woke"; } };"""


@pytest.fixture
def start_run():
    """Start ``rienda run`` processes; any still running when the test ends is killed."""
    started = []

    def start(home, work, *args):
        env = {**os.environ, "RIENDA_HOME": str(home)}
        proc = subprocess.Popen(interruptible([sys.executable, "-m", "rienda_kernel.cli", "run", *args]), cwd=work,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=60)


def test_sigterm_during_a_command_ends_its_children_runs_after_run_closes_the_session_and_exits_143(setup, start_run):
    home, work = setup
    (home / "tools" / "sleeper").mkdir()
    (home / "tools" / "sleeper" / "index.js").write_text(SLEEPER)
    (home / "agents" / "pub.md").write_text((home / "agents" / "pub.md").read_text().replace("[publish]", "[sleeper]"))
    write_script(work, [{"text": "", "tool_calls": [{"name": "sleeper", "arguments": {}}]}, {"text": "never"}])
    proc = start_run(home, work, "--agent", "pub", "sleep")
    read_until(proc, "stderr", "[tool:sleeper] sleeping")
    child = int(wait_for_file(work / "child.pid"))
    assert alive(child)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143
    assert not alive(child), "the command's process group was ended"
    assert "afterRun interrupted" in err
    records = only_session_lines(home)
    assert records[-1] == {"type": "run_end", "reason": "interrupted", "error": None}
    assert [r["text"] for r in records if r.get("role") == "tool"] == ["interrupted before the tool finished"]


def test_a_second_ctrl_c_stops_an_after_run_hook_that_never_returns(setup, start_run):
    home, work = setup
    (home / "hooks" / "audit" / "index.js").write_text(
        'module.exports = { afterRun(ctx, e) { ctx.log("afterRun " + e.reason); for (;;) {} } };')
    write_script(work, [{"text": " ".join(["word"] * 500), "chunk_delay_ms": 20}])
    proc = start_run(home, work, "--agent", "pub", "talk")
    assert read_until(proc, "stdout", "word ") == "word "
    proc.send_signal(signal.SIGINT)
    read_until(proc, "stderr", "afterRun interrupted")  # the first interrupt let afterRun run
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "afterRun was stopped by another interrupt" in err
    records = only_session_lines(home)
    assert [r["type"] for r in records[-2:]] == ["stopped", "run_end"]
    assert records[-2]["point"] == "afterRun" and records[-1]["reason"] == "interrupted"


def test_two_runs_of_one_session_at_once_the_second_is_refused_before_it_writes(setup, start_run):
    home, work = setup
    write_script(work, [{"text": "first"}, {"text": " ".join(["word"] * 500), "chunk_delay_ms": 20}, {"text": "x"}])
    session_id = rienda(home, work, "run", "hello").stderr.split("session ")[-1].split()[0]
    path = home / "sessions" / f"{session_id}.jsonl"
    holder = start_run(home, work, "--session", session_id, "talk")
    assert read_until(holder, "stdout", "word ") == "word "
    before = path.read_bytes()
    second = rienda(home, work, "run", "--session", session_id, "me too")
    assert second.returncode == 1
    assert f"rienda: session {session_id} is being written by another run (pid {holder.pid}): {path}" in second.stderr
    assert path.read_bytes().startswith(before) and b"me too" not in path.read_bytes()
    holder.send_signal(signal.SIGINT)
    holder.communicate(timeout=30)
    assert rienda(home, work, "run", "--session", session_id, "now").returncode == 0


def test_a_full_disk_ends_the_run_with_one_clear_line_and_leaves_a_session_that_loads(setup):
    import resource

    from rienda_kernel.engine.sessions.store import SessionStore

    home, work = setup
    (home / "tools" / "big").mkdir()
    (home / "tools" / "big" / "index.js").write_text(
        'module.exports = { description: "Big.", parameters: { type: "object" }, execute: () => "x".repeat(20000) };')
    (home / "agents" / "pub.md").write_text((home / "agents" / "pub.md").read_text().replace("[publish]", "[big]"))
    write_script(work, [{"text": "", "tool_calls": [{"name": "big", "arguments": {}}]}, {"text": "never"}])
    limit = 4096  # bytes any file of the process may reach: the 20 kB result cannot be saved

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "RIENDA_HOME": str(home)}
    done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "run", "--agent", "pub", "go"], cwd=work,
                          env=env, capture_output=True, text=True, timeout=60, preexec_fn=small_disk)
    [path] = (home / "sessions").glob("*.jsonl")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if "cannot write" in line]
    assert line.startswith(f"rienda: cannot write to session file {path}: File too large;")
    assert "afterRun error" in done.stderr
    data = path.read_bytes()
    assert len(data) <= limit and data.endswith(b"\n")
    loaded = SessionStore(home).load(path.stem)
    assert loaded.warnings == []
    assert [m.role for m in loaded.messages] == ["user", "assistant", "tool"]  # the call keeps a (short) result
    assert loaded.messages[-1].text == "the session file could not be written while this call ran; its result is unknown"
    assert json.loads(data.splitlines()[-1])["type"] == "run_end"


def test_no_secret_reaches_json_events_or_the_terminal(setup):
    home, work = setup
    key = "sk-live-0123456789abcdef"
    (home / "tools" / "leak").mkdir()
    (home / "tools" / "leak" / "index.js").write_text(
        'module.exports = { description: "Leaks.", parameters: { type: "object" }, execute(ctx) {'
        ' ctx.log("log " + ctx.env.OPENAI_API_KEY); ctx.system.exec("echo out $OPENAI_API_KEY");'
        ' return "result " + ctx.env.OPENAI_API_KEY; } };')
    (home / "agents" / "pub.md").write_text((home / "agents" / "pub.md").read_text().replace("[publish]", "[leak]"))
    write_script(work, [{"text": f"my key is {key}", "tool_calls": [{"name": "leak", "arguments": {"k": key}}]},
                        {"text": f"still {key}"}])
    env = {**os.environ, "RIENDA_HOME": str(home), "OPENAI_API_KEY": key}
    for json_flag in (["--json"], []):
        done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "run", "--agent", "pub", *json_flag, "go"],
                              cwd=work, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert key not in done.stdout and key not in done.stderr
        assert "[redacted]" in done.stdout and "log [redacted]" in done.stderr + done.stdout


def test_config_yaml_says_what_it_ignored_and_refuses_a_wrong_type(setup):
    home, work = setup
    write_script(work, PUBLISH_SCRIPT)
    config = home / "config.yaml"
    config.write_text("auto_aprove: true\n")
    done = rienda(home, work, "run", "--agent", "pub", "publish it")
    hint = f"diagnostic: {config}:1: unknown setting 'auto_aprove' (did you mean 'auto_approve'?); ignored"
    assert hint in done.stderr and "confirm 'Publish': denied (default-deny)" in done.stderr
    for listing in ("agents", "tools", "hooks"):
        assert hint in rienda(home, work, listing).stderr
    config.write_text('# approvals\nauto_approve: "true"\n')
    sessions = list((home / "sessions").glob("*.jsonl"))
    done = rienda(home, work, "run", "--agent", "pub", "publish it")
    assert done.returncode == 1 and list((home / "sessions").glob("*.jsonl")) == sessions
    assert f"rienda: {config}:2: auto_approve must be true or false (a YAML boolean, without quotes), got the string 'true'" in done.stderr


def test_ctrl_c_before_the_first_token_says_interrupted(setup, start_run):
    home, work = setup
    (home / "hooks" / "audit" / "index.js").write_text(
        'module.exports = { beforeModelRequest(ctx) { ctx.log("asking the model"); } };')
    write_script(work, [{"text": "late", "chunk_delay_ms": 60000}])
    proc = start_run(home, work, "--agent", "pub", "talk")
    read_until(proc, "stderr", "asking the model")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert (proc.returncode, out) == (130, "")
    assert "rienda: interrupted\n" in err and err.rstrip().splitlines()[-1].startswith("session ")
