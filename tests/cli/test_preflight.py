"""A run that cannot start says why in one line and saves nothing: what the provider can
know before its first request (the scripted model's script, an API key, a base URL) is
checked before the session is made (``Provider.preflight``), and no setup failure leaves a
session behind, new or resumed. Real ``rienda`` processes, on a pipe (issue 40)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from ..helpers.homes import scripted_home, write_script

SCRIPT = "rienda: work/script.yaml: script file not found (the scripted model reads its responses from it)\n"


@pytest.fixture
def dirs(tmp_path):
    """(home, work): the built-in default agent on the scripted model, its script missing."""
    return scripted_home(tmp_path)


def rienda(home, work, command: str, *args: str, env: dict[str, str] | None = None,
           input: str | None = None) -> subprocess.CompletedProcess:
    """``rienda COMMAND --workdir work ARGS`` run from the folder above ``home`` and ``work``
    (paths show as ``home/...``, ``work/...``), the environment's OpenAI settings left out
    unless ``env`` gives them."""
    environ = {name: value for name, value in os.environ.items() if not name.startswith("OPENAI_")}
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), command, "--workdir",
                           str(work), *args], cwd=home.parent, env={**environ, **(env or {})}, input=input,
                          capture_output=True, text=True, timeout=60)


def sessions(home) -> list[str]:
    return sorted(path.name for path in (home / "sessions").glob("*")) if (home / "sessions").exists() else []


def test_a_missing_script_is_one_line_and_no_session(dirs):
    home, work = dirs
    done = rienda(home, work, "run", "hi")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", SCRIPT)
    assert sessions(home) == []
    chatted = rienda(home, work, "chat", input="hi\n")
    assert chatted.returncode == 0 and SCRIPT.removeprefix("rienda: ") in chatted.stderr, chatted.stderr
    assert chatted.stderr.endswith("bye (no session was started)\n") and sessions(home) == []


def test_a_script_that_is_not_one_is_one_line_naming_its_line_and_no_session(dirs):
    home, work = dirs
    (work / "script.yaml").write_text("- text: fine\n- txt: typo\n")
    done = rienda(home, work, "run", "hi")
    assert (done.returncode, done.stderr) == (1, "rienda: work/script.yaml:2: response 2: unknown key(s) txt; known: "
                                                 "chunk_delay_ms, error, text, thinking, tool_calls, usage\n")
    assert sessions(home) == []


def test_a_resumed_session_whose_script_went_away_is_left_as_it_was(dirs):
    home, work = dirs
    write_script(work, [{"text": "first"}, {"text": "second"}])
    assert rienda(home, work, "run", "hi").returncode == 0
    [name] = sessions(home)
    before = (home / "sessions" / name).read_bytes()
    (work / "script.yaml").unlink()
    done = rienda(home, work, "run", "--session", "last", "again")
    assert (done.returncode, done.stderr) == (1, SCRIPT + f"session {name.removesuffix('.jsonl')}\n")
    assert (home / "sessions" / name).read_bytes() == before


@pytest.mark.parametrize("key, base, line", [
    ("sk-caf\u00e9", None, "rienda: the API key in $OPENAI_API_KEY holds a character an HTTP header cannot carry "
                           "(character 7 of 7); set the variable again\n"),
    ("sk-test", "localhost:8080/v1", "rienda: localhost:8080/v1/chat/completions is not an http:// or https:// URL; "
                                     "check $OPENAI_BASE_URL, or set base_url under providers: openai: in config.yaml\n"),
])
def test_a_key_or_a_url_a_request_cannot_carry_is_one_line_before_any_session(dirs, key, base, line):
    home, work = dirs
    env = {"OPENAI_API_KEY": key, **({"OPENAI_BASE_URL": base} if base else {})}
    done = rienda(home, work, "run", "--model", "openai/gpt-4o", "hi", env=env)
    assert (done.returncode, done.stderr) == (1, line)
    assert "caf" not in done.stderr and sessions(home) == []  # nor is the key shown


def test_a_setting_that_fails_after_the_model_is_chosen_saves_no_session(dirs):
    home, work = dirs
    write_script(work, [{"text": "first"}])
    (home / "config.yaml").write_text(yaml.safe_dump({"default_model": "scripted/script.yaml",
                                                      "compaction": {"model": "nowhere/x"}}))
    done = rienda(home, work, "run", "hi")
    assert done.returncode == 1 and done.stderr.startswith("rienda: home/config.yaml: compaction.model: "), done.stderr
    assert sessions(home) == []
    (home / "config.yaml").write_text("default_model: scripted/script.yaml\n")
    assert rienda(home, work, "run", "hi").returncode == 0  # nothing was left holding a lock either

