"""rienda sessions: filters (--agent, -n), rm (with the sub-agents' sessions) and --prune,
on sessions that real runs saved (the scripted model, a sub-agent tree, a run that failed
before the model answered, a run that holds its session)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rienda_kernel.engine import NonInteractiveUI, Rienda

from ..helpers.cli import table_rows
from ..helpers.trees import delegate, write_agent, write_script


@pytest.fixture()
def saved(tmp_path):
    """A home with three runs: the lead's (which started helper's), a solo one, and one whose
    script was empty (it failed before the model answered)."""
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    write_agent(home, "lead", tools=("agent",))
    write_agent(home, "helper")
    write_agent(home, "solo")
    write_agent(home, "mute")
    write_script(work, "lead", [delegate("helper", "count"), {"text": "helper said 3"}])
    write_script(work, "helper", [{"text": "3"}])
    write_script(work, "solo", [{"text": "alone"}])
    write_script(work, "mute", [])
    rienda = Rienda(home=home, workdir=work)
    ids = {}
    for agent in ("lead", "solo", "mute"):
        result = rienda.conversation(agent).run("go", NonInteractiveUI(auto_approve=False))
        ids[agent] = result.session_id
        assert result.reason == ("error" if agent == "mute" else "end_turn"), result.error
    ids["helper"] = next(info.id for info in rienda.sessions() if info.agent == "helper")
    return home, work, ids


def sessions(home: Path, work: Path, *args: str) -> subprocess.CompletedProcess:
    """``rienda sessions`` on HOME, with a data folder of its own: a demo this machine ran
    (README's first command) must not add its hint to the listings asserted here."""
    env = {**os.environ, "XDG_DATA_HOME": str(home.parent / "data")}
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), "sessions", *args],
                          cwd=work, env=env, capture_output=True, text=True, timeout=60)


def listed(done: subprocess.CompletedProcess) -> list[str]:
    assert done.returncode == 0, done.stderr
    return [row["id"] for row in table_rows(done.stdout)]


def test_agent_and_n_choose_what_is_listed(saved):
    home, work, ids = saved
    assert listed(sessions(home, work)) == sorted(ids.values())
    assert listed(sessions(home, work, "--agent", "solo")) == [ids["solo"]]
    assert listed(sessions(home, work, "-n", "2")) == sorted(ids.values())[-2:]
    nobody = sessions(home, work, "--agent", "nobody")
    assert (nobody.stdout, nobody.stderr) == ("", f"no saved sessions of agent nobody in {home / 'sessions'}\n")


def test_rm_removes_a_session_with_its_sub_agents_sessions(saved):
    home, work, ids = saved
    done = sessions(home, work, "rm", ids["lead"])
    assert (done.returncode, done.stdout) == (0, f"removed {ids['helper']}\nremoved {ids['lead']}\n"), done.stderr
    assert listed(sessions(home, work)) == sorted([ids["solo"], ids["mute"]])
    missing = sessions(home, work, "rm", ids["lead"])
    assert missing.returncode == 1 and "Traceback" not in missing.stderr and ids["lead"] in missing.stderr


def test_prune_removes_only_sessions_without_an_answer_and_never_one_being_written(saved):
    home, work, ids = saved
    held = Rienda(home=home, workdir=work).store.resume(ids["mute"])  # a run holding the session
    try:
        done = sessions(home, work, "--prune")
        assert (done.stdout, done.stderr) == ("", f"no session to prune in {home / 'sessions'}\n")
    finally:
        held.close()
    done = sessions(home, work, "--prune")
    assert done.returncode == 0 and done.stdout.startswith(f"removed {ids['mute']}\tmute\tgo"), done.stderr
    assert listed(sessions(home, work)) == sorted([ids["lead"], ids["helper"], ids["solo"]])


def test_rm_of_a_session_a_run_is_writing_is_refused_in_one_line(saved):
    home, work, ids = saved
    held = Rienda(home=home, workdir=work).store.resume(ids["solo"])
    try:
        done = sessions(home, work, "rm", ids["solo"])
    finally:
        held.close()
    assert done.returncode == 1 and "being written by another run" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and ids["solo"] in listed(sessions(home, work))


def test_sessions_takes_rm_or_nothing(saved):
    home, work, _ = saved
    done = sessions(home, work, "remove", "x")
    assert (done.returncode, done.stderr) == (2, "rienda: sessions takes rm and the sessions to remove, not 'remove x'; "
                                                 "rienda sessions --help shows the usage\n")
