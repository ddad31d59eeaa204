"""Compaction in ``rienda chat`` (lines on a pipe, a real process): a turn past the window
says its compaction on stderr; ``/pin`` and ``/compact`` come from the command table."""

from __future__ import annotations

from ...helpers.cli import rienda
from ...helpers.homes import scripted_home, session_lines
from ...helpers.long_session import COMPACTS_AT, long_home


def test_a_chat_compacts_by_itself_and_by_hand(tmp_path):
    home, work = scripted_home(tmp_path)
    long_home(home, work)
    lines = [f"prompt {index}" for index in range(1, COMPACTS_AT + 1)]
    lines += ["/pin 2", "/compact", "/compact don't lose the totals", "/help compact"]
    done = rienda(home, work, "chat", "--agent", "long", input="\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr
    [auto] = [line for line in done.stderr.splitlines() if "compacted (auto)" in line]
    assert auto.startswith("[rienda] compacted (auto): ") and auto.endswith("team: rewrote the summary")
    assert "compaction cancelled by hook team (say what to keep)\n" in done.stderr
    out = done.stdout.splitlines()
    assert out[-1] == "/compact [INSTRUCTIONS]  Compact the session's context now, through its agent's " \
                      "beforeCompact/afterCompact hooks; INSTRUCTIONS tell the summary what to keep."
    assert out[-2].startswith("compacted (manual): ") and out[-3].startswith("[hook:team.beforeCompact] compacting")
    assert out[-4].startswith("Pinned prompt 2 of session ")
    session_id = done.stderr.split("bye: session ")[1].split()[0]
    records = session_lines(home, session_id)
    assert [r["outcome"] for r in records if r.get("type") == "compaction"] == ["compacted", "cancelled", "compacted"]
    assert [r for r in records if r.get("type") == "compaction"][-1]["instructions"].startswith("don't lose the totals")
