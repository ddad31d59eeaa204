"""The ``rienda`` console script, run as a real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path


from tests.helpers.pipes import read_until
from tests.helpers.signals import interruptible
from tests.helpers.secret_config import CONFIG_TOOL, CONFIG_WITH_SECRETS, SECRETS, assert_redacted
from tests.helpers import cli, paths

EXAMPLES = paths.EXAMPLES


def rienda(*args: str, home: Path = EXAMPLES, cwd: Path | None = None, **kwargs) -> subprocess.CompletedProcess:
    """``rienda *args``, in the examples' home unless told otherwise."""
    return cli.rienda(home, cwd, *args, **kwargs)


def test_call_prints_the_result_and_exits_0(tmp_path):
    (tmp_path / "notes.txt").write_text("one two three")
    done = rienda("call", "word-count", '{"path": "notes.txt"}', "--workdir", str(tmp_path))
    assert (done.returncode, done.stdout) == (0, "3\n")


def test_call_is_not_disturbed_by_broken_tools_beside_it_and_names_them_when_its_tool_is_missing(tmp_path):
    """(It loads only the tool it calls, so a neighbour that spins at load costs nothing;
    that is time, which the tests do not measure.)"""
    home = tmp_path / "home"
    for name, source in (("echo", 'module.exports = { description: "e", parameters: { type: "object" }, '
                                  'execute: () => "echoed" };'),
                         ("spins", "for (;;) {}"), ("broken", "throw new Error('not loaded');")):
        (home / "tools" / name).mkdir(parents=True)
        (home / "tools" / name / "index.js").write_text(source)
    (home / "hooks" / "spins").mkdir(parents=True)
    (home / "hooks" / "spins" / "index.js").write_text("for (;;) {}")
    done = rienda("call", "echo", home=home)
    assert (done.returncode, done.stdout, done.stderr) == (0, "echoed\n", "")
    missing = rienda("call", "nowhere", home=home)  # then every tool is looked at, to say what exists
    assert missing.returncode == 1 and "broken/index.js" in missing.stderr and "(agent, echo, http, read, shell, write)" in missing.stderr
    # a tool that is there but cannot be loaded: said so, and why (not "no tool named"): issue 40
    broken = rienda("call", "broken", home=home)
    assert broken.returncode == 1 and broken.stderr.count("\n") == 1, broken.stderr
    assert broken.stderr.startswith("rienda: tool 'broken' could not be loaded: ") and "not loaded" in broken.stderr
    typo = rienda("call", "ecko", home=home)
    assert "no tool named 'ecko' (did you mean 'echo'?) in " in typo.stderr, typo.stderr


def test_an_error_result_exits_1_and_bad_arguments_name_the_field(tmp_path):
    done = rienda("call", "word-count", '{"path": 3}', "--workdir", str(tmp_path))
    assert done.returncode == 1
    assert "field 'path': 3 is not of type 'string'" in done.stdout


def test_confirm_is_denied_by_default_and_allowed_with_yes(tmp_path):
    denied = rienda("call", "publish", "--workdir", str(tmp_path))
    assert (denied.returncode, denied.stdout) == (1, "cancelled by the user\n")
    assert ("confirm 'Publish': denied (default-deny); to allow it: --yes, --confirm allow, or RIENDA_CONFIRM=allow\n"
            in denied.stderr)
    refused = rienda("call", "publish", "--workdir", str(tmp_path), "--confirm", "deny")
    assert "denied (auto-deny); to allow it: --yes" in refused.stderr
    allowed = rienda("call", "publish", "--workdir", str(tmp_path), "--yes")
    assert "confirm 'Publish': allowed (auto-approve)\n" in allowed.stderr
    assert allowed.returncode == 1 and "not a git repository" in allowed.stdout.lower()


def test_tools_and_hooks_list_with_diagnostics(tmp_path):
    home = tmp_path / "home"
    (home / "hooks" / "typo").mkdir(parents=True)
    (home / "hooks" / "typo" / "index.js").write_text("module.exports = { beforeToolExec() {}, afterRun() {} };")
    (home / "tools" / "shell").mkdir(parents=True)
    (home / "tools" / "shell" / "index.js").write_text(
        'module.exports = { description: "Mine.", parameters: { type: "object" }, execute: () => "" };')
    tools = rienda("tools", home=home)
    [shell] = [row for row in cli.table_rows(tools.stdout) if row["name"] == "shell"]
    assert (shell["description"], shell["note"]) == ("Mine.", "shadows the built-in")
    hooks = rienda("hooks", home=home)
    assert [(row["name"], row["points"]) for row in cli.table_rows(hooks.stdout)] == [("typo", "afterRun")]
    assert "did you mean 'beforeToolExecute'?" in hooks.stderr


def test_log_and_command_output_go_to_stderr_live(tmp_path):
    home = tmp_path / "home"
    (home / "tools" / "chatty").mkdir(parents=True)
    (home / "tools" / "chatty" / "index.js").write_text(textwrap.dedent("""
        module.exports = { description: "Chatty.", parameters: { type: "object" },
          execute: function (ctx) { ctx.log("working"); ctx.system.exec("echo from-exec"); return "done"; } };
    """))
    done = rienda("call", "chatty", home=home)
    assert done.stdout == "done\n"
    assert "[tool:chatty] working\n" in done.stderr and "from-exec\n" in done.stderr


