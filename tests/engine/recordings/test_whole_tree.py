"""Every model request of a Rienda goes through its recording: a sub-agent's and a
compaction summary's too (the real loop, real sub-agent runs, the echo server)."""

from __future__ import annotations

from rienda_kernel.engine import NonInteractiveUI
from rienda_kernel.engine.events import Replayed, RunEnd


def test_a_sub_agents_requests_are_recorded_and_replayed(recorded):
    recorded.configure(tools=["read"], name="helper")
    recorded.configure(tools=["agent"], name="lead")
    (recorded.rig.workdir / "notes.txt").write_text("alpha beta")
    first = recorded.rienda().conversation("lead").run("delegate: helper: read: notes.txt", NonInteractiveUI())
    assert first.text == "The tool said: The tool said: alpha beta" and recorded.asked == 4
    recorded.stop()
    ui = NonInteractiveUI()
    second = recorded.rienda(mode="replay").conversation("lead").run("delegate: helper: read: notes.txt", ui)
    assert (second.reason, second.error, second.text) == ("end_turn", None, first.text)
    assert sorted(e.depth for e in ui.events if isinstance(e, Replayed)) == [0, 0, 1, 1]


def test_a_sub_agents_request_not_in_a_replay_names_the_sub_agent(recorded):
    recorded.configure(tools=["read"], name="helper")
    recorded.configure(tools=["agent"], name="lead")
    notes = recorded.rig.workdir / "notes.txt"
    notes.write_text("alpha beta")
    recorded.rienda().conversation("lead").run("delegate: helper: read: notes.txt", NonInteractiveUI())
    notes.write_text("gamma")
    ui = NonInteractiveUI()
    result = recorded.rienda(mode="replay").conversation("lead").run("delegate: helper: read: notes.txt", ui)
    [child_end] = [e for e in ui.events if isinstance(e, RunEnd) and e.depth == 1]
    assert child_end.error.startswith("turn 1, sub-agent helper is not in the recording talk.rec.jsonl: tool "
                                      "`read`'s result differs from the recording: recorded 'alpha beta', now 'gamma'")
    assert result.error.startswith("turn 1 is not in the recording talk.rec.jsonl: tool `agent`'s result differs")
    assert recorded.asked == 4


def test_a_compaction_summary_is_recorded_and_replayed(recorded):
    recorded.configure()
    engine = recorded.rienda()
    conversation = engine.conversation("a")
    for index in range(4):
        conversation.run(f"prompt {index}: " + "words " * 30, NonInteractiveUI())
    made = conversation.compact(NonInteractiveUI())
    assert made.outcome in ("compacted", "rejected") and recorded.asked == 5
    summary = recorded.server.requests[-1]
    assert "summar" in str(summary["messages"][0]["content"]).lower()
    recorded.stop()
    engine = recorded.rienda(mode="replay")
    conversation = engine.conversation("a")
    for index in range(4):
        assert conversation.run(f"prompt {index}: " + "words " * 30, NonInteractiveUI()).reason == "end_turn"
    ui = NonInteractiveUI()
    again = conversation.compact(ui)
    assert (again.outcome, again.message) == (made.outcome, made.message)
    assert [e.purpose for e in ui.events if isinstance(e, Replayed)] == ["compaction"]
