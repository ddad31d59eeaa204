"""The decision ledger, replay of a recorded session through another hook chain, and a
session turned into a scripted model (issue: see and test what hooks decide)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

from rienda_kernel.engine import NonInteractiveUI
from rienda_kernel.engine.testing.replay import replay_session, session_script
from rienda_kernel.engine.runtime import Rienda

ECHO = """module.exports = { description: "Echoes.", parameters: { type: "object",
  properties: { url: { type: "string" }, text: { type: "string" } } },
  execute: (ctx, a) => "got " + JSON.stringify(a) };"""

SCRIPT = [
    {"text": "Working.", "tool_calls": [
        {"name": "echo", "arguments": {"url": "http://example.org", "text": "hi"}},
        {"name": "echo", "arguments": {"text": "rm -rf /"}}]},
    {"text": "Card 4111111111111111 done."},
]


def setup(rig, hooks=()):
    rig.write_tool("echo", ECHO)
    rig.write_hook("https", """module.exports = { beforeToolExecute(ctx, call) {
      if (!call.arguments.url) return;
      return { arguments: { ...call.arguments, url: call.arguments.url.replace("http://", "https://") } }; } };""")
    rig.write_hook("tag", """module.exports = { beforeToolExecute(ctx, call) {
      return { arguments: { ...call.arguments, text: (call.arguments.text || "") + " [tagged]" } }; } };""")
    rig.write_hook("deny-rm", """module.exports = { beforeToolExecute(ctx, call) {
      if (/rm -rf/.test(call.arguments.text || "")) return { allow: false, reason: "no rm -rf" }; } };""")
    rig.write_hook("upper", 'module.exports = { afterToolExecute: (ctx, c, r) => ({ text: r.text.toUpperCase() }) };')
    rig.write_hook("redact", 'module.exports = { afterModelResponse: (ctx, r) => ({ text: r.text.replace(/\\b\\d{16}\\b/g, "[card]") }) };')
    rig.write_hook("broken", 'module.exports = { beforeToolExecute() { throw new Error("broken hook"); } };')
    agent = rig.home / "agents" / "worker.md"
    agent.parent.mkdir(parents=True, exist_ok=True)
    agent.write_text(f"---\nmodel: scripted/script.yaml\ntools: [echo]\nhooks: {list(hooks)}\n---\nWork.\n")
    (rig.workdir / "script.yaml").write_text(yaml.safe_dump(SCRIPT, sort_keys=False))
    rienda = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    result = rienda.conversation("worker").run("go", NonInteractiveUI())
    assert result.reason == "end_turn", result.error
    return rienda, result


def records(rig, session_id, kind):
    lines = (rig.home / "sessions" / f"{session_id}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if json.loads(line)["type"] == kind]


def test_the_ledger_saves_refusals_chained_rewrites_and_throws(rig):
    _, result = setup(rig, hooks=("broken", "https", "tag", "deny-rm"))
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
    assert tool_results[0].meta == {"arguments": {"url": "https://example.org", "text": "hi [tagged]"}}
    assert tool_results[1].meta == {"refused_by": "deny-rm"}


def test_replay_with_the_same_chain_finds_no_difference(rig):
    rienda, result = setup(rig, hooks=("https",))
    report = replay_session(rienda, result.session_id)
    assert not report.changed
    assert report.lines()[-1] == "no differences"


def test_replay_detects_a_changed_hook_decision(rig):
    rienda, result = setup(rig)  # recorded with no hooks
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
    rienda, result = setup(rig)
    report = replay_session(rienda, result.session_id, hooks=["https"], run_tools=True)
    assert report.calls[0].now_result.text == 'got {"url":"https://example.org","text":"hi"}'
    assert "result now different" in report.calls[0].differences[1]


def test_a_call_no_longer_refused_is_reported(rig):
    rienda, result = setup(rig, hooks=("deny-rm",))
    report = replay_session(rienda, result.session_id, hooks=[])
    assert report.calls[1].differences == ["no longer refused (was refused by hook deny-rm)"]


def test_a_session_becomes_a_scripted_model_that_reproduces_the_run(rig):
    rienda, result = setup(rig, hooks=("tag",))
    (rig.workdir / "from-session.yaml").write_text(session_script(rienda, result.session_id))
    (rig.home / "agents" / "again.md").write_text("---\nmodel: scripted/from-session.yaml\ntools: [echo]\nhooks: [tag]\n---\n")
    again = rienda.conversation("again").run("go", NonInteractiveUI())
    strip = lambda messages: [(m.role, m.text, m.tool_calls, m.is_error) for m in messages if m.role != "user"]  # noqa: E731
    assert strip(again.messages) == strip(result.messages)


def test_rienda_replay_command_exit_codes(rig):
    setup(rig)
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
