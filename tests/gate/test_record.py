"""Gate decisions recorded like a Rienda run: one session per session of the other agent,
read by ``rienda show``, replayed through changed hooks by ``rienda replay`` (exit 1 on a
changed decision) and ``pytest --rienda-replay``, a recorded call taken by ``rienda hook``;
two gate processes of one session at once never corrupt it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rienda_kernel.engine.gate.decision import Decision
from rienda_kernel.engine.gate.protocols import Verdict, read_event
from rienda_kernel.engine.gate.record import gate_session, record_decision
from rienda_kernel.engine.sessions.store import SessionStore
from tests.gate.conftest import POLICY, answer, gate, gate_home, gate_session_file, gate_session_id, sample
from tests.helpers import cli
from tests.helpers.homes import write_extension

CLAUDE = sample("claude-code")
# The after-hook removed a secret from toolu_2's result, and what a hook removes is never written.
WITHHELD = ("note: the result of shell [toolu_2] was replayed from the saved text, not what afterToolExecute saw "
            "(its hooks removed part of it when it was recorded, and what a hook removes is never written): ")
SESSION = f"claude-code-{CLAUDE['session_id']}"  # its name: rienda show, replay and hook take it for its id


def claude(home, command, call_id, **changes):
    return answer(gate(home, "claude-code", sample("claude-code", command=command, tool_use_id=call_id, **changes)))


@pytest.fixture(scope="module")
def recorded_once(tmp_path_factory):
    """A Claude Code session's three gated calls: refused, rewritten, let through; and
    what the rewritten one returned (PostToolUse): recorded once for the module."""
    home = gate_home(tmp_path_factory.mktemp("recorded") / "home")
    claude(home, "rm -rf build", "toolu_1")
    claude(home, "echo HELLO > proof.txt", "toolu_2")
    claude(home, "pwd", "toolu_3")
    after = sample("claude-code", hook_event_name="PostToolUse", tool_use_id="toolu_2",
                   tool_input={"command": "echo BYE > proof.txt", "description": "write proof file"},
                   tool_response={"stdout": "wrote SECRET42", "stderr": ""})
    answer(gate(home, "claude-code", after))
    return home


@pytest.fixture
def recorded(recorded_once, tmp_path):
    """A copy of :func:`recorded_once`'s home for one test, which may change it. Sharing
    cannot hide a bug: the four gate processes record the same decisions each time (the
    policy is the same, the events are the samples'), the files hold no path of the home,
    and every test acts on a copy of its own."""
    return Path(shutil.copytree(recorded_once, tmp_path / "home"))


def test_rienda_show_reads_the_gated_calls(recorded):
    done = cli.rienda(recorded, None, "show", SESSION)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    session_id = gate_session_id(recorded, "claude-code", CLAUDE["session_id"])
    assert lines[0].startswith(f"session {session_id}  agent gate  model gate/claude-code")
    assert '  → shell [toolu_1] {"command": "rm -rf build"}' in lines
    assert "    ✋ hook policy refused the call: no rm -rf here (claude-code)" in lines
    assert "  ✗ shell [toolu_1]: no rm -rf here (claude-code)" in lines
    assert ("""    ✎ hook policy rewrote the call's arguments: command "echo HELLO > proof.txt" → """
            '"echo BYE > proof.txt"') in lines
    assert "    ✎ hook policy rewrote the result: text 14 → 16 characters" in lines
    assert "  ← shell [toolu_2]: wrote [withheld]" in lines
    assert '  → shell [toolu_3] {"command": "pwd"}' in lines
    assert ("  ← shell [toolu_3]: (no hook objected; the agent decides as it would without the gate, and its "
            "result is not seen)") in lines  # the gate's answer was {}: not "allowed"
    assert not any(line.startswith("usage:") for line in lines)  # no model turn: no usage line


def test_replay_through_the_same_hooks_finds_no_difference(recorded):
    done = cli.rienda(recorded, None, "replay", SESSION)
    assert (done.returncode, done.stdout.splitlines()[1:]) == (0, [
        "= shell [toolu_1]: same as recorded", "= shell [toolu_2]: same as recorded",
        "= shell [toolu_3]: same as recorded", WITHHELD + "the hooks leave it as saved", "no differences"]), done.stderr


def test_replay_through_a_changed_hook_reports_each_changed_decision(recorded):
    changed = (POLICY.replace("\\brm\\s+-rf\\b", "\\brm\\s+-r\\b")  # rm -rf no longer refused
               .replace('"BYE"', '"BYE!"').replace("/^ls", "/^pwd").replace("allow: true", "allow: false"))
    assert changed.count("BYE!") == 1 and "-r\\b" in changed
    write_extension(recorded, "hooks", "policy", changed)
    done = cli.rienda(recorded, None, "replay", SESSION)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[1:] == [
        "≠ shell [toolu_1]", "    no longer refused (was refused by hook policy)",
        "≠ shell [toolu_2]", "    arguments now different: command: 'echo BYE > proof.txt' -> 'echo BYE! > proof.txt'",
        "≠ shell [toolu_3]", "    now refused by hook policy: refused by hook policy",
        WITHHELD + "the hooks leave it as saved", "differences found"]


