"""``rienda`` as a user whom permissions bind (uid 65534), with parts of its home it cannot
read or write: one line naming the path, never a traceback; what can still work works (a
run declaring no tools does not need ``tools/``). And the paths a command is given
(``--workdir``, ``--home``, ``script -o``) are checked before any work starts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.helpers.unprivileged import NOBODY

AGENT = textwrap.dedent("""\
    ---
    description: Plain.
    model: scripted/script.yaml
    tools: []
    hooks: []
    ---
    Be plain.
    """)
COMMANDS = [["agents"], ["tools"], ["hooks"], ["sessions"], ["show", "last"], ["run", "--agent", "plain", "hi"],
            ["script", "last"], ["replay", "last"]]


@pytest.fixture
def home(unprivileged):
    """A home with an agent, a tool, a hook and a session, all owned by the unprivileged user."""
    root = unprivileged.directory
    home, work = root / "home", root / "work"
    for kind in ("tools", "hooks"):
        (home / kind / "x").mkdir(parents=True)
    (home / "tools" / "x" / "index.js").write_text(
        'module.exports = { description: "d", parameters: { type: "object" }, execute: () => "ok" };')
    (home / "hooks" / "x" / "index.js").write_text('module.exports = { afterRun(ctx, e) {} };')
    (home / "agents").mkdir()
    (home / "agents" / "plain.md").write_text(AGENT)
    work.mkdir()
    (work / "script.yaml").write_text("- text: hello\n")
    done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), "run", "--agent", "plain",
                           "first"], cwd=work, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    if os.geteuid() == 0:
        for path in [root, *root.rglob("*")]:
            os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    return home, work, unprivileged


def rienda(unprivileged, home, work, *args):
    return unprivileged.command("-m", "rienda_kernel.cli", "--home", str(home), *args, cwd=work)


def one_clear_line(done) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""


@pytest.mark.parametrize("folder", ["tools", "hooks"])
def test_an_unreadable_extensions_folder_is_a_diagnostic_and_a_run_without_them_works(home, folder):
    home, work, user = home
    (home / folder).chmod(0)
    for args in COMMANDS:
        done = rienda(user, home, work, *args)
        one_clear_line(done)
        assert done.returncode == 0, (args, done.stderr)
    listed = rienda(user, home, work, folder)
    assert f"diagnostic: ~/home/{folder}: cannot be read: permission denied" in listed.stderr
    run = rienda(user, home, work, "run", "--agent", "plain", "hi")
    assert run.stdout == "hello\n"


def test_an_unreadable_agents_folder_is_one_line_naming_it(home):
    home, work, user = home
    (home / "agents").chmod(0)
    listed = rienda(user, home, work, "agents")
    assert listed.returncode == 0
    assert one_clear_line(listed) == "diagnostic: ~/home/agents: cannot be read: permission denied; its agents cannot be loaded"
    for args in (["run", "--agent", "plain", "hi"], ["run", "hi"], ["replay", "last"]):
        done = rienda(user, home, work, *args)
        assert (done.returncode, one_clear_line(done)) == (
            1, "rienda: ~/home/agents: cannot be read: permission denied; its agents cannot be loaded"), args


def test_an_unreadable_sessions_folder_is_not_an_empty_one(home):
    home, work, user = home
    (home / "sessions").chmod(0)
    for args in (["sessions"], ["show", "last"], ["script", "last"], ["replay", "last"]):
        done = rienda(user, home, work, *args)
        assert (done.returncode, one_clear_line(done)) == (1, "rienda: ~/home/sessions: cannot be read: permission denied")
    run = rienda(user, home, work, "run", "--agent", "plain", "hi")
    assert run.returncode == 1
    assert one_clear_line(run).startswith("rienda: cannot create the session file ~/home/sessions/")


def test_an_unwritable_sessions_folder_lists_and_shows_but_a_run_is_one_line(home):
    home, work, user = home
    (home / "sessions").chmod(0o555)
    for args in (["sessions"], ["show", "last"], ["script", "last"]):
        done = rienda(user, home, work, *args)
        assert done.returncode == 0 and one_clear_line(done) == "", (args, done.stderr)
    run = rienda(user, home, work, "run", "--agent", "plain", "hi")
    assert run.returncode == 1
    assert one_clear_line(run).endswith(": Permission denied") and "cannot create the session file" in run.stderr


def test_an_unreadable_session_file_is_one_line_naming_it(home):
    home, work, user = home
    [session] = (home / "sessions").glob("*.jsonl")
    session.chmod(0)
    for args in (["show", session.stem], ["script", session.stem], ["run", "--session", session.stem, "again"],
                 ["show", "last"], ["replay", "last"]):
        done = rienda(user, home, work, *args)
        assert done.returncode == 1
        line = one_clear_line(done)
        assert f"~/home/sessions/{session.name}" in line and "ermission denied" in line, (args, line)


def test_an_unreadable_home_is_one_line_for_every_command(home):
    home, work, user = home
    home.chmod(0)
    for args in COMMANDS:
        done = rienda(user, home, work, *args)
        assert (done.returncode, one_clear_line(done)) == (1, "rienda: --home ~/home cannot be read: permission denied")


def test_paths_given_to_a_command_are_checked_before_any_work(home):
    home, work, user = home
    locked = work / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    # Paths are shown as the reader sees them: relative to the folder the command ran in.
    cases = {
        ("script", "last", "-o", str(locked / "x.yaml")): "rienda: -o locked/x.yaml cannot be written: the folder "
                                                          "locked is not writable",
        ("script", "last", "-o", str(work / "missing" / "x.yaml")): "rienda: -o missing/x.yaml: the folder missing "
                                                                    "does not exist",
        ("script", "last", "-o", str(work)): "rienda: -o . is a folder, not a file",
        ("run", "--workdir", str(work / "missing"), "hi"): "rienda: --workdir missing does not exist",
        ("run", "--workdir", str(work / "script.yaml"), "hi"): "rienda: --workdir script.yaml is a file, not a folder",
        ("call", "--workdir", str(work / "missing"), "read", "{}"): "rienda: --workdir missing does not exist",
        ("hook", "--workdir", str(work / "missing"), "x", "afterRun"): "rienda: --workdir missing does not exist",
    }
    sessions_before = sorted((home / "sessions").iterdir())
    for args, line in cases.items():
        done = rienda(user, home, work, *args)
        assert (done.returncode, one_clear_line(done)) == (1, line), args
    locked.chmod(0)
    done = rienda(user, home, work, "run", "--workdir", str(locked), "hi")
    assert one_clear_line(done) == "rienda: --workdir locked cannot be read: permission denied"
    assert sorted((home / "sessions").iterdir()) == sessions_before  # no run started


def test_a_current_folder_deleted_under_the_command_is_one_line(tmp_path):
    script = (f"mkdir gone && cd gone && rmdir ../gone && exec {sys.executable} -m rienda_kernel.cli "
              f"--home {tmp_path / 'home'} ")
    for args, line in (("agents", "rienda: the current folder . no longer exists (it was deleted)"),
                       ("run hi", "rienda: --workdir . no longer exists (it was deleted)")):
        done = subprocess.run(["bash", "-c", script + args], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stderr) == (1, line + "\n")
