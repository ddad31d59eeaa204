"""Compaction at the terminal: a run past the window says it on stderr (and in --json),
``rienda compact`` and ``rienda pin`` by hand, ``rienda show`` shows the records. Real
``rienda`` processes, the scripted model with a 600-token window (usage from the estimate),
a real V8 hook."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from ..helpers.cli import rienda
from ..helpers.homes import scripted_home, session_lines, write_agent_file, write_extension

TEAM = """module.exports = {
  beforeCompact(ctx, c) {
    if (c.reason === "manual" && c.instructions === "") return {cancel: true, reason: "say what to keep"};
    return {instructions: c.instructions + " Keep ticket numbers."};
  },
  afterCompact(ctx, c) { return {summary: c.summary + "\\nRULE"}; },
};"""


@pytest.fixture(scope="module")
def long_session_once(tmp_path_factory):
    """(home, work, session id) of a session of five prompts on agent ``long`` (window 600,
    hook ``team``), one short of its first compaction: made once for the module."""
    home, work = scripted_home(tmp_path_factory.mktemp("long-session"))
    write_extension(home, "hooks", "team", TEAM)
    write_agent_file(home, "long", "---\ndescription: Long.\nmodel: scripted/script.yaml\nhooks: [team]\n"
                                   "options:\n  context_window: 600\n---\nYou help.\n")
    (work / "script.yaml").write_text(yaml.safe_dump([{"text": f"Answer {i}: " + "lorem ipsum dolor " * 20}
                                                      for i in range(12)]))
    first = rienda(home, work, "run", "--agent", "long", "prompt 1")
    session = first.stderr.split("session ", 1)[1].split()[0]
    for index in range(2, 6):
        assert rienda(home, work, "run", "--session", session, f"prompt {index}").returncode == 0
    assert not [line for line in session_lines(home, session) if line.get("type") == "compaction"]
    return home, work, session


@pytest.fixture
def long_session(long_session_once, tmp_path):
    """A copy of :func:`long_session_once`'s home and work for one test, which may change it.
    Sharing cannot hide a bug: the five runs are the scripted model's, the same files each
    time they are made, and every test acts on a copy of its own (paths are not in them)."""
    home, work, session = long_session_once
    shutil.copytree(home, tmp_path / "home")
    shutil.copytree(work, tmp_path / "work")
    return tmp_path / "home", tmp_path / "work", session


def test_a_run_past_the_window_says_its_compaction_in_one_line_on_stderr(long_session):
    home, work, session = long_session
    done = rienda(home, work, "run", "--session", session, "prompt 6")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Answer 5: lorem") and "compacted" not in done.stdout
    [line] = [line for line in done.stderr.splitlines() if "compacted" in line]
    assert line.startswith("[rienda] compacted (auto): ") and " tokens of 600; folded " in line
    assert line.endswith("into a summary; team: added instructions; team: rewrote the summary")
    assert "✎" not in done.stderr  # the hooks' rewrites are named in that line, not again on their own
    shown = rienda(home, work, "show", session)
    [record] = [line for line in shown.stdout.splitlines() if line.startswith("-- compaction")]
    folded = line.split("; ")[1]  # the run's line and the record say what it did in the same words
    assert folded.startswith("folded ") and folded.endswith(" messages into a summary"), line
    assert record.startswith("-- compaction (auto): compacted; ") and f"; {folded}; team: added instructions" in record
    assert " more lines (--full shows the whole summary)" in shown.stdout
    assert "RULE" in rienda(home, work, "show", session, "--full").stdout


def test_json_has_the_compaction_event(long_session):
    home, work, session = long_session
    done = rienda(home, work, "run", "--session", session, "--json", "prompt 6")
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [event] = [e for e in events if e["type"] == "compaction"]
    assert (event["outcome"], event["reason"], event["window"]) == ("compacted", "auto", 600)
    assert event["tokens_after"] < event["tokens_before"] and event["folded"] > 0
    assert [e["type"] for e in events].index("compaction") < [e["type"] for e in events].index("message")


def test_rienda_compact_goes_through_the_agents_hooks_and_says_what_came_of_it(long_session):
    home, work, session = long_session
    cancelled = rienda(home, work, "compact", session)
    assert (cancelled.returncode, cancelled.stderr) == (1, "[rienda] compaction cancelled by hook team (say what to "
                                                           "keep)\n")
    made = rienda(home, work, "compact", session, "--instructions", "keep the totals")
    assert made.returncode == 0 and made.stderr.startswith("[rienda] compacted (manual): "), made.stderr
    [record] = [line for line in session_lines(home, session) if line.get("outcome") == "compacted"]
    assert record["instructions"] == "keep the totals Keep ticket numbers." and record["summary"].endswith("RULE")


def test_rienda_pin_keeps_a_prompt_verbatim_and_names_a_bad_one(long_session):
    home, work, session = long_session
    pinned = rienda(home, work, "pin", session, "2")
    assert (pinned.returncode, pinned.stdout) == (0, f"pinned prompt 2 of session {session}: every compaction keeps "
                                                     "it verbatim\n")
    assert rienda(home, work, "compact", session, "--instructions", "x").returncode == 0
    [record] = [line for line in session_lines(home, session) if line.get("outcome") == "compacted"]
    assert record["head"] == [0, 2]
    assert "-- pinned prompt 2: every compaction keeps it verbatim" in rienda(home, work, "show", session).stdout
    bad = rienda(home, work, "pin", session, "9")
    assert (bad.returncode, bad.stderr) == (1, f"rienda: session {session} has no prompt 9: it has 5\n")
    unknown = rienda(home, work, "compact", "20990101-000000-000000-dead")
    assert unknown.returncode == 1 and unknown.stderr.startswith("rienda: no session '20990101-000000-000000-dead'")
    assert len(unknown.stderr.splitlines()) == 1
