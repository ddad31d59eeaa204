"""``%rienda hook NAME POINT [JSON]``: one hook point from a notebook session, against a
real RIENDA_HOME (the documentation's guard) and real sessions."""

from __future__ import annotations

import shutil

import pytest
import yaml

from rienda_kernel.commands.vocabulary import CommandError, run_rienda_command
from rienda_kernel.engine import NonInteractiveUI
from rienda_kernel.commands.session import TurnSession
from tests.helpers import paths

EXAMPLES = paths.EXAMPLES
DANGEROUS = '{"name": "shell", "arguments": {"command": "rm -rf build"}}'


@pytest.fixture
def nb(tmp_path, monkeypatch):
    monkeypatch.delenv("RIENDA_CONFIRM", raising=False)
    home = tmp_path / "home"
    shutil.copytree(EXAMPLES / "hooks", home / "hooks")
    (home / "hooks" / "whoami").mkdir()
    (home / "hooks" / "whoami" / "index.js").write_text(
        'module.exports = { beforeRun(ctx, e) { ctx.log(ctx.agent.id + " " + ctx.session.id + " " + e.sessionId); } };')
    (home / "agents").mkdir()
    (home / "agents" / "careful.md").write_text("---\nmodel: scripted/script.yaml\nhooks: [guard]\n---\nCareful.\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "script.yaml").write_text(yaml.safe_dump([{"text": "Hi."}]))
    return TurnSession(home=home, workdir=work)


def test_the_guard_refuses_a_dangerous_command_when_confirms_are_denied(nb):
    output = run_rienda_command(nb, f"%rienda hook guard beforeToolExecute {DANGEROUS}")
    assert output.text.splitlines()[1:] == [
        "  refused the call: refused by the user",
        "  confirm 'Dangerous command' (rm -rf build): denied (default-deny)",
    ]
    assert output.value.outcome == {"allow": False, "reason": "refused by the user"}


def test_confirm_allow_lets_it_through_and_a_harmless_command_asks_nothing(nb):
    run_rienda_command(nb, "%rienda confirm allow")
    allowed = run_rienda_command(nb, f"%rienda hook guard beforeToolExecute {DANGEROUS}")
    assert "  confirm 'Dangerous command' (rm -rf build): allowed (auto-approve)" in allowed.text.splitlines()
    harmless = run_rienda_command(nb, '%rienda hook guard beforeToolExecute {"name": "shell", "arguments": {"command": "ls"}}')
    assert harmless.text.splitlines()[1:] == ["  changed nothing", '  now: {"allow": true, "arguments": {"command": "ls"}}']
    assert harmless.value.events == ()


def test_the_payload_is_kept_as_written_not_split_like_shell_words(nb):
    output = run_rienda_command(nb, """%rienda hook guard beforeToolExecute {"name": "shell", "arguments": {"command": "echo it's   spaced"}}""")
    assert output.value.payload["arguments"] == {"command": "echo it's   spaced"}


def test_ctx_is_the_notebooks_agent_and_session(nb):
    run_rienda_command(nb, "%rienda use careful")
    result = nb.conversation.run("hello", NonInteractiveUI())
    output = run_rienda_command(nb, "%rienda hook whoami beforeRun")
    assert output.value.to_dict()["logs"] == [f"careful {result.session_id} {result.session_id}"]


def test_a_bad_payload_is_a_command_error_naming_the_field(nb):
    with pytest.raises(CommandError, match=r"payload for beforeToolExecute: field 'name': 3 is not of type 'string'"):
        run_rienda_command(nb, '%rienda hook guard beforeToolExecute {"name": 3}')
    with pytest.raises(CommandError, match=r"usage: %rienda hook NAME POINT \[JSON\]"):
        run_rienda_command(nb, "%rienda hook guard")
