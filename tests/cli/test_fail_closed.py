"""A guard that fails closed, through the ``rienda`` command as a real process: the agent
file's ``fail_closed: [guard]``, a guard that throws (its policy file is missing), the
scripted model asking for ``rm -rf victim``; ``rienda run`` refuses the call and the files
stay, ``rienda show`` and ``--json`` show the decision, ``rienda replay`` replays it as
recorded and reports a change of the opt-in as a changed decision. Without the opt-in the
guard is skipped (H19) and the command runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..helpers.cli import rienda
from ..helpers.trees import lead_and_cleaner, shell, write_agent, write_hook, write_script

# A guard reading its deny list from the workspace; without policy.json it throws.
POLICY_GUARD = """module.exports = {
  beforeToolExecute(ctx, call) {
    const policy = JSON.parse(ctx.file.read("policy.json"));
    if (call.name === "shell" && policy.deny.some((word) => call.arguments.command.includes(word))) {
      return { allow: false, reason: "denied by policy.json" };
    }
  },
};"""
FAILED = "hook guard failed and fails closed, so the call is refused: FileNotFoundError: no such file: policy.json"


def failed_in(work: Path) -> str:
    """FAILED as JSON has it: the path whole, as it resolved (no reader to shorten it)."""
    return FAILED.removesuffix("policy.json") + str(work / "policy.json")


@pytest.fixture
def dirs(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    write_hook(home, "guard", POLICY_GUARD)
    write_script(work, "careful", [shell("rm -rf victim"), {"text": "done"}])
    (work / "victim").mkdir()
    (work / "victim" / "keep.txt").write_text("precious", encoding="utf-8")
    return home, work


def careful(home, *, fail_closed):
    """The agent ``careful`` (the shell, the guard), its guard fail-closed or not."""
    path = write_agent(home, "careful", tools=("shell",), hooks=("guard",))
    if fail_closed:
        path.write_text(path.read_text().replace("hooks: [\"guard\"]\n", "hooks: [\"guard\"]\nfail_closed: [guard]\n"))
        assert "fail_closed: [guard]" in path.read_text()
    return path


def only_session(home):
    [path] = (home / "sessions").glob("*.jsonl")
    return path.stem


def test_H19_fail_closed_the_throwing_guard_refuses_the_call_and_the_files_stay(dirs):
    home, work = dirs
    careful(home, fail_closed=True)
    done = rienda(home, work, "run", "--agent", "careful", "Clean up.")
    assert done.returncode == 0, done.stderr
    assert (work / "victim" / "keep.txt").read_text() == "precious"
    lines = done.stderr.splitlines()
    call = lines.index('→ shell {"command": "rm -rf victim"}')
    assert lines[call + 1].startswith(f"  ✋ hook guard refused the call: {FAILED}")
    [refused] = [line for line in lines if line.startswith("✗ shell: ")]
    assert refused.startswith(f"✗ shell: {FAILED}"), refused
    assert "Traceback" not in done.stderr
    shown = rienda(home, work, "show", only_session(home))
    assert shown.returncode == 0, shown.stderr
    [line] = [line for line in shown.stdout.splitlines() if line.startswith("    ✋ hook guard")]
    assert line.startswith(f"    ✋ hook guard refused the call: {FAILED}")
    assert line.endswith(f"(at {home / 'hooks' / 'guard' / 'index.js'}:3:40)")  # the hook's file and line


def test_H19_fail_closed_run_json_carries_the_decision_with_its_error(dirs):
    home, work = dirs
    careful(home, fail_closed=True)
    done = rienda(home, work, "run", "--agent", "careful", "--json", "Clean up.")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [decision] = [e for e in events if e["type"] == "hook_decision"]
    assert (decision["hook"], decision["effect"], decision["failed_closed"]) == ("guard", "refused", True)
    assert decision["error"].startswith(f"FileNotFoundError: no such file: {work / 'policy.json'}")
    assert decision["reason"].startswith(failed_in(work)) and decision["call_id"] == "call_1_1"
    [started] = [e for e in events if e["type"] == "tool_call"]
    assert started["refused_by"] == "guard"
    assert (work / "victim" / "keep.txt").exists()


def test_replay_keeps_a_fail_closed_refusal_and_reports_the_opt_in_taken_away(dirs):
    home, work = dirs
    agent = careful(home, fail_closed=True)
    assert rienda(home, work, "run", "--agent", "careful", "Clean up.").returncode == 0
    session = only_session(home)
    same = rienda(home, work, "replay", session)
    assert (same.returncode, same.stdout.splitlines()[1:]) == (0, ["= shell [call_1_1]: same as recorded",
                                                                   "no differences"]), same.stdout + same.stderr
    agent.write_text(agent.read_text().replace("fail_closed: [guard]\n", ""))
    now = rienda(home, work, "replay", session)
    assert now.returncode == 1, now.stdout + now.stderr
    assert now.stdout.splitlines()[1] == "≠ shell [call_1_1]"
    assert now.stdout.splitlines()[2].startswith(
        "    no longer refused (was refused by hook guard, failing closed: FileNotFoundError: no such file: policy.json")
    report = json.loads(rienda(home, work, "replay", session, "--json").stdout)
    assert report["changed"] is True and report["calls"][0]["differences"][0].startswith("no longer refused")
    # the opt-in back, and the guard's policy written: it refuses by its own decision now
    careful(home, fail_closed=True)
    (work / "policy.json").write_text('{"deny": ["rm -rf"]}')
    decided = rienda(home, work, "replay", session)
    assert decided.returncode == 1
    assert decided.stdout.splitlines()[2].startswith(
        "    now refused by hook guard (was refused by hook guard, failing closed: FileNotFoundError")


def test_H19_without_the_opt_in_the_guard_is_skipped_and_replay_with_it_says_now_refused(dirs):
    home, work = dirs
    careful(home, fail_closed=False)
    done = rienda(home, work, "run", "--agent", "careful", "Clean up.")
    assert done.returncode == 0, done.stderr
    assert not (work / "victim").exists()  # the default stays H19: the throw was skipped, rm -rf ran
    assert "diagnostic: hook guard threw in beforeToolExecute and was skipped: FileNotFoundError" in done.stderr
    session = only_session(home)
    careful(home, fail_closed=True)
    now = rienda(home, work, "replay", session, "--json")
    assert now.returncode == 1, now.stdout + now.stderr
    [difference] = json.loads(now.stdout)["calls"][0]["differences"]
    assert difference.startswith(f"now refused by hook guard: {failed_in(work)}")


def test_fail_closed_naming_a_hook_the_agent_does_not_run_is_one_line_with_file_and_line(dirs):
    home, work = dirs
    path = careful(home, fail_closed=False)
    path.write_text(path.read_text().replace("hooks: [\"guard\"]\n", "hooks: [\"guard\"]\nfail_closed: [gaurd]\n"))
    done = rienda(home, work, "run", "--agent", "careful", "Clean up.")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        f"rienda: {path}:6: fail_closed lists 'gaurd', which hooks does not (did you mean 'guard'? "
        "fail_closed marks hooks the agent runs: guard)")
    assert (work / "victim" / "keep.txt").exists()


def test_a_leads_fail_closed_guard_refuses_its_sub_agents_call_when_it_breaks(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    victim = lead_and_cleaner(home, work)
    # the lead's guard lets the delegation through; it reads policy.json (missing) for a shell command
    write_hook(home, "guard", POLICY_GUARD.replace("const policy", 'if (call.name === "agent") return;\n    const policy'))
    lead = home / "agents" / "lead.md"
    lead.write_text(lead.read_text().replace("hooks: [\"guard\"]\n", "hooks: [\"guard\"]\nfail_closed: [guard]\n"))
    done = rienda(home, work, "run", "--agent", "lead", "Clean up.")
    assert done.returncode == 0, done.stderr
    assert (victim / "keep.txt").read_text() == "precious"
    lines = done.stderr.splitlines()
    call = lines.index('  → shell {"command": "rm -rf victim"}')
    assert lines[call + 1].startswith(f"    ✋ hook guard refused the call: {FAILED}")
    assert f"  ✗ shell: {FAILED}" in done.stderr
    assert "└ sub-agent ended: end_turn" in done.stderr
    # replayed, the lead's opt-in covers the child's session too; taken away, the child's call is a change
    [top] = [p.stem for p in (home / "sessions").glob("*.jsonl") if "parent_session_id" not in p.read_text()]
    same = rienda(home, work, "replay", top)
    assert same.returncode == 0, same.stdout + same.stderr
    lead.write_text(lead.read_text().replace("fail_closed: [guard]\n", ""))
    now = rienda(home, work, "replay", top)
    assert now.returncode == 1, now.stdout + now.stderr
    assert now.stdout.splitlines()[1:5:3] == ["≠ agent [call_1_1]: its sub-agent's replay differs",
                                              "        no longer refused (was refused by hook guard, failing closed: "
                                              "FileNotFoundError: no such file: policy.json (at "
                                              f"{home / 'hooks' / 'guard' / 'index.js'}:4:40))"]


def test_fail_closed_on_a_hook_without_before_tool_execute_is_a_diagnostic(dirs):
    home, work = dirs
    write_hook(home, "audit", "module.exports = { afterRun(ctx) {} };")
    path = write_agent(home, "careful", tools=("shell",), hooks=("audit",))
    path.write_text(path.read_text().replace("hooks: [\"audit\"]\n", "hooks: [\"audit\"]\nfail_closed: [audit]\n"))
    done = rienda(home, work, "run", "--agent", "careful", "Clean up.")
    assert done.returncode == 0, done.stderr
    assert (f"diagnostic: {path}: fail_closed lists 'audit', which has no beforeToolExecute; only there does a "
            "failing hook refuse the call, so this changes nothing") in done.stderr.splitlines()


def test_rienda_hook_with_the_agent_shows_the_guard_failing_closed(dirs):
    home, work = dirs
    careful(home, fail_closed=True)
    payload = json.dumps({"name": "shell", "arguments": {"command": "rm -rf victim"}})
    done = rienda(home, work, "hook", "guard", "beforeToolExecute", payload, "--agent", "careful")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[1] == "  threw, and the agent declares it fail_closed: a run refuses the call"
    as_json = json.loads(rienda(home, work, "hook", "guard", "beforeToolExecute", payload, "--agent", "careful",
                                "--json").stdout)
    assert (as_json["ok"], as_json["effect"], as_json["failed_closed"]) == (False, "refused", True)
    assert as_json["outcome"]["reason"].startswith(failed_in(work))
    plain = rienda(home, work, "hook", "guard", "beforeToolExecute", payload)  # the default agent: H19
    assert plain.stdout.splitlines()[1] == "  threw: a run reports it and goes on as if the hook returned nothing"
