"""Gate sessions apart from Rienda's own: after a gate call, ``last`` and the listings mean
the Rienda session (``rienda run``, ``show``, ``chat`` ``/resume last``, ``pin``), a gate
session is listed with ``--gate`` and cannot be resumed as a chat or run, ids sort by
creation time; an ``ask`` is shown as asked of the agent's user; replay tells apart one
call id gated twice and answers a gate's confirms the same whatever the environment; a
session whose header is garbled does not stop later decisions from being recorded."""

from __future__ import annotations

import json
import os

import pytest

from tests.gate.conftest import answer, gate, gate_session_file, gate_session_id, sample
from tests.helpers import cli
from tests.helpers.homes import write_agent_file, write_script

CLAUDE = sample("claude-code")


@pytest.fixture
def both(home, tmp_path):
    """A Rienda run's session, then a gate's decision (made after it): the ids of both."""
    work = tmp_path / "work"
    work.mkdir()
    write_agent_file(home, "default", "---\nmodel: scripted/script.yaml\n---\nBe brief.\n")
    write_script(work, [{"text": "First answer."}, {"text": "Second answer."}, {"text": "Third answer."}])
    done = cli.rienda(home, work, "run", "hello")
    assert done.returncode == 0, done.stderr
    [own] = [path.stem for path in (home / "sessions").glob("*.jsonl")]
    answer(gate(home, "claude-code", sample("claude-code", command="pwd")))
    return work, own, gate_session_id(home, "claude-code", CLAUDE["session_id"])


def test_ids_sort_by_creation_time_and_last_means_rienda_s_own_session(home, both):
    work, own, gated = both
    assert sorted([own, gated]) == [own, gated]  # made after: sorts after
    shown = cli.rienda(home, work, "show", "last")
    assert shown.returncode == 0 and shown.stdout.startswith(f"session {own}  agent default"), shown.stderr
    listed = cli.rienda(home, work, "sessions")
    assert [row["id"] for row in cli.table_rows(listed.stdout)] == [own]
    gates = cli.rienda(home, work, "sessions", "--gate")
    assert [[row["id"], row["agent"], row["model"]] for row in cli.table_rows(gates.stdout)] == [
        [gated, "gate", "gate/claude-code"]]
    assert cli.rienda(home, work, "sessions", "--gate", "codex").stdout == ""
    assert cli.rienda(home, work, "sessions", "--gate", "claude-code").stdout == gates.stdout


def test_run_chat_and_pin_on_last_mean_rienda_s_own_session(home, both):
    work, own, gated = both
    again = cli.rienda(home, work, "run", "--session", "last", "again")
    assert again.returncode == 0, again.stderr
    chat = cli.rienda(home, work, "chat", input="/resume last\nonce more\n/exit\n")
    assert chat.returncode == 0 and f"Resumed session {own}" in chat.stdout + chat.stderr, chat.stderr
    pinned = cli.rienda(home, work, "pin", "last", "1")
    assert pinned.returncode == 0, pinned.stderr
    own_text = (home / "sessions" / f"{own}.jsonl").read_text()
    assert own_text.count('"role": "user"') == 3 and '"type": "pin"' in own_text
    gate_text = gate_session_file(home, "claude-code", CLAUDE["session_id"]).read_text()
    assert "again" not in gate_text and "once more" not in gate_text and '"type": "pin"' not in gate_text


@pytest.mark.parametrize("how", [("run", "--session", "{id}", "hi"), ("chat", "--resume", "{id}")])
@pytest.mark.parametrize("named", ["id", "name"])
def test_a_gate_session_cannot_be_resumed_as_a_chat_or_run(home, both, how, named):
    work, own, gated = both
    which = gated if named == "id" else f"claude-code-{CLAUDE['session_id']}"
    done = cli.rienda(home, work, *(word.format(id=which) for word in how), input="")
    assert done.returncode == 1, done.stdout
    assert done.stderr == (f"rienda: session {gated} is rienda gate's record of claude-code's calls, not a "
                           "conversation: it cannot be resumed (rienda show or rienda replay it)\n")


def test_an_ask_is_shown_as_asked_of_the_agent_s_user(home):
    assert answer(gate(home, "claude-code", sample("claude-code", command="git push origin")))[
        "hookSpecificOutput"]["permissionDecision"] == "ask"
    shown = cli.rienda(home, None, "show", f"claude-code-{CLAUDE['session_id']}").stdout.splitlines()
    assert "    ? confirm 'Push': asked of the agent's user (left to the agent)" in shown
    assert not any("allowed" in line for line in shown)


def test_replay_tells_apart_one_call_id_gated_twice(home):
    """Claude Code sent one call id twice: refused the first time, let through the second."""
    answer(gate(home, "claude-code", sample("claude-code", command="rm -rf /", tool_use_id="toolu_same")))
    answer(gate(home, "claude-code", sample("claude-code", command="pwd", tool_use_id="toolu_same")))
    done = cli.rienda(home, None, "replay", f"claude-code-{CLAUDE['session_id']}")
    assert (done.returncode, done.stdout.splitlines()[1:]) == (0, [
        "= shell [toolu_same]: same as recorded", "= shell [toolu_same #2]: same as recorded", "no differences"])


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
@pytest.mark.parametrize("policy", ["allow", "deny", "ask"])
def test_a_replay_answers_a_gate_s_confirm_whatever_its_environment(home, agent, policy):
    """The push was asked (Claude Code: ask) or refused (Codex cannot ask); replayed with
    $RIENDA_CONFIRM set either way, it is decided as recorded."""
    answer(gate(home, agent, sample(agent, command="git push origin")))
    env = {**os.environ, "RIENDA_HOME": str(home), "RIENDA_CONFIRM": policy}
    done = cli.subprocess.run([cli.sys.executable, "-m", "rienda_kernel.cli", "replay",
                               f"{agent}-{sample(agent)['session_id']}"], env=env, capture_output=True, text=True,
                              timeout=60)
    assert (done.returncode, done.stdout.splitlines()[-1]) == (0, "no differences"), done.stdout + done.stderr


def test_a_session_whose_header_is_garbled_does_not_stop_the_next_decisions_being_recorded(home):
    answer(gate(home, "codex", sample("codex", command="pwd", tool_use_id="call_1")))
    first = gate_session_file(home, "codex", sample("codex")["session_id"])
    first.write_text("{garbled\n" + first.read_text().split("\n", 1)[1])
    done = gate(home, "codex", sample("codex", command="rm -rf /", tool_use_id="call_2"))
    assert answer(done)["hookSpecificOutput"]["permissionDecision"] == "deny"
    made = sorted((home / "sessions").glob(f"*-codex-{sample('codex')['session_id']}.jsonl"))
    assert len(made) == 2 and made[0] == first
    assert done.stderr.decode().splitlines()[0] == (
        f"rienda gate: warning: {first}:1: not a Rienda session: the first line must be the session header "
        '{"type": "session", "version": 1, ...}; ' + f"codex's decisions go on in session {made[1].stem}")
    lines = [json.loads(line) for line in made[1].read_text().splitlines()]
    assert f"(the session before, {first.stem}, cannot be read)" in lines[1]["text"]
    assert [call["id"] for line in lines for call in line.get("tool_calls", [])] == ["call_2"]
    answer(gate(home, "codex", sample("codex", command="ls", tool_use_id="call_3")))  # and the next one goes there too
    assert '"call_3"' in made[1].read_text()
