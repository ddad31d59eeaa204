"""``compact [INSTRUCTIONS]`` and ``pin [N]`` in the command table (``%rienda compact``,
``/compact`` in ``rienda chat``): against a real home, real sessions made by running the
scripted model with a 600-token window, and a real V8 hook on both compaction points."""

from __future__ import annotations

import pytest

from rienda_kernel.commands.session import TurnSession
from rienda_kernel.commands.vocabulary import CommandError, run_rienda_command
from rienda_kernel.engine import Compaction, NonInteractiveUI
from rienda_kernel.jupyter.completion import complete

from ..helpers.homes import scripted_home, session_lines
from ..helpers.long_session import long_home


@pytest.fixture
def nb(tmp_path, monkeypatch):
    """A notebook's session on agent ``long``, five prompts into it (one short of compacting)."""
    monkeypatch.delenv("RIENDA_CONFIRM", raising=False)
    home, work = scripted_home(tmp_path)
    long_home(home, work)
    session = TurnSession(home=home, workdir=work)
    run_rienda_command(session, "%rienda use long")
    yield session
    session.close()


def _prompts(nb: TurnSession, count: int) -> None:
    for index in range(1, count + 1):
        assert nb.conversation.run(f"prompt {index}", NonInteractiveUI()).reason == "end_turn"


def _records(nb: TurnSession, kind: str) -> list[dict]:
    return [line for line in session_lines(nb.rienda.home, nb.session_id) if line.get("type") == kind]


def test_compact_goes_through_the_hooks_and_says_what_came_of_it(nb):
    with pytest.raises(CommandError, match=r"^compaction failed: there is no session yet: nothing to compact$"):
        run_rienda_command(nb, "%rienda compact")
    _prompts(nb, 1)
    nothing = run_rienda_command(nb, "compact keep it")  # the first prompt is always kept: not an error
    assert nothing.value.outcome == "nothing" and nothing.text.startswith("nothing to compact: the first prompt")
    _prompts(nb, 4)
    with pytest.raises(CommandError, match=r"^compaction cancelled by hook team \(say what to keep\)$"):
        run_rienda_command(nb, "%rienda compact")
    out = run_rienda_command(nb, "%rienda compact don't lose the \"totals\"")
    log, line = out.text.splitlines()
    assert log.startswith("[hook:team.beforeCompact] compacting (manual): ") and log.endswith(" of 600 tokens")
    assert line.startswith("compacted (manual): ") and line.endswith("team: added instructions; team: rewrote "
                                                                      "the summary")
    assert isinstance(out.value, Compaction) and out.value.outcome == "compacted" and out.value.message == line
    [cancelled, made] = _records(nb, "compaction")
    assert cancelled["outcome"] == "cancelled"
    assert made["instructions"] == "don't lose the \"totals\" Keep ticket numbers." and made["summary"].endswith("RULE")


def test_pin_keeps_a_prompt_and_names_a_bad_one(nb):
    with pytest.raises(CommandError, match="there is no session yet: run a prompt first, then pin it"):
        run_rienda_command(nb, "pin")
    _prompts(nb, 5)
    out = run_rienda_command(nb, "%rienda pin 2")
    assert out.text == f"Pinned prompt 2 of session {nb.session_id}: every compaction keeps it verbatim."
    assert run_rienda_command(nb, "pin").text.startswith("Pinned prompt 5 of")
    assert [record["message"] for record in _records(nb, "pin")] == [2, 8]
    with pytest.raises(CommandError, match=f"^session {nb.session_id} has no prompt 9: it has 5$"):
        run_rienda_command(nb, "pin 9")
    with pytest.raises(CommandError, match=r"^%rienda pin takes a prompt's number \(1 for the first\), got 'two'$"):
        run_rienda_command(nb, "pin two")
    with pytest.raises(CommandError, match=r"^usage: %rienda pin \[N\]$"):
        run_rienda_command(nb, "pin 1 2")
    run_rienda_command(nb, "compact keep the totals")
    [made] = _records(nb, "compaction")
    assert made["head"] == [0, 2]  # the first prompt and pinned prompt 2, verbatim (prompt 5 is in the recent tail)


def test_tab_completes_the_commands_and_the_prompt_numbers(nb):
    assert {"compact", "pin"} <= set(complete(nb, "%rienda ", 8)[0])
    assert complete(nb, "%rienda com", 11)[0] == ["compact"]
    assert complete(nb, "%rienda pin ", 12)[0] == []  # no session yet
    _prompts(nb, 3)
    assert complete(nb, "%rienda pin ", 12)[0] == ["3", "2", "1"]


def test_context_says_what_fills_the_next_request_without_running_a_turn(nb):
    """``%rienda context`` / ``/context``: each part's estimate, adding up to the whole, of
    the model's window; a compaction's summary and the first prompt counted apart; and the
    same line ``rienda show`` prints (issue 40: nothing showed a saved session's fill)."""
    with pytest.raises(CommandError, match=r"^no session yet: the next prompt starts one"):
        run_rienda_command(nb, "%rienda context")
    _prompts(nb, 5)
    before = run_rienda_command(nb, "%rienda context").value
    assert (before.window, before.summary) == (600, 0) and before.pinned > 0 and before.messages > 0
    assert before.total == before.system + before.tools + before.pinned + before.summary + before.messages
    assert run_rienda_command(nb, "%rienda compact keep the totals").value.outcome == "compacted"
    after = run_rienda_command(nb, "context")
    use = after.value
    assert use.summary > 0 and use.total < before.total
    assert after.text == use.line() and after.text.startswith(f"context: about {use.total:,} of 600 tokens (")
    assert after.text.endswith(f"; free {600 - use.total:,}") and f"summary {use.summary:,}" in after.text
    assert use == nb.rienda.conversation(session_id=nb.session_id).context_use()  # the same from the saved session
