"""The decision ledger, replay of a recorded session through another hook chain, and a
session turned into a scripted model (issue: see and test what hooks decide)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from rienda_kernel.engine import MessageMeta, NonInteractiveUI
from rienda_kernel.engine.testing.replay import replay_session, session_script

from ...helpers.homes import session_lines
from ...helpers.recorded_session import record_session


def records(rig, session_id, kind):
    return [line for line in session_lines(rig.home, session_id) if line["type"] == kind]


def test_the_ledger_saves_refusals_chained_rewrites_and_throws(rig):
    _, result = record_session(rig, hooks=("broken", "https", "tag", "deny-rm"))
    decisions = records(rig, result.session_id, "hook_decision")
    first = [(d["hook"], d["effect"]) for d in decisions if d["call_id"] == "call_1_1"]
    second = [(d["hook"], d["effect"]) for d in decisions if d["call_id"] == "call_1_2"]
    assert first == [("broken", "threw"), ("https", "rewrote"), ("tag", "rewrote"), ("deny-rm", "none")]
    assert second == [("broken", "threw"), ("https", "none"), ("tag", "rewrote"), ("deny-rm", "refused")]
    rewrite = next(d for d in decisions if d["hook"] == "https" and d["effect"] == "rewrote")
    assert rewrite["changes"] == {"arguments.url": {"before": "http://example.org", "after": "https://example.org"}}
    assert all(d["duration_ms"] >= 0 for d in decisions)
    assert "broken hook" in next(d for d in decisions if d["effect"] == "threw")["error"]
    tool_results = [m for m in result.messages if m.role == "tool"]
    assert tool_results[0].meta == MessageMeta(arguments={"url": "https://example.org", "text": "hi [tagged]"})
    assert tool_results[1].meta == MessageMeta(refused_by="deny-rm")


def test_replay_with_the_same_chain_finds_no_difference(rig):
    rienda, result = record_session(rig, hooks=("https",))
    report = replay_session(rienda, result.session_id)
    assert not report.changed
    assert report.lines()[-1] == "no differences"


def test_replay_detects_a_changed_hook_decision(rig):
    rienda, result = record_session(rig)  # recorded with no hooks
    report = replay_session(rienda, result.session_id, hooks=["deny-rm", "https", "upper", "redact"])
    assert report.changed
    first, second = report.calls
    assert first.differences == [
        "arguments now different: url: 'http://example.org' -> 'https://example.org'",
        "result now different: 'got {\"url\":\"http://example.org\",\"text\":\"hi\"}' -> "
        "'GOT {\"URL\":\"HTTP://EXAMPLE.ORG\",\"TEXT\":\"HI\"}'",
    ]
    assert second.differences == ["now refused by hook deny-rm: no rm -rf"]
    assert report.texts == [("Card 4111111111111111 done.", "Card [card] done.")]


def test_replay_can_run_the_tools_again(rig):
    rienda, result = record_session(rig)
    report = replay_session(rienda, result.session_id, hooks=["https"], run_tools=True)
    assert report.calls[0].now_result.text == 'got {"url":"https://example.org","text":"hi"}'
    assert "result now different" in report.calls[0].differences[1]


def test_a_call_no_longer_refused_is_reported(rig):
    rienda, result = record_session(rig, hooks=("deny-rm",))
    report = replay_session(rienda, result.session_id, hooks=[])
    assert report.calls[1].differences == ["no longer refused (was refused by hook deny-rm)"]


def test_a_session_becomes_a_scripted_model_that_reproduces_the_run(rig):
    rienda, result = record_session(rig, hooks=("tag",))
    (rig.workdir / "from-session.yaml").write_text(session_script(rienda, result.session_id))
    (rig.home / "agents" / "again.md").write_text("---\nmodel: scripted/from-session.yaml\ntools: [echo]\nhooks: [tag]\n---\n")
    again = rienda.conversation("again").run("go", NonInteractiveUI())
    strip = lambda messages: [(m.role, m.text, m.tool_calls, m.is_error) for m in messages if m.role != "user"]  # noqa: E731
    assert strip(again.messages) == strip(result.messages)


def test_rienda_replay_command_exit_codes(rig):
    record_session(rig)
    env = {**os.environ, "RIENDA_HOME": str(rig.home)}

    def replay(*args):
        return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "replay", "last", *args], cwd=rig.workdir,
                              env=env, capture_output=True, text=True, timeout=60)

    same = replay()
    assert same.returncode == 0 and same.stdout.strip().endswith("no differences")
    changed = replay("--hooks", "deny-rm")
    assert changed.returncode == 1 and "now refused by hook deny-rm: no rm -rf" in changed.stdout
    as_json = json.loads(replay("--hooks", "deny-rm", "--json").stdout)
    assert as_json["changed"] is True and as_json["calls"][1]["differences"] == ["now refused by hook deny-rm: no rm -rf"]
