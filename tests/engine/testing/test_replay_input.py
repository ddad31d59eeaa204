"""Replay feeds each rewriting point what it was given when the session was recorded (the
model's own answer, the tool's own result), never its own output: an untouched session
through unchanged hooks replays identical, with and without ``--run-tools``, at every point
(issue 25: a hook appending " [audited]" made replay report ``'raw [audited]' -> 'raw
[audited] [audited]'`` and exit 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from rienda_kernel.engine.sessions.seen import MIN_PIECE, pieces, recover, saw

RAW = """module.exports = { description: "Says raw.", parameters: { type: "object" },
  execute: () => "raw" };"""
AUDIT_RESULT = 'module.exports = { afterToolExecute: (ctx, c, r) => ({ text: r.text + " [audited]" }) };'
AUDIT_ANSWER = 'module.exports = { afterModelResponse: (ctx, r) => ({ text: r.text + " [audited]" }) };'
WRAP = 'module.exports = { afterToolExecute: (ctx, c, r) => ({ text: "<<" + r.text + ">>", isError: !r.isError }) };'
REDACT = ('module.exports = { afterModelResponse: (ctx, r) => ({ text: r.text.replace(/\\b\\d{16}\\b/g, "[card]") }),'
          ' afterToolExecute: (ctx, c, r) => ({ text: r.text.replace("raw", "r**") }) };')
SCRIPT = [{"text": "Calling.", "tool_calls": [{"id": "call_raw", "name": "raw", "arguments": {}}]},
          {"text": "Card 4111111111111111 seen, raw said."}]


def record(rig, hooks: list[str]) -> str:
    """A session recorded by `rienda run` with ``hooks``; its id."""
    rig.write_tool("raw", RAW)
    for name, source in (("audit-result", AUDIT_RESULT), ("audit-answer", AUDIT_ANSWER), ("wrap", WRAP),
                         ("redact", REDACT)):
        rig.write_hook(name, source)
    agent = rig.home / "agents" / "auditor.md"
    agent.parent.mkdir(parents=True, exist_ok=True)
    agent.write_text(f"---\nmodel: scripted/script.yaml\ntools: [raw]\nhooks: {hooks}\n---\nAudit.\n")
    (rig.workdir / "script.yaml").write_text(yaml.safe_dump(SCRIPT, sort_keys=False))
    done = cli(rig, "run", "--agent", "auditor", "go")
    assert done.returncode == 0, done.stderr
    (session,) = (rig.home / "sessions").glob("*.jsonl")
    return session.stem


def cli(rig, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RIENDA_HOME": str(rig.home)}
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", *args], cwd=rig.workdir, env=env,
                          capture_output=True, text=True, timeout=120)


def saved_lines(rig, session_id: str) -> list[dict]:
    return [json.loads(line) for line in (rig.home / "sessions" / f"{session_id}.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("run_tools", [False, True])
def test_hooks_that_append_replay_identical_with_and_without_running_tools(rig, run_tools):
    session_id = record(rig, ["audit-result", "audit-answer"])
    messages = [line for line in saved_lines(rig, session_id) if line["type"] == "message"]
    assert [m["text"] for m in messages[1:]] == ["Calling. [audited]", "raw [audited]",
                                                 "Card 4111111111111111 seen, raw said. [audited]"]
    assert messages[2]["meta"] == {"saw": {"text": {"of": 13, "pieces": [[0, 3]]}}}
    done = cli(rig, "replay", "last", *(["--run-tools"] if run_tools else []))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("no differences") and "note:" not in done.stdout
    assert "= raw [call_raw]: same as recorded" in done.stdout


def test_a_hook_changed_since_is_still_a_difference(rig):
    session_id = record(rig, ["audit-result", "audit-answer"])
    rig.write_hook("audit-result", AUDIT_RESULT.replace("[audited]", "[checked]"))
    done = cli(rig, "replay", session_id)
    assert done.returncode == 1
    assert "result now different: 'raw [audited]' -> 'raw [checked]'" in done.stdout


def test_a_flag_and_a_wrapped_text_are_given_back_as_they_came(rig):
    session_id = record(rig, ["wrap"])
    result = [line for line in saved_lines(rig, session_id) if line.get("role") == "tool"][0]
    assert (result["text"], result["isError"]) == ("<<raw>>", True)
    assert result["meta"]["saw"] == {"text": {"of": 7, "pieces": [[2, 5]]}, "isError": False}
    done = cli(rig, "replay", session_id)
    assert done.returncode == 0 and done.stdout.strip().endswith("no differences"), done.stdout


def test_what_a_hook_removed_is_never_written_and_replay_says_it_cannot_check_it(rig):
    session_id = record(rig, ["redact"])
    text = (rig.home / "sessions" / f"{session_id}.jsonl").read_text()
    assert "4111111111111111" not in text and '"text": "raw' not in text  # what the hooks removed, nowhere in the file
    messages = [line for line in saved_lines(rig, session_id) if line["type"] == "message"]
    assert messages[3]["meta"]["saw"] == {"text": None}
    done = cli(rig, "replay", session_id)
    assert done.returncode == 0, done.stdout
    assert ("note: the assistant text of message 4 was replayed from the saved text, not what afterModelResponse saw "
            "(its hooks removed part of it when it was recorded, and what a hook removes is never written): the "
            "hooks leave it as saved") in done.stdout
    as_json = json.loads(cli(rig, "replay", session_id, "--json").stdout)  # the same notes, for programs
    shown = [line.removeprefix("note: ") for line in done.stdout.splitlines() if line.startswith("note: ")]
    assert as_json["changed"] is False and as_json["notes"] == shown and len(shown) >= 1


def test_a_session_recorded_before_the_input_was_kept_replays_with_a_note(rig):
    session_id = record(rig, ["audit-result", "audit-answer"])
    path = rig.home / "sessions" / f"{session_id}.jsonl"
    lines = saved_lines(rig, session_id)
    for line in lines:
        (line.get("meta") or {}).pop("saw", None)  # as an older Rienda wrote it
    path.write_text("".join(json.dumps({k: v for k, v in line.items() if v != {} or k != "meta"}) + "\n"
                            for line in lines))
    done = cli(rig, "replay", session_id)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("note: the result of raw [call_raw] was replayed from the saved text, not what afterToolExecute saw (the "
            "session was recorded by a Rienda that did not keep it): the hooks now change that text, which is not "
            "counted as a difference") in done.stdout
    assert done.stdout.count("note: the assistant text") == 2
    # ...and a session recorded with no hook at those points replays exactly, as before.


def test_pieces_keep_only_text_the_saved_one_holds():
    assert pieces("raw", "raw [audited]") == [[0, 3]]
    assert pieces("body of the answer", ">> body of the answer") == [[3, 21]]
    given, made = "first line here\nsecond line here", "first line here\n[note]\nsecond line here"
    found = pieces(given, made)
    assert len(found) == 2 and recover({"of": len(made), "pieces": found}, made) == given
    assert pieces("Card 4111111111111111 done.", "Card [card] done.") is None
    assert pieces("abcdefghijklmnop", "a-b-c-d-e-f-g-h-i-j-k-l-m-n-o-p") is None  # one letter at a time: no
    assert pieces("", "anything") == []
    assert MIN_PIECE == 8
    entry = {"of": 13, "pieces": [[0, 3]]}
    assert recover(entry, "raw [audited]") == "raw" and recover(entry, "raw [redacted]") is None
    assert recover(None, "x") is None and recover({"of": 1, "pieces": [[0, 9]]}, "x") is None


def test_saw_is_kept_only_where_a_hook_handles_the_point():
    class Hook:
        points = frozenset({"afterToolExecute"})

    assert saw([], "afterToolExecute", {"text": ("a", "b")}) is None
    assert saw([Hook()], "afterModelResponse", {"text": ("a", "b")}) is None
    assert saw([Hook()], "afterToolExecute", {"text": ("same", "same"), "isError": (False, False)}) == {}
    assert saw([Hook()], "afterToolExecute", {"isError": (False, True)}) == {"isError": False}


GUARD = """module.exports = { beforeToolExecute(ctx, call) {
  if (!ctx.confirm({ title: "Run raw?", body: "the raw tool" })) return { allow: false, reason: "declined" }; } };"""


@pytest.mark.parametrize(("policy", "refused"), [("allow", False), ("deny", True)])
def test_a_confirm_is_answered_in_replay_as_it_was_when_recorded(rig, policy, refused):
    """A guard asking ctx.confirm: the recording's answer (here the --confirm policy's) is
    saved, and a replay answers the same request the same way instead of no."""
    rig.write_hook("guard", GUARD)
    rig.write_tool("raw", RAW)
    agent = rig.home / "agents" / "guarded.md"
    agent.parent.mkdir(parents=True, exist_ok=True)
    agent.write_text("---\nmodel: scripted/script.yaml\ntools: [raw]\nhooks: [guard]\n---\nGuarded.\n")
    (rig.workdir / "script.yaml").write_text(yaml.safe_dump(SCRIPT, sort_keys=False))
    done = cli(rig, "run", "--agent", "guarded", "--confirm", policy, "go")
    assert done.returncode == 0, done.stderr
    (session,) = (rig.home / "sessions").glob("*.jsonl")
    [confirm] = [line for line in saved_lines(rig, session.stem) if line["type"] == "confirm"]
    assert (confirm["title"], confirm["answer"]) == ("Run raw?", not refused)
    replayed = cli(rig, "replay", "last")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert replayed.stdout.strip().endswith("no differences") and "note:" not in replayed.stdout


def test_a_confirm_the_recording_never_answered_goes_to_the_replays_policy_with_a_note(rig):
    session_id = record(rig, [])  # no guard when recorded
    rig.write_hook("guard", GUARD)
    done = cli(rig, "replay", session_id, "--hooks", "guard")
    assert done.returncode == 1  # now refused: with nobody to ask, the answer is no
    assert "now refused by hook guard: declined" in done.stdout
    assert ("note: ctx.confirm('Run raw?') was asked, which the recording holds no answer for; it was put to this "
            "replay's own confirm policy") in done.stdout