def _pytest_replay(home, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "RIENDA_HOME"}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--rienda-replay",
                           str(home / "sessions"), "--rienda-home", str(home)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_pytest_rienda_replay_turns_the_recorded_calls_into_a_test(recorded, tmp_path):
    passed = _pytest_replay(recorded, tmp_path)
    assert passed.returncode == 0 and "1 passed" in passed.stdout, passed.stdout
    write_extension(recorded, "hooks", "policy", POLICY.replace("no rm -rf here", "fine").replace("allow: false", "arguments: call.arguments"))
    failed = _pytest_replay(recorded, tmp_path)
    assert failed.returncode == 1 and "1 failed" in failed.stdout, failed.stdout
    assert "no longer refused (was refused by hook policy)" in failed.stdout


def test_rienda_hook_takes_a_recorded_call_as_its_payload(recorded):
    lines = gate_session_file(recorded, "claude-code", CLAUDE["session_id"]).read_text().splitlines()
    [call] = [json.loads(line)["tool_calls"][0] for line in lines if '"toolu_1"' in line and '"tool_calls"' in line]
    done = cli.rienda(recorded, None, "hook", "policy", "beforeToolExecute", json.dumps(call),
                      "--agent", "gate", "--session-id", SESSION, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["effect"], result["reason"]) == ("refused", "no rm -rf here (claude-code)")  # ctx.session.gate as recorded


def test_each_agent_session_is_a_session_of_its_own(home):
    for agent in ("codex", "gemini-cli", "copilot-cli", "claude-code"):
        answer(gate(home, agent, sample(agent)))
    ids = [path.stem for path in sorted((home / "sessions").glob("*.jsonl"))]
    assert ids == [gate_session_id(home, agent, sample(agent)["session_id"]) for agent in
                   ("codex", "gemini-cli", "copilot-cli", "claude-code")]  # sorted as made
    for session_id in ids:
        done = cli.rienda(home, None, "replay", session_id)
        assert done.returncode == 0 and done.stdout.splitlines()[-1] == "no differences", done.stdout


def test_gate_processes_of_one_session_at_once_take_turns(home):
    env = {k: v for k, v in os.environ.items() if k != "RIENDA_HOME"}
    command = [sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), "gate", "claude-code"]
    started = [subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
               for _ in range(6)]
    for number, process in enumerate(started):
        process.stdin.write(json.dumps(sample("claude-code", command=f"rm -rf {number}",
                                              tool_use_id=f"toolu_{number}")).encode())
        process.stdin.close()
    for process in started:
        process.wait(timeout=120)
        out, err = process.stdout.read(), process.stderr.read()
        assert process.returncode == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny", err
        assert b"not recorded" not in err
    loaded = SessionStore(home).load(gate_session_id(home, "claude-code", CLAUDE["session_id"]))
    assert loaded.warnings == []
    calls = [call.id for message in loaded.messages for call in message.tool_calls]
    assert sorted(calls) == [f"toolu_{n}" for n in range(6)]
    assert len([m for m in loaded.messages if m.role == "tool"]) == 6


def test_a_session_held_by_a_run_is_waited_for_then_the_decision_stands_unrecorded(recorded):
    with SessionStore(recorded).resume(gate_session_id(recorded, "claude-code", CLAUDE["session_id"])):  # held
        done = gate(recorded, "claude-code", sample("claude-code", command="rm -rf /", tool_use_id="toolu_9"))
    assert answer(done)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "rienda gate: warning: the decision was not recorded: session" in done.stderr.decode()
    assert "toolu_9" not in gate_session_file(recorded, "claude-code", CLAUDE["session_id"]).read_text()


def test_replay_runs_no_after_hook_on_a_result_the_gate_never_saw(home):
    write_extension(home, "hooks", "annotate", 'module.exports = { afterToolExecute(ctx, c, r) { return { text: r.text + " [seen]" }; } };')
    (home / "agents" / "gate.md").write_text((home / "agents" / "gate.md").read_text().replace("['policy']", "['policy', 'annotate']"))
    claude(home, "pwd", "toolu_1")
    done = cli.rienda(home, None, "replay", SESSION)
    assert done.stdout.splitlines()[1:] == ["= shell [toolu_1]: same as recorded", "no differences"], done.stdout


def test_decisions_that_make_one_new_session_at_once_all_land_in_it(tmp_path):
    """The narrow race of making a session: one writer has created the file, another finds
    it before its header is written. The gate's own turn lock keeps them apart."""
    store = SessionStore(tmp_path / "home")
    failures = []
    for round_ in range(15):
        barrier = threading.Barrier(4)

        def one(number: int) -> None:
            event = read_event("codex", json.dumps(sample("codex", tool_use_id=f"call_{number}",
                                                          session_id=f"round{round_}")).encode())
            barrier.wait(timeout=30)
            try:
                session_id, _ = gate_session(store, event, "gate", 30)
                record_decision(store, Decision(event, "gate", Verdict("deny", "no"), event.arguments, "gate"),
                                session_id)
            except Exception as exc:  # noqa: BLE001 - collected, asserted below
                failures.append(exc)

        threads = [threading.Thread(target=one, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        loaded = store.load(gate_session_id(store.home, "codex", f"round{round_}"))
        assert loaded.warnings == [] and len([m for m in loaded.messages if m.tool_calls]) == 4
    assert failures == []
