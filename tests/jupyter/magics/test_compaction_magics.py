"""Compaction through the %rienda magics in a real python3 ipykernel: a compaction is one
line in the cell, the closing usage and fill line is kept in a batch run, ``%rienda pin``
and ``%rienda compact`` work and return their values."""

from __future__ import annotations

from ...helpers.frontend import outputs, streams, texts, value_of
from ...helpers.long_session import COMPACTS_AT, long_home


def _plain(messages, kind="display_data"):
    return [m["content"]["data"].get("text/plain", "") for m in messages if m["msg_type"] == kind]


def _all(messages):
    return streams(messages) + "\n".join(texts(messages))


def test_a_compaction_is_one_line_in_the_cell_and_the_commands_work(python_kernel):
    home, work, start = python_kernel
    long_home(home, work)
    fe = start()
    outputs(fe, "%rienda use long")
    for index in range(1, COMPACTS_AT):
        shown = _plain(outputs(fe, f"r = %rienda ask prompt {index}"))
        assert shown[-1].startswith("tokens: ") and shown[-1].endswith(" % of 600")  # batch: kept, last
    assert value_of(fe, "r.context.window") == 600
    assert "Pinned prompt 2 of session " in _all(outputs(fe, "%rienda pin 2"))
    shown = _plain(outputs(fe, f"r = %rienda ask prompt {COMPACTS_AT}"))
    [line] = [text for text in shown if "compact" in text]
    assert line.startswith("🗜 compacted (auto): ") and line.endswith("team: rewrote the summary")
    assert not [text for text in shown if text.startswith("✎")]
    reply, _ = fe.run("%rienda compact")
    assert (reply["status"], reply["evalue"]) == ("error", "compaction cancelled by hook team (say what to keep)")
    made = _all(outputs(fe, "%rienda compact keep the totals"))
    assert "[hook:team.beforeCompact] compacting (manual): " in made and "compacted (manual): " in made
