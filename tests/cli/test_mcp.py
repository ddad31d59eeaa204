"""``rienda tools``, ``rienda call`` and ``rienda run`` with MCP servers, as real processes:
listings grouped by server, a call, and no server left behind however the command ends
(done, Ctrl-C, SIGTERM, a server busy in a call that ignores the cancellation)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
import yaml

from ..helpers.cli import table_rows
from ..helpers.mcp_servers import gone, lab_server, pids, quitter_server, time_server, traces, wait_until, write_config
from ..helpers.pipes import read_until
from ..helpers.signals import interruptible

AUDIT = 'module.exports = { afterRun(ctx, e) { ctx.log("afterRun " + e.reason); } };'


@pytest.fixture
def setup(tmp_path):
    home, work, lab = tmp_path / "home", tmp_path / "work", tmp_path / "lab"
    for folder in (home / "agents", home / "hooks" / "audit", work, lab):
        folder.mkdir(parents=True)
    (home / "hooks" / "audit" / "index.js").write_text(AUDIT)
    write_config(home, {"lab": lab_server(lab, SERVICE_TOKEN="cli-secret-token-0987"), "time": time_server(),
                        "quitter": quitter_server("quitter: no API token given\n")})
    (home / "agents" / "mcp.md").write_text(textwrap.dedent("""\
        ---
        description: Calls MCP tools.
        model: scripted/script.yaml
        tools: [mcp__lab, mcp__time__get_current_time]
        hooks: [audit]
        ---
        Be brief.
        """))
    return home, work, lab


def rienda(home, work, *args):
    env = {**os.environ, "RIENDA_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", *args], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)


def script(work, *calls):
    (work / "script.yaml").write_text(yaml.safe_dump([
        {"text": "Calling.", "tool_calls": [{"name": name, "arguments": arguments} for name, arguments in calls]},
        {"text": "Done."}]))


def test_rienda_tools_lists_each_servers_tools_after_the_others_and_says_which_server_failed(setup):
    home, work, lab = setup
    done = rienda(home, work, "tools")
    assert done.returncode == 0, done.stderr
    rows = table_rows(done.stdout)
    names = [row["name"] for row in rows]
    assert names[:5] == ["agent", "http", "read", "shell", "write"]
    assert names[5:] == sorted(names[5:]) and names.index("mcp__lab__big") < names.index("mcp__time__convert_time")
    assert {"name": "mcp__time__convert_time", "description": "Convert time between timezones",
            "origin": "MCP server time", "note": ""} in rows
    assert {"name": "mcp__lab__double", "description": "Doubles a whole number (and notes the call in LAB_DIR/calls).",
            "origin": "MCP server lab", "note": ""} in rows
    assert ("diagnostic: MCP server 'quitter' (" in done.stderr
            and "its stderr ended: quitter: no API token given" in done.stderr)
    assert "Traceback" not in done.stderr
    [pid] = pids(lab)
    assert gone(pid), "rienda tools left its MCP server running"


def test_rienda_call_runs_an_mcp_tool_and_checks_its_arguments(setup):
    home, work, lab = setup
    done = rienda(home, work, "call", "mcp__time__get_current_time", '{"timezone": "UTC"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["timezone"] == "UTC"
    bad = rienda(home, work, "call", "mcp__lab__double", '{"n": "two"}')
    assert (bad.returncode, bad.stdout) == (1, "invalid arguments for mcp__lab__double: field 'n': 'two' is not "
                                               "of type 'integer'\n")
    assert traces(lab, "calls") == []
    missing = rienda(home, work, "call", "mcp__quitter__anything")
    assert missing.returncode == 1 and missing.stderr.startswith(
        "rienda: no tool named 'mcp__quitter__anything': MCP server 'quitter' (")
    assert all(gone(pid) for pid in pids(lab))


def test_rienda_run_json_shows_an_mcp_call_like_any_call_and_no_server_secret(setup):
    home, work, lab = setup
    script(work, ("mcp__lab__environment", {"name": "SERVICE_TOKEN"}), ("mcp__lab__double", {"n": 2}))
    done = rienda(home, work, "run", "--agent", "mcp", "--json", "go")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    calls = [(e["name"], e["arguments"]) for e in events if e["type"] == "tool_call"]
    assert calls == [("mcp__lab__environment", {"name": "SERVICE_TOKEN"}), ("mcp__lab__double", {"n": 2})]
    assert [(e["text"], e["isError"]) for e in events if e["type"] == "tool_result"] == [
        ("[redacted]", False), ("4", False)]
    assert "cli-secret-token-0987" not in done.stdout + done.stderr
    assert not any("cli-secret-token-0987" in p.read_text() for p in (home / "sessions").glob("*.jsonl"))


SHOW_ENV = ('module.exports = { afterToolExecute(ctx, call, result) { '
            'ctx.log(JSON.stringify(ctx.config.mcp_servers.lab.env)); } };')


def test_a_non_secret_env_value_is_shown_and_a_secret_named_one_is_not_in_every_output(setup):
    home, work, lab = setup
    greeting = "hello-from-the-lab-env"
    write_config(home, {"lab": lab_server(lab, SERVICE_TOKEN="cli-secret-token-0987", GREETING=greeting)})
    (home / "hooks" / "show-env" / "index.js").parent.mkdir(parents=True)
    (home / "hooks" / "show-env" / "index.js").write_text(SHOW_ENV)
    (home / "agents" / "env.md").write_text("---\nmodel: scripted/script.yaml\ntools: [mcp__lab]\n"
                                            "hooks: [show-env]\n---\nBe brief.\n")
    script(work, ("mcp__lab__environment", {"name": "GREETING"}), ("mcp__lab__environment", {"name": "SERVICE_TOKEN"}),
           ("mcp__lab__environment", {"name": "LAB_DIR"}))
    done = rienda(home, work, "run", "--agent", "env", "--json", "go")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["text"] for e in events if e["type"] == "tool_result"] == [greeting, "[redacted]", str(lab)]
    shown = json.loads(next(e["text"] for e in events if e["type"] == "log"))
    assert shown == {"LAB_DIR": str(lab), "SERVICE_TOKEN": "[redacted]", "GREETING": greeting}
    [session] = [p.read_text() for p in (home / "sessions").glob("*.jsonl")]
    assert greeting in session and str(lab) in session
    assert "cli-secret-token-0987" not in done.stdout + done.stderr + session
    plain = rienda(home, work, "run", "--agent", "env", "go")  # the terminal's output, not --json
    assert plain.returncode == 0 and greeting in plain.stdout + plain.stderr, plain.stderr
    assert "cli-secret-token-0987" not in plain.stdout + plain.stderr


@pytest.mark.parametrize(("signum", "tool", "code"), [
    (signal.SIGINT, "slow", 130),      # Ctrl-C: the call is cancelled, the server told so
    (signal.SIGTERM, "slow", 143),
    (signal.SIGTERM, "stubborn", 143),  # a server that ignores the cancellation is ended all the same
])
def test_an_interrupted_run_ends_its_mcp_call_and_leaves_no_server_running(setup, signum, tool, code):
    home, work, lab = setup
    script(work, (f"mcp__lab__{tool}", {"seconds": 120}))
    env = {**os.environ, "RIENDA_HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-m", "rienda_kernel.cli", "run", "--agent", "mcp", "go"], cwd=work,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        early = read_until(proc, "stderr", "step 3 (3/3)\n") if tool == "slow" else ""  # its progress, shown live
        wait_until(lambda: traces(lab, "started"), f"the {tool} tool running")
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
        err = early + err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == code, err
    assert "afterRun interrupted" in err and "Traceback" not in err
    if tool == "slow":
        assert traces(lab, "cancelled") == ["slow"]  # notifications/cancelled reached the server
        assert "[tool:mcp__lab__slow] warming up\n" in early
    [pid] = pids(lab)
    assert gone(pid), "the MCP server outlived rienda run"


def test_ctrl_c_while_a_listing_starts_servers_leaves_none_behind(setup):
    home, work, lab = setup
    write_config(home, {"lab": lab_server(lab), "mute": {"command": sys.executable, "args": [
        "-c", f"import os, time; open({str(lab / 'mute.pid')!r}, 'w').write(str(os.getpid())); time.sleep(120)"]}})
    env = {**os.environ, "RIENDA_HOME": str(home)}
    # SIGINT at its default, as a person's Ctrl-C finds it: a listing takes it as Python does,
    # so a suite started from a background job (SIGINT ignored) would see it ignored.
    proc = subprocess.Popen(interruptible([sys.executable, "-m", "rienda_kernel.cli", "tools"]), cwd=work, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: (lab / "mute.pid").exists() and pids(lab), "both servers started")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130 and err.strip() == "rienda: interrupted", (proc.returncode, err)
    assert gone(int((lab / "mute.pid").read_text())) and all(gone(pid) for pid in pids(lab))


def test_rienda_hook_tries_a_hook_on_an_mcp_call_without_starting_any_server(setup):
    home, work, lab = setup
    (home / "hooks" / "guard").mkdir()
    (home / "hooks" / "guard" / "index.js").write_text(
        'module.exports = { beforeToolExecute(ctx, call) { if (call.name === "mcp__git__git_commit") '
        'return { allow: false, reason: "no commits from agents" }; } };')
    payload = {"name": "mcp__git__git_commit", "arguments": {"repo_path": ".", "message": "x"}}
    done = rienda(home, work, "hook", "guard", "beforeToolExecute", json.dumps(payload), "--json")
    assert done.returncode == 0, done.stderr
    call = json.loads(done.stdout)
    assert (call["effect"], call["outcome"]) == ("refused", {"allow": False, "reason": "no commits from agents"})
    assert pids(lab) == []