def test_ctrl_c_stops_the_tool_and_exits_130(tmp_path):
    home = tmp_path / "home"
    (home / "tools" / "spin").mkdir(parents=True)
    (home / "tools" / "spin" / "index.js").write_text(
        'module.exports = { description: "Spins.", parameters: { type: "object" },'
        ' execute: function (ctx) { ctx.log("spinning"); while (true) {} } };')
    env = {**os.environ, "RIENDA_HOME": str(home)}
    proc = subprocess.Popen(interruptible([sys.executable, "-m", "rienda_kernel.cli", "call", "spin"]), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    read_until(proc, "stderr", "spinning")  # logged by the tool itself: it is running
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=10) == 130


def test_unknown_tool_lists_what_exists():
    done = rienda("call", "nope")
    assert done.returncode == 1
    assert "no tool named 'nope'" in done.stderr and "word-count" in done.stderr


def test_call_never_prints_a_secret(tmp_path):
    home = tmp_path / "home"
    (home / "tools" / "leak").mkdir(parents=True)
    (home / "tools" / "leak" / "index.js").write_text(
        'module.exports = { description: "Leaks.", parameters: { type: "object" }, execute(ctx) {'
        ' ctx.log("log " + ctx.env.GITHUB_TOKEN); return "result " + ctx.env.GITHUB_TOKEN; } };')
    env = {**os.environ, "RIENDA_HOME": str(home), "GITHUB_TOKEN": "ghp_0123456789abcdef"}
    done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "call", "leak"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "result [redacted]\n")
    assert "[tool:leak] log [redacted]" in done.stderr and "ghp_0123456789abcdef" not in done.stderr


def test_call_shows_the_tool_ctx_config_without_the_secrets_of_config_yaml(tmp_path):
    home = tmp_path / "home"
    (home / "tools" / "cfg").mkdir(parents=True)
    (home / "tools" / "cfg" / "index.js").write_text(CONFIG_TOOL)
    (home / "config.yaml").write_text(CONFIG_WITH_SECRETS)
    done = rienda("call", "cfg", "--workdir", str(tmp_path), home=home)
    assert done.returncode == 0, done.stderr
    assert_redacted(done.stdout)
    assert not [secret for secret in SECRETS if secret in done.stderr]


def test_version_is_said_by_both_entries():
    from rienda_kernel import __version__

    done = rienda("--version")
    assert (done.returncode, done.stdout) == (0, f"rienda {__version__}\n")
    module = subprocess.run([sys.executable, "-m", "rienda_kernel", "--version"], capture_output=True, text=True,
                            timeout=60)
    assert (module.returncode, module.stdout) == (0, f"rienda {__version__}\n")


def test_python_m_rienda_kernel_help_is_riendas_own_and_starts_no_kernel():
    done = subprocess.run([sys.executable, "-m", "rienda_kernel", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("usage: python -m rienda_kernel install")
    assert "rienda --help" in done.stdout and "IPython" not in done.stdout


def test_empty_listings_say_where_they_looked_and_where_the_demos_sessions_are(tmp_path):
    home, data = tmp_path / "home", tmp_path / "data"
    home.mkdir()
    env = {**os.environ, "RIENDA_HOME": str(home), "XDG_DATA_HOME": str(data)}

    def listing(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", *args], env=env, capture_output=True,
                              text=True, timeout=60)

    sessions = listing("sessions")
    assert (sessions.returncode, sessions.stdout) == (0, "")  # nothing on stdout for a script to count
    assert sessions.stderr == f"no saved sessions in {home / 'sessions'}\n"
    hooks = listing("hooks")
    assert (hooks.returncode, hooks.stdout, hooks.stderr) == (0, "", f"no usable hook in {home / 'hooks'}\n")
    demo_sessions = data / "rienda" / "demo" / "home" / "sessions"
    demo_sessions.mkdir(parents=True)
    (demo_sessions / "20261204-000000-000000-abcd.jsonl").write_text("{}\n", encoding="utf-8")
    after_demo = listing("sessions")
    assert after_demo.stderr == (f"no saved sessions in {home / 'sessions'}; rienda demo saved its sessions in its "
                                 f"own home: rienda --home {demo_sessions.parent} sessions\n")


def test_a_misspelt_key_is_named_before_the_key_it_leaves_missing(tmp_path):
    (tmp_path / "config.yaml").write_text("mcp_servers:\n  time:\n    comand: python\n", encoding="utf-8")
    done = rienda("--home", str(tmp_path), "tools", home=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert (f"{tmp_path / 'config.yaml'}:3: unknown key 'comand' in mcp_servers.time (did you mean 'command'?); "
            "so mcp_servers.time needs command") in done.stderr
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "typo.md").write_text("---\nmodle: openai/gpt-4o\n---\nHi.\n", encoding="utf-8")
    (tmp_path / "config.yaml").unlink()
    run = rienda("--home", str(tmp_path), "run", "--agent", "typo", "hi", home=tmp_path, cwd=tmp_path)
    assert run.returncode == 1 and run.stderr.count("\n") == 1, run.stderr
    assert "typo.md:2: unknown key 'modle' (did you mean 'model'?); missing required key 'model'" in run.stderr
