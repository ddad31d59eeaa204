"""``rienda replay`` of a lead that delegated, as a real process: the child's session is
replayed under the lead's ``agent`` call (indented in text; in ``--json`` each call names
the child's session and each child names the call), plain and with ``--run-tools``; a
changed child hook is reported there and fails the replay (exit 1)."""

from __future__ import annotations

import json

import pytest

from ..helpers.cli import rienda
from ..helpers.trees import delegate, lead_and_cleaner, write_hook, write_script


@pytest.fixture
def recorded(tmp_path):
    """A lead (no hooks of its own) that delegates twice to ``cleaner``, whose guard
    refused its rm -rf both times: (home, work, the lead's session, the children's sessions)."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    lead_and_cleaner(home, work, lead_hooks=(), child_hooks=("guard",))
    write_script(work, "lead", [delegate("cleaner", "Clean the workspace."), delegate("cleaner", "Try again."),
                                {"text": "The cleaner is done."}])
    done = rienda(home, work, "run", "--agent", "lead", "Clean up.")
    assert done.returncode == 0, done.stderr
    headers = [json.loads(p.read_text().splitlines()[0]) for p in (home / "sessions").glob("*.jsonl")]
    top = next(h["id"] for h in headers if "parent_session_id" not in h)
    children = {h["parent_call_id"]: h["id"] for h in headers if h.get("parent_session_id") == top}
    return home, work, top, (children["call_1_1"], children["call_2_1"])


@pytest.mark.parametrize("how", [(), ("--run-tools",)], ids=["plain", "run-tools"])
def test_an_unchanged_replay_shows_each_childs_report_under_its_call_and_no_differences(recorded, how):
    home, work, top, (first, second) = recorded
    done = rienda(home, work, "replay", top, *how)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        f"replayed session {top} through hooks: (none)",
        "= agent [call_1_1]: same as recorded",
        f"    sub-agent cleaner: replayed session {first} through hooks: guard",
        "    = shell [call_1_1]: same as recorded",
        "    no differences",
        "= agent [call_2_1]: same as recorded",
        f"    sub-agent cleaner: replayed session {second} through hooks: guard",
        "    = shell [call_1_1]: same as recorded",
        "    no differences",
        "no differences"]
    assert (work / "victim" / "keep.txt").exists()


def test_a_changed_child_hook_is_reported_under_the_leads_agent_call_and_fails_the_replay(recorded):
    home, work, top, (first, second) = recorded
    write_hook(home, "guard", "module.exports = { beforeToolExecute() {} };")
    done = rienda(home, work, "replay", top)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        f"replayed session {top} through hooks: (none)",
        "≠ agent [call_1_1]: its sub-agent's replay differs",
        f"    sub-agent cleaner: replayed session {first} through hooks: guard",
        "    ≠ shell [call_1_1]",
        "        no longer refused (was refused by hook guard)",
        "    differences found",
        "≠ agent [call_2_1]: its sub-agent's replay differs",
        f"    sub-agent cleaner: replayed session {second} through hooks: guard",
        "    ≠ shell [call_1_1]",
        "        no longer refused (was refused by hook guard)",
        "    differences found",
        "differences found"]
    assert (work / "victim" / "keep.txt").exists()  # plain replay runs no tool


def test_replay_json_names_each_childs_call_and_session(recorded):
    home, work, top, (first, second) = recorded
    same = rienda(home, work, "replay", top, "--json")
    assert same.returncode == 0, same.stdout + same.stderr
    report = json.loads(same.stdout)
    assert report["changed"] is False
    assert [(c["id"], c["child_session_id"]) for c in report["calls"]] == [("call_1_1", first), ("call_2_1", second)]
    assert [(c["session_id"], c["agent"], c["parent_call_id"], c["changed"]) for c in report["children"]] == [
        (first, "cleaner", "call_1_1", False), (second, "cleaner", "call_2_1", False)]
    write_hook(home, "guard", "module.exports = { beforeToolExecute() {} };")
    now = rienda(home, work, "replay", top, "--json")
    assert now.returncode == 1, now.stdout + now.stderr
    report = json.loads(now.stdout)
    assert report["changed"] is True and [c["differences"] for c in report["calls"]] == [[], []]
    for call, nested in zip(report["calls"], report["children"]):
        assert (nested["parent_call_id"], nested["session_id"]) == (call["id"], call["child_session_id"])
        assert nested["calls"][0]["differences"] == ["no longer refused (was refused by hook guard)"]


def test_a_childs_session_that_is_gone_is_a_note_in_plain_replay_and_a_difference_with_run_tools(recorded):
    home, work, top, (child, _) = recorded
    (home / "sessions" / f"{child}.jsonl").unlink()
    plain = rienda(home, work, "replay", top)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    [note] = [line for line in plain.stdout.splitlines() if line.startswith("note: ")]
    assert note.startswith(f"note: agent [call_1_1]: its sub-agent's session {child} cannot be read (")
    assert note.endswith("; only its recorded answer was replayed")
    deep = rienda(home, work, "replay", top, "--run-tools")
    assert deep.returncode == 1, deep.stdout + deep.stderr
    assert deep.stdout.splitlines()[2].startswith(
        f"    not run again: its sub-agent's session {child} cannot be read (")
