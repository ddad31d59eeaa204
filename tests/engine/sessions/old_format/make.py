"""Makes ``home/`` (a Rienda home holding sessions in the format written before the typed
records, issue 39) and ``expected/`` (what that Rienda showed and replayed of them).

It was run once with the Rienda of commit df4cf80, the last before the change:

    git worktree add /tmp/old df4cf80
    PYTHONPATH=/tmp/old python tests/engine/sessions/old_format/make.py tests/engine/sessions/old_format

and its output committed; ``test_old_format.py`` checks that today's Rienda reads, shows,
replays and resumes those files the same. Every record kind is there: run_end (end_turn
and error), stopped, pin, approval, compaction (compacted, cancelled), hook_decision (none,
refused, rewrote, threw), confirm, an unknown record; messages with every meta key (vendor,
interrupted, error, withheld, saw, arguments, refused_by, run_ended, subagent, gate,
result_unseen, and one unknown); a sub-agent's session and a gate's session.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from rienda_kernel.engine import NonInteractiveUI
from rienda_kernel.engine.runtime.rienda import Rienda
from rienda_kernel.engine.sessions.compaction.view import request_messages

HOOKS = {
    "https": """module.exports = { beforeToolExecute(ctx, call) {
      if (!call.arguments.url) return;
      return { arguments: { ...call.arguments, url: call.arguments.url.replace("http://", "https://") } }; } };""",
    "deny-rm": """module.exports = { beforeToolExecute(ctx, call) {
      if (/rm -rf/.test(call.arguments.text || "")) return { allow: false, reason: "no rm -rf" }; } };""",
    "upper": "module.exports = { afterToolExecute: (ctx, c, r) => ({ text: r.text.toUpperCase() }) };",
    "redact": 'module.exports = { afterModelResponse: (ctx, r) => ({ text: r.text.replace(/\\b\\d{16}\\b/g, "[card]") }) };',
    "asker": """module.exports = { beforeToolExecute(ctx, call) {
      if (call.arguments.text === "ask") ctx.confirm({ title: "Echo?", body: call.arguments.text }); } };""",
    "thrower": 'module.exports = { afterRun() { throw new Error("thrower failed on purpose"); } };',
    "team-rules": """module.exports = {
      beforeCompact(ctx, c) {
        if (c.reason === "manual" && c.instructions === "") return { cancel: true, reason: "say what to keep" };
        return { instructions: c.instructions + " Keep ticket numbers." }; },
      afterCompact: (ctx, c) => ({ summary: c.summary + "\\n\\nTeam rules." }) };""",
}
ECHO = """module.exports = { description: "Echoes.", parameters: { type: "object",
  properties: { url: { type: "string" }, text: { type: "string" } } },
  execute: (ctx, a) => "got " + JSON.stringify(a) };"""
LEAD = [
    {"text": "Working.", "tool_calls": [
        {"name": "echo", "arguments": {"url": "http://example.org", "text": "hi"}},
        {"name": "echo", "arguments": {"text": "rm -rf /"}},
        {"name": "echo", "arguments": {"text": "ask"}}]},
    {"text": "Delegating.", "tool_calls": [{"name": "agent", "arguments": {"agent": "helper", "prompt": "Say hi."}}]},
    {"text": "Card 4111111111111111 done."},
    {"text": "Second run."},
]
# Lines an older Rienda wrote in runs that are hard to make on purpose (a stop during a
# wind-down, a person's "for this session", a killed run), appended as it wrote them.
APPENDED = [
    {"type": "approval", "title": "Echo?", "body": "always"},
    {"type": "message", "time": "2026-12-01T00:00:00.000Z", "role": "assistant", "text": "",
     "meta": {"interrupted": True, "withheld": "stopped during afterModelResponse; the text those hooks had not "
                                               "reviewed was not saved"}},
    {"type": "stopped", "point": "afterRun", "message": "afterRun was stopped by another interrupt: its hooks did "
                                                        "not finish"},
    {"type": "run_end", "reason": "interrupted", "error": None},
    {"type": "message", "time": "2026-12-01T00:00:01.000Z", "role": "user", "text": "third"},
    {"type": "message", "time": "2026-12-01T00:00:02.000Z", "role": "assistant", "text": "Half",
     "meta": {"error": True, "vendor": {"x": {"thinking": []}}, "later_key": 1}},
    {"type": "message", "time": "2026-12-01T00:00:03.000Z", "role": "assistant", "text": "",
     "tool_calls": [{"id": "killed_1", "name": "echo", "arguments": {"text": "x"}}]},
    {"type": "message", "time": "2026-12-01T00:00:04.000Z", "role": "tool", "text": "the run ended before this tool "
     "call finished; its result is unknown", "tool_call_id": "killed_1", "name": "echo", "isError": True,
     "meta": {"run_ended": True}},
    {"type": "note", "text": "a record of a newer Rienda"},
    {"type": "run_end", "reason": "error", "error": "scripted failure"},
]
GATE_EVENT = {"session_id": "old-1", "transcript_path": "/dev/null", "cwd": "/", "hook_event_name": "PreToolUse",
              "tool_name": "Bash", "tool_input": {"command": "rm -rf /tmp/x"}, "tool_use_id": "toolu_1"}


def make_home(root: Path) -> Path:
    home, work = root / "home", root / "work"
    for kind, name, source in [("tools", "echo", ECHO), *(("hooks", n, s) for n, s in HOOKS.items())]:
        (home / kind / name).mkdir(parents=True, exist_ok=True)
        (home / kind / name / "index.js").write_text(source)
    (home / "agents").mkdir(exist_ok=True)
    (home / "agents" / "lead.md").write_text(
        "---\ndescription: The lead.\nmodel: scripted/lead.yaml\ntools: [echo, agent]\nagents: [helper]\n"
        "hooks: [https, deny-rm, upper, redact, asker, thrower, team-rules]\noptions:\n  context_window: 4000\n"
        "---\nWork.\n")
    (home / "config.yaml").write_text("compaction:\n  keep_recent_tokens: 40\n")
    (home / "agents" / "helper.md").write_text(
        "---\ndescription: The helper.\nmodel: scripted/helper.yaml\ntools: []\nhooks: []\n---\nHelp.\n")
    (home / "agents" / "gate.md").write_text(
        "---\ndescription: The gate.\nmodel: scripted/lead.yaml\ntools: []\nhooks: [deny-bash-rm]\n---\nGate.\n")
    (home / "hooks" / "deny-bash-rm").mkdir()
    (home / "hooks" / "deny-bash-rm" / "index.js").write_text(
        'module.exports = { beforeToolExecute(ctx, call) { if (/rm -rf/.test(call.arguments.command || "")) '
        'return { allow: false, reason: "no rm -rf here" }; } };')
    work.mkdir(exist_ok=True)
    (work / "lead.yaml").write_text(yaml.safe_dump(LEAD, sort_keys=False))
    (work / "helper.yaml").write_text(yaml.safe_dump([{"text": "Hi from the helper."}], sort_keys=False))
    return home


def make_sessions(root: Path) -> str:
    home = make_home(root)
    rienda = Rienda(home=home, workdir=root / "work")
    conversation = rienda.conversation("lead")
    first = conversation.run("go", NonInteractiveUI(policy="allow"))
    assert first.reason == "end_turn", first.error
    conversation.pin(1)
    assert conversation.compact(NonInteractiveUI()).outcome == "cancelled"
    assert conversation.compact(NonInteractiveUI(), "keep the echoes").outcome == "compacted"
    assert conversation.run("again", NonInteractiveUI()).reason == "end_turn"
    path = home / "sessions" / f"{conversation.session_id}.jsonl"
    with path.open("a", encoding="utf-8") as file:
        file.writelines(json.dumps(line, ensure_ascii=False) + "\n" for line in APPENDED)
    env = {**os.environ, "RIENDA_HOME": str(home)}
    subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "gate", "claude-code", "--agent", "gate"],
                   input=json.dumps(GATE_EVENT), text=True, env=env, check=True, capture_output=True, cwd=root)
    return conversation.session_id or ""


def expected(root: Path, lead: str) -> dict[str, object]:
    """What this Rienda shows, replays and resumes of each session."""
    home = root / "home"
    env = {**os.environ, "RIENDA_HOME": str(home)}
    rienda = Rienda(home=home, workdir=root / "work")
    out: dict[str, object] = {}
    for session_id in sorted(path.stem for path in (home / "sessions").glob("*.jsonl")):
        role = "lead" if session_id == lead else "gate" if session_id.startswith("claude-code") else "helper"
        for command in (["show", session_id], ["show", session_id, "--full"], ["replay", session_id]):
            if command[0] == "replay" and role == "helper":
                continue  # a sub-agent's session is replayed through its lead's
            done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", *command], env=env, text=True,
                                  capture_output=True, cwd=root / "work")
            out[f"{role} {' '.join(command[:1] + command[2:])}"] = {
                "exit": done.returncode, "stdout": done.stdout.replace(str(root), "ROOT"),
                "stderr": done.stderr.replace(str(root), "ROOT")}
        if role != "helper":
            resumed = rienda.conversation(session_id=session_id)
            out[f"{role} request"] = [m.to_dict() for m in request_messages(resumed.messages, resumed.compaction.view)]
            out[f"{role} pins"] = sorted(resumed.compaction.pins)
            out[f"{role} approvals"] = sorted(map(list, resumed.approvals))
            out[f"{role} warnings"] = [w.replace(str(root), "ROOT") for w in resumed.warnings]
    return out


def main(target: Path) -> None:
    root = target / "tmp-make"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    lead = make_sessions(root)
    made = expected(root, lead)
    shutil.rmtree(target / "home", ignore_errors=True)
    shutil.copytree(root / "home", target / "home")
    shutil.copytree(root / "work", target / "home" / "work")  # the scripts, for a resumed run
    made_in = {"lead": lead, "made_in": str(root)}  # the folder the files name (a hook's file:line)
    (target / "expected.json").write_text(json.dumps({**made_in, **made}, indent=1, ensure_ascii=False) + "\n")
    shutil.rmtree(root)


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
