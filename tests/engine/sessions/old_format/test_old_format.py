"""Session files written before the typed records (issue 39) read, show, replay and resume
the same: ``home/`` holds them (every record kind, every message meta key, a sub-agent's
session, a gate's session) and ``expected.json`` what the Rienda that wrote them showed,
replayed and resumed of them (both made by ``make.py``, which says how). One change since,
on purpose: ``rienda show`` puts each call's hook lines and confirms under the call itself
and shows the arguments the tool received (issue 40), so the lead's ``show`` entries are
today's layout of the same lines; its replay, request, pins and approvals are the old
Rienda's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rienda_kernel.engine import ConfigError, Conversation, NonInteractiveUI
from rienda_kernel.engine.runtime.rienda import Rienda
from rienda_kernel.engine.sessions.compaction.view import request_messages

HERE = Path(__file__).parent
EXPECTED = json.loads((HERE / "expected.json").read_text(encoding="utf-8"))
COMMANDS = [key for key in EXPECTED if key.split()[1:2] in (["show"], ["replay"])]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A copy of the old home (its sessions untouched in the checkout), with the scripts in ``work``."""
    shutil.copytree(HERE / "home", tmp_path / "home", ignore=shutil.ignore_patterns("work"))
    shutil.copytree(HERE / "home" / "work", tmp_path / "work")
    return tmp_path


def session_of(root: Path, role: str) -> str:
    ids = sorted(path.stem for path in (root / "home" / "sessions").glob("*.jsonl"))
    if role == "lead":
        return EXPECTED["lead"]
    return next(i for i in ids if i.startswith("claude-code")) if role == "gate" else next(
        i for i in ids if i != EXPECTED["lead"] and not i.startswith("claude-code"))


def as_recorded(text: str, root: Path) -> str:
    return text.replace(str(root), "ROOT").replace(EXPECTED["made_in"], "ROOT")


@pytest.mark.parametrize("key", COMMANDS)
def test_rienda_shows_and_replays_an_old_session_as_the_rienda_that_wrote_it(root, key):
    role, command, *flags = key.split()
    env = {**os.environ, "RIENDA_HOME": str(root / "home")}
    done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", command, session_of(root, role), *flags],
                          env=env, text=True, capture_output=True, cwd=root / "work", timeout=300)
    shown = {"exit": done.returncode, "stdout": as_recorded(done.stdout, root),
             "stderr": as_recorded(done.stderr, root)}
    assert shown == EXPECTED[key]


@pytest.mark.parametrize("role", ["lead", "gate"])
def test_an_old_session_resumes_with_the_same_request_pins_and_approvals(root, role):
    rienda = Rienda(home=root / "home", workdir=root / "work")
    if role == "gate":  # a gate's record is not a conversation: no front end resumes it, the engine still reads it
        with pytest.raises(ConfigError, match="is rienda gate's record of claude-code's calls, not a conversation"):
            rienda.conversation(session_id=session_of(root, role))
        loaded = rienda.store.load(session_of(root, role))
        resumed = Conversation(rienda, loaded.header.agent, session_id=loaded.header.id, loaded=loaded)
    else:
        resumed = rienda.conversation(session_id=session_of(root, role))
    sent = [m.to_dict() for m in request_messages(resumed.messages, resumed.compaction.view)]
    assert sent == EXPECTED[f"{role} request"]
    assert sorted(resumed.compaction.pins) == EXPECTED[f"{role} pins"]
    assert sorted(map(list, resumed.approvals)) == EXPECTED[f"{role} approvals"]
    assert [as_recorded(w, root) for w in resumed.warnings] == EXPECTED[f"{role} warnings"]


def test_an_old_session_goes_on_with_a_new_run(root):
    (root / "work" / "lead.yaml").write_text("- text: Resumed.\n" * 20)  # whichever turn the model counts
    rienda = Rienda(home=root / "home", workdir=root / "work")
    resumed = rienda.conversation(session_id=EXPECTED["lead"])
    before = len(resumed.messages)
    result = resumed.run("once more", NonInteractiveUI())
    assert (result.reason, result.text) == ("end_turn", "Resumed."), result.error
    assert [m.text for m in rienda.store.load(EXPECTED["lead"]).messages[before:]] == ["once more", "Resumed."]
