"""What ``rienda`` makes of its command line, as a real process: a mistake is one line
naming the value and what to do (the closest command, option or choice), exit 2; a bare
``rienda`` is its help (on a pipe and on a terminal); bytes that are not UTF-8, in an
argument, a prompt on standard input or a chat line, are U+FFFD as everywhere, and a path
keeps them (issue 40)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from ..helpers.cli import rienda
from ..helpers.homes import only_session_lines, scripted_home, write_script
from ..helpers.terminals import PtyChat
from ..helpers.vendor_streams.openai import text_stream
from ..helpers.vendor_wire import serving
from ..helpers.vendors import fake_openai


@pytest.fixture
def dirs(tmp_path):
    """(home, work): the built-in default agent on the scripted model, which has two answers."""
    home, work = scripted_home(tmp_path)
    write_script(work, [{"text": "first"}, {"text": "second"}])
    return home, work


MISTAKES = {
    ("pin", "last", "abc"): "pin: N must be a whole number, got 'abc'; rienda pin --help shows the usage",
    ("agnets",): "unknown command 'agnets' (did you mean 'agents'?); rienda --help lists the commands",
    ("run", "--agnet", "counter", "hi"): "run has no option --agnet (did you mean --agent?); rienda run --help lists "
                                         "its options",
    ("--agnet", "counter", "run", "hi"): "--agnet is not an option of rienda itself (did you mean --agent?); a "
                                         "command's options go after the command (rienda COMMAND --help lists them)",
    ("run", "--confirm", "alow", "hi"): "run: --confirm must be one of ask, allow, deny, got 'alow' (did you mean "
                                        "'allow'?); rienda run --help shows the usage",
    ("run", "--yes", "--confirm", "deny", "hi"): "run: --confirm cannot go with --yes; rienda run --help shows the usage",
    ("run", "two", "words"): "run: unexpected argument 'words' (an argument with spaces in it goes in quotes); rienda "
                             "run --help shows the usage",
    ("hook", "guard"): "hook: missing point; rienda hook --help shows the usage",
    ("sessions", "-n", "0"): "sessions: -n must be a positive whole number, got '0'; rienda sessions --help shows "
                             "the usage",
    ("run", "--max-turns"): "run: --max-turns needs a value; rienda run --help shows the usage",
    ("chat", "--agent", "a", "--resume", "last"): "chat: --resume cannot go with --agent; rienda chat --help shows "
                                                  "the usage",
    ("sessions", "remove", "x"): "sessions takes rm and the sessions to remove, not 'remove x'; rienda sessions "
                                 "--help shows the usage",
}


@pytest.mark.parametrize("words", MISTAKES, ids=" ".join)
def test_a_usage_mistake_is_one_line_naming_it_and_what_to_do_exit_2(dirs, words):
    home, work = dirs
    done = rienda(home, work, *words)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"rienda: {MISTAKES[words]}\n")
    assert not (home / "sessions").exists()  # nothing ran


def test_rienda_alone_prints_its_help_and_exits_0(dirs):
    home, work = dirs
    done = rienda(home, work)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == rienda(home, work, "--help").stdout and "COMMAND" in done.stdout and "sessions" in done.stdout


def test_show_replay_and_script_without_an_id_mean_last(dirs):
    home, work = dirs
    assert rienda(home, work, "run", "hello").returncode == 0
    [line] = [line for line in only_session_lines(home) if line["type"] == "session"]
    shown = rienda(home, work, "show")
    assert (shown.returncode, shown.stdout) == (0, rienda(home, work, "show", "last").stdout)
    assert shown.stdout.startswith(f"session {line['id']}  agent default")
    assert rienda(home, work, "script").stdout == rienda(home, work, "script", line["id"]).stdout
    replayed = rienda(home, work, "replay")
    assert replayed.returncode == 0 and replayed.stdout.startswith(f"replayed session {line['id']}")


def run_bytes(home, cwd, *args: str | bytes, **kwargs) -> subprocess.CompletedProcess:
    """``rienda *args`` where an argument may be bytes (as a shell passes ``$'\\xff'``)."""
    env = {**os.environ, "RIENDA_HOME": str(home), **kwargs.pop("env", {})}
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", *args], cwd=cwd, env=env, capture_output=True,
                          timeout=60, **kwargs)


def test_bytes_that_are_not_utf8_in_an_argument_are_u_fffd_where_they_go(dirs):
    home, work = dirs
    done = run_bytes(home, work, "show", b"x\xff")
    assert (done.returncode, done.stderr.decode()) == (
        1, "rienda: 'x\ufffd' is not a valid session id (1 to 128 letters, digits, '_' or '-')\n")
    typo = run_bytes(home, work, b"agents\xff")
    assert typo.returncode == 2 and typo.stderr.decode().startswith(
        "rienda: unknown command 'agents\ufffd' (did you mean 'agents'?)")
    # the model's name goes to the server as JSON: it used to fail there ("surrogates not allowed")
    with serving(fake_openai()) as server:
        server.replies.append({"events": text_stream("hi")})
        (home / "config.yaml").write_text(yaml.safe_dump({"providers": {"local": {"api": "openai",
                                                                                    "base_url": server.url}}}))
        done = run_bytes(home, work, "run", "--model", b"local/m\xff", b"caf\xe9")
        assert (done.returncode, done.stdout) == (0, b"hi\n"), done.stderr.decode()
    assert server.requests[0]["model"] == "m\ufffd"
    assert server.requests[0]["messages"][-1] == {"role": "user", "content": "caf\ufffd"}


@pytest.mark.parametrize("strict", [False, True], ids=["locale", "strict-stdin"])
def test_a_prompt_on_stdin_with_bytes_that_are_not_utf8_runs_with_u_fffd(dirs, strict):
    """Whatever error handler standard input has (PYTHONIOENCODING=utf-8:strict, as some
    locales set), a bad byte is not a crash."""
    home, work = dirs
    env = {"PYTHONIOENCODING": "utf-8:strict"} if strict else {}
    done = run_bytes(home, work, "run", input=b"caf\xe9 au lait\n", env=env)
    assert (done.returncode, done.stdout) == (0, b"first\n"), done.stderr.decode()
    [prompt] = [line for line in only_session_lines(home) if line.get("role") == "user"]
    assert prompt["text"] == "caf\ufffd au lait\n"


def test_a_chat_line_with_bytes_that_are_not_utf8_on_a_pipe_is_u_fffd_where_it_goes(dirs):
    home, work = dirs
    with serving(fake_openai()) as server:
        server.replies.append({"events": text_stream("hi")})
        (home / "config.yaml").write_text(yaml.safe_dump({"providers": {"local": {"api": "openai",
                                                                                    "base_url": server.url}}}))
        done = run_bytes(home, work, "chat", input=b"/model local/m\xff\ncaf\xe9\n",
                         env={"PYTHONIOENCODING": "utf-8:strict"})
        assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().splitlines() == [
        "Model: local/m\ufffd, instead of the agent's, from the next prompt on (/model reset goes back).", "hi"]
    assert server.requests[0]["model"] == "m\ufffd"
    assert server.requests[0]["messages"][-1] == {"role": "user", "content": "caf\ufffd"}


def test_a_usage_mistake_at_a_terminal_is_the_same_one_line(dirs):
    """(A byte that is not UTF-8 typed at a terminal never reaches chat: readline reads it
    as a Meta key.)"""
    home, work = dirs
    chat = PtyChat(home, work, "--agnet", "a")
    try:
        assert chat.wait() == 2
    finally:
        chat.close()
    assert chat.text == ("rienda: chat has no option --agnet (did you mean --agent?); rienda chat --help lists its "
                         "options\n")


def test_a_path_keeps_its_bytes_it_names_the_folder_as_the_system_spells_it(dirs):
    home, work = dirs
    odd = os.path.join(os.fsencode(work), b"dossier-\xe9")
    os.mkdir(odd)
    write_script(work / os.fsdecode(b"dossier-\xe9"), [{"text": "inside"}])
    done = run_bytes(home, work, "run", "--workdir", odd, "hi")
    assert (done.returncode, done.stdout) == (0, b"inside\n"), done.stderr.decode()
    moved = os.path.join(os.fsencode(home.parent), b"home-\xe9")
    os.rename(home, moved)
    listed = run_bytes(work, work, "--home", moved, "sessions", "--json")
    assert [json.loads(line)["title"] for line in listed.stdout.splitlines()] == ["hi"], listed.stderr.decode()
