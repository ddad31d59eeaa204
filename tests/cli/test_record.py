"""``rienda run --record``: real processes against an OpenAI-wire server on 127.0.0.1 that
counts requests; the second run with the server stopped."""

from __future__ import annotations

import json

import pytest
import yaml

from ..helpers.cli import rienda as rienda_command
from ..helpers.homes import write_agent
from ..helpers.recording_server import echo_server
from ..helpers.vendor_wire import serving

KEY = "sk-cli-recording-0123456789abcdef"


def rienda(home, work, *args, env_extra=None, **kwargs):
    """``rienda *args`` with these variables set, the key and the mode unset otherwise."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("LOCAL_API_KEY", "RIENDA_RECORD_MODE"):
            patch.delenv(name, raising=False)
        for name, value in (env_extra or {}).items():
            patch.setenv(name, value)
        return rienda_command(home, work, *args, **kwargs)


def setup_home(tmp_path, url):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    (home / "agents").mkdir(parents=True)
    (home / "config.yaml").write_text(yaml.safe_dump(
        {"providers": {"local": {"api": "openai", "base_url": url, "api_key_env": "LOCAL_API_KEY"}}}))
    write_agent(home, "a", ["read"], [], "local/echo")
    (work / "notes.txt").write_text("alpha beta gamma")
    return home, work


def run_recorded(home, work, *options, env_extra=None):
    """``rienda run --agent a --record run.rec.jsonl *options "read: notes.txt"``."""
    return rienda(home, work, "run", "--agent", "a", "--record", "run.rec.jsonl", *options, "read: notes.txt",
                  env_extra=env_extra)


def test_run_record_twice_the_second_offline_prints_the_same(tmp_path):
    with serving(echo_server()) as server:
        home, work = setup_home(tmp_path, server.url)
        first = run_recorded(home, work, env_extra={"LOCAL_API_KEY": KEY})
        assert len(server.requests) == 2
    recording = (work / "run.rec.jsonl").read_bytes()
    second = run_recorded(home, work, "--record-mode", "replay")
    assert (first.returncode, second.returncode) == (0, 0), (first.stderr, second.stderr)
    assert first.stdout == second.stdout == "The tool said: alpha beta gamma\n"
    assert "← read: alpha beta gamma" in second.stderr  # the tool ran again
    assert "over 2 model turns (replayed: 0 spent now)" in second.stderr
    assert "replayed" not in first.stderr
    assert (work / "run.rec.jsonl").read_bytes() == recording and KEY.encode() not in recording


def test_run_record_replay_that_differs_is_one_line_and_exit_1(tmp_path):
    with serving(echo_server()) as server:
        home, work = setup_home(tmp_path, server.url)
        run_recorded(home, work, env_extra={"LOCAL_API_KEY": KEY})
    (work / "notes.txt").write_text("changed")
    done = run_recorded(home, work, env_extra={"RIENDA_RECORD_MODE": "replay"})
    assert done.returncode == 1
    assert ("rienda: turn 1 is not in the recording run.rec.jsonl: tool `read`'s result differs from the recording: "
            "recorded 'alpha beta gamma', now 'changed'; replay mode never asks the model") in done.stderr
    assert "Traceback" not in done.stderr


def test_run_record_auto_says_the_divergence_and_as_json(tmp_path):
    with serving(echo_server()) as server:
        home, work = setup_home(tmp_path, server.url)
        run_recorded(home, work, env_extra={"LOCAL_API_KEY": KEY})
        (work / "notes.txt").write_text("changed")
        done = run_recorded(home, work, "--json", env_extra={"LOCAL_API_KEY": KEY})
        assert len(server.requests) == 3
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [divergence] = [e for e in events if e["type"] == "divergence"]
    assert divergence["asked"] is True and divergence["where"] == "turn 1"
    assert divergence["difference"].startswith("tool `read`'s result differs from the recording")
    assert [e["type"] for e in events].count("replayed") == 1


def test_a_bad_record_mode_is_one_line(tmp_path):
    home, work = setup_home(tmp_path, "http://127.0.0.1:9/v1")
    done = rienda(home, work, "run", "--agent", "a", "--record", "r.jsonl", "--record-mode", "replya", "hi")
    assert done.returncode == 1
    assert done.stderr.strip() == ("rienda: --record-mode: 'replya' is not a recording mode (did you mean 'replay'?) "
                                   "(modes: auto, replay, live)")


def test_chat_records_with_the_same_command_and_replays_offline(tmp_path):
    with serving(echo_server()) as server:
        home, work = setup_home(tmp_path, server.url)
        first = rienda(home, work, "chat", "--agent", "a", input="/record chat.rec.jsonl\nHello\nread: notes.txt\n",
                       env_extra={"LOCAL_API_KEY": KEY})
        assert len(server.requests) == 3, first.stderr
    second = rienda(home, work, "chat", "--agent", "a", input="/record chat.rec.jsonl --mode replay\n/record\nHello\n"
                                                              "read: notes.txt\n")
    assert "Recording chat.rec.jsonl: the model's answers are kept there" in second.stdout + second.stderr
    assert "(mode replay: answered only from it: the model is never asked); it holds 3 exchanges." in \
           second.stdout + second.stderr
    assert "You said: Hello" in second.stdout and "The tool said: alpha beta gamma" in second.stdout
    assert first.stdout.count("You said: Hello") == second.stdout.count("You said: Hello") == 1
