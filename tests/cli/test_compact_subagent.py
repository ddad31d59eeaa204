"""A sub-agent's compaction at the terminal, through a real ``rienda run``: its line is
indented under the sub-agent's run like its other events, ``--json`` has its
``compaction`` event at depth 1 naming the sub-agent's session, and the lead's answer on
stdout is intact."""

from __future__ import annotations

import json

from ..helpers.cli import rienda
from ..helpers.homes import scripted_home
from ..helpers.long_session import lead_and_digger


def test_a_sub_agents_compaction_is_its_line_under_its_run(tmp_path):
    home, work = scripted_home(tmp_path)
    lead_and_digger(home, work)
    done = rienda(home, work, "run", "--agent", "lead", "--yes", "Go.")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The digger is done.\n"
    lines = done.stderr.splitlines()
    opened = next(i for i, line in enumerate(lines) if line.startswith("  ┌ sub-agent digger"))
    closed = lines.index("  └ sub-agent ended: end_turn")
    compactions = [i for i, line in enumerate(lines) if "compacted" in line]
    assert compactions and all(opened < i < closed for i in compactions)
    assert all(lines[i].startswith("  [rienda] compacted (auto): ") and " tokens of 600; " in lines[i]
               for i in compactions)

    done = rienda(home, work, "run", "--agent", "lead", "--yes", "--json", "Go.")
    events = [json.loads(line) for line in done.stdout.splitlines()]
    child = next(e["session_id"] for e in events if e["type"] == "run_start" and e["depth"] == 1)
    made = [e for e in events if e["type"] == "compaction"]
    assert made and {(e["depth"], e["session_id"], e["outcome"], e["window"]) for e in made} == {
        (1, child, "compacted", 600)}
    [message] = [e for e in events if e["type"] == "message" and e["depth"] == 0 and e["message"]["text"]]
    assert message["message"]["text"] == "The digger is done." and message["context"]["window"] is None
