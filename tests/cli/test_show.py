"""``rienda show`` as a real process over sessions made by real runs (the scripted model)."""

from __future__ import annotations

import json

from ..helpers.cli import rienda, table_rows
from ..helpers.homes import write_script

CALL = {"text": "Publishing.", "tool_calls": [{"name": "publish", "arguments": {"n": 1, "where": "prod"}}],
        "usage": {"input_tokens": 10, "output_tokens": 3}}


def two_runs(home, work) -> str:
    """A session of two runs: the first calls a tool then fails, the second answers (the
    script is read at each turn: its second response changes between the runs)."""
    write_script(work, [CALL, {"error": "the model fell over"}])
    rienda(home, work, "run", "--agent", "pub", "--yes", "publish it")
    write_script(work, [CALL, {"text": "Done.", "usage": {"input_tokens": 20, "output_tokens": 2}}])
    [session_id] = [row["id"] for row in table_rows(rienda(home, work, "sessions").stdout)]
    assert rienda(home, work, "run", "--session", session_id, "again").returncode == 0
    return session_id


def test_show_prints_arguments_as_json_and_each_run_end_after_its_messages(setup):
    home, work = setup
    session_id = two_runs(home, work)
    shown = rienda(home, work, "show", session_id).stdout.splitlines()
    assert '  → publish [call_1_1] {"n": 1, "where": "prod"}' in shown
    first_end = shown.index("-- run ended: error: scripted failure: the model fell over")
    second_prompt = shown.index("user: again")
    assert shown.index("assistant: Publishing.") < first_end < second_prompt
    assert shown.index("assistant: Done.") < shown.index("-- run ended: end_turn")
    assert shown[-1] == "usage: 30 in, 5 out over 2 model turns"


def test_show_warns_about_records_it_cannot_read_and_shows_the_rest(setup):
    home, work = setup
    session_id = two_runs(home, work)
    path = home / "sessions" / f"{session_id}.jsonl"
    with path.open("a") as file:
        file.write(json.dumps({"type": "run_end", "error": "no reason given"}) + "\n")
        file.write(json.dumps({"type": "message", "role": "assistant", "text": "odd",
                               "usage": {"input_tokens": "many", "output_tokens": 1}}) + "\n")
        file.write(json.dumps({"type": "hook_decision", "effect": "refused"}) + "\n")
    lines = len(path.read_text().splitlines())
    done = rienda(home, work, "show", session_id)
    assert done.returncode == 0, done.stderr
    assert f"{path}:{lines - 2}: a 'run_end' record this version cannot read; left out" in done.stderr
    assert (f"{path}:{lines - 1}: not a valid message ('usage.input_tokens' must be a whole number >= 0, "
            "got 'many'); skipped") in done.stderr  # the session loader's own warning
    assert f"{path}:{lines}: a 'hook_decision' record this version cannot read; left out" in done.stderr
    shown = done.stdout.splitlines()
    assert "assistant: odd" not in shown and shown[-1] == "usage: 30 in, 5 out over 2 model turns"


def test_show_says_what_fills_the_next_request_under_the_header_and_chat_context_says_the_same(tmp_path):
    """A saved session's fill without running a turn (issue 40): the second line of
    ``rienda show``, and ``/context`` in ``rienda chat`` resuming it, say the same."""
    from ..helpers.homes import scripted_home
    from ..helpers.long_session import long_home

    home, work = scripted_home(tmp_path)
    long_home(home, work)
    assert rienda(home, work, "run", "--agent", "long", "one").returncode == 0
    shown = rienda(home, work, "show", "last").stdout.splitlines()
    assert shown[1].startswith("context: about ") and " of 600 tokens (" in shown[1], shown[:3]
    assert "system prompt " in shown[1] and "; free " in shown[1]
    chat = rienda(home, work, "chat", "--resume", "last", input="/context\n")
    assert chat.returncode == 0 and shown[1] in chat.stdout.splitlines(), chat.stdout + chat.stderr
