"""A file of the sessions folder that cannot be used is one line naming it and why, in
every command that meets it: ``rienda sessions`` (a diagnostic, the rest listed), ``/sessions``
in ``rienda chat`` (the listing's diagnostics), ``rienda show``, ``rienda chat --resume``,
``/show``, ``/resume``; ``last`` names each newer file it passed over. Real processes, as
root for folders and headers and as an unprivileged user for permissions (issue 40)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers.unprivileged import NOBODY

from ..helpers.cli import rienda, table_rows
from ..helpers.homes import scripted_home, write_script

FOLDER = "20990101-000000-000000-dir0"  # ids sort by time: these are newer than any real session
NOT_A_SESSION = "20990101-000000-000001-json"
EMPTY = "20990101-000000-000002-empt"


@pytest.fixture
def saved(tmp_path):
    """(home, work, [the two sessions' ids]), with a folder, a file whose first line is no
    session header, an empty file and a file whose name is no session id beside them."""
    home, work = scripted_home(tmp_path)
    write_script(work, [{"text": "first"}, {"text": "second"}])
    ids = []
    for prompt in ("one", "two"):
        done = rienda(home, work, "run", prompt)
        assert done.returncode == 0, done.stderr
        ids.append(done.stderr.split("session ", 1)[1].split()[0])
    sessions = home / "sessions"
    (sessions / f"{FOLDER}.jsonl").mkdir()
    (sessions / f"{NOT_A_SESSION}.jsonl").write_text('{"type": "message", "role": "user", "text": "hi"}\n')
    (sessions / f"{EMPTY}.jsonl").write_text("")
    (sessions / "my notes.jsonl").write_text("notes\n")
    return home, work, ids


LEFT_OUT = [
    f"home/sessions/{FOLDER}.jsonl is a folder, not a session file",
    f'home/sessions/{NOT_A_SESSION}.jsonl:1: not a Rienda session: the first line must be the session header '
    '{"type": "session", "version": 1, ...}',
    f"home/sessions/{EMPTY}.jsonl: empty: not a Rienda session (a session file starts with its header line)",
    "home/sessions/my notes.jsonl: its name is not a session id (1 to 128 letters, digits, '_' or '-')",
]


def chat(home, cwd, lines: str, *args: str) -> subprocess.CompletedProcess:
    return rienda(home, cwd, "--home", str(home), "chat", "--workdir", str(home.parent / "work"), *args, input=lines)


def test_rienda_sessions_lists_the_usable_ones_and_names_each_file_left_out(saved):
    home, work, ids = saved
    done = rienda(home, home.parent, "sessions")
    assert done.returncode == 0
    assert [row["id"] for row in table_rows(done.stdout)] == ids
    assert sorted(done.stderr.splitlines()) == sorted(f"diagnostic: {line}" for line in LEFT_OUT)


def test_slash_sessions_in_chat_says_the_same_as_its_diagnostics(saved):
    home, _, ids = saved
    done = chat(home, home.parent, "/sessions\n")
    assert done.returncode == 0, done.stderr
    listed, diagnostics = done.stdout.split("\n\nDiagnostics (4):\n")
    assert all(session in listed for session in ids)
    assert sorted(diagnostics.splitlines()) == sorted(f"  - {line}" for line in LEFT_OUT)


def test_a_folder_named_as_a_session_is_said_to_be_one_everywhere(saved):
    home, work, _ = saved
    line = f"home/sessions/{FOLDER}.jsonl is a folder, not a session file"
    for words in (["show", FOLDER], ["run", "--session", FOLDER, "again"], ["chat", "--resume", FOLDER],
                  ["script", FOLDER], ["pin", FOLDER]):
        done = rienda(home, home.parent, *words, input="")
        assert (done.returncode, done.stderr) == (1, f"rienda: {line}\n"), words
    done = chat(home, home.parent, f"/show {FOLDER}\n/resume {FOLDER}\n")
    assert done.stderr.splitlines()[:2] == [line, line]


def test_last_names_each_newer_file_it_passed_over(saved):
    home, work, ids = saved
    shown = rienda(home, home.parent, "show", "last")
    assert shown.returncode == 0 and shown.stdout.startswith(f"session {ids[1]} ")
    said = [f"warning: {line}; left out, so last is {ids[1]}" for line in LEFT_OUT]
    assert sorted(shown.stderr.splitlines()) == sorted(said)
    resumed = rienda(home, home.parent, "run", "--session", "last", "--workdir", str(work), "three")
    assert (resumed.returncode, resumed.stdout) == (0, "second\n")  # the session goes on where it stopped
    assert sorted(line for line in resumed.stderr.splitlines() if line.startswith("warning:")) == sorted(said)
    chatted = chat(home, home.parent, "", "--resume", "last")
    assert sorted(line for line in chatted.stderr.splitlines() if line.startswith("warning:")) == sorted(said)


def test_a_sessions_folder_that_is_a_file_is_said_to_be_one(tmp_path):
    home, work = scripted_home(tmp_path)
    (home / "sessions").write_text("")
    line = "rienda: home/sessions is a file, not a folder: it cannot hold the sessions\n"
    for words in (["sessions"], ["show"], ["chat", "--resume", "last"]):
        done = rienda(home, tmp_path, *words, input="")
        assert (done.returncode, done.stderr) == (1, line), words


# -- as a user whom permissions bind --------------------------------------------------------------


@pytest.fixture
def locked(unprivileged):
    """(home, work, user, [ids]): two sessions owned by the unprivileged user, the newer
    one mode 000."""
    root = unprivileged.directory
    home, work = scripted_home(root)
    write_script(work, [{"text": "first"}, {"text": "second"}])
    ids = []
    for prompt in ("one", "two"):
        done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), "run", prompt],
                              cwd=work, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        ids.append(done.stderr.split("session ", 1)[1].split()[0])
    if os.geteuid() == 0:
        for path in [root, *root.rglob("*")]:
            os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    (home / "sessions" / f"{ids[1]}.jsonl").chmod(0)
    return home, work, unprivileged, ids


def as_user(user, home, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return user.command("-m", "rienda_kernel.cli", "--home", str(home), *args, cwd=home.parent, input=stdin)


def test_an_unreadable_session_file_is_named_by_every_listing_and_by_last(locked):
    home, work, user, ids = locked
    said = f"~/home/sessions/{ids[1]}.jsonl: cannot be read: permission denied"  # the user's home is ~
    listed = as_user(user, home, "sessions")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr
    assert ([row["id"] for row in table_rows(listed.stdout)], listed.stderr) == ([ids[0]], f"diagnostic: {said}\n")
    chatted = as_user(user, home, "chat", "--workdir", str(work), stdin="/sessions\n")
    assert chatted.returncode == 0 and chatted.stdout.endswith(f"Diagnostics (1):\n  - {said}\n"), chatted.stdout
    shown = as_user(user, home, "show", "last")
    assert shown.stdout.startswith(f"session {ids[0]} ")
    assert shown.stderr == f"warning: {said}; left out, so last is {ids[0]}\n"
    direct = as_user(user, home, "show", ids[1])
    assert (direct.returncode, direct.stderr) == (1, f"rienda: {said}\n")


def test_a_sessions_folder_that_cannot_be_listed_is_one_line_in_chat_too(locked):
    home, work, user, _ = locked
    (home / "sessions").chmod(0)
    line = "~/home/sessions: cannot be read: permission denied"
    chatted = as_user(user, home, "chat", "--workdir", str(work), stdin="/sessions\n/resume last\n")
    assert chatted.returncode == 0 and chatted.stderr.splitlines()[:2] == [line, line], chatted.stderr
    resumed = as_user(user, home, "chat", "--resume", "last", stdin="")
    assert (resumed.returncode, resumed.stderr) == (1, f"rienda: {line}\n")
