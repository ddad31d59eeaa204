"""engine/ui.py: a front end is the sink of its events and the one who is asked; the run
holds both, decides each confirm once and scrubs what reaches either part."""

from __future__ import annotations

import pytest

from rienda_kernel.engine import (
    UI,
    Answer,
    CancelToken,
    Confirm,
    FrontEnd,
    NonInteractiveUI,
    PersonAsker,
    Recorder,
    ScrubbingUI,
)
from rienda_kernel.engine.runtime.rienda import Rienda

from ..helpers.homes import write_agent, write_script

KEY = "sk-live-0123456789abcdef"
ASKING = """module.exports = { description: "a", parameters: { type: "object" }, execute(ctx) {
  const key = ctx.env.OPENAI_API_KEY;
  ctx.log("log " + key);
  return String(ctx.confirm({ title: "Deploy " + key, body: "with " + key }));
} };"""


class BareFrontEnd:
    """A front end written against the protocols alone: no base class of Rienda's."""

    policy = "ask"

    def __init__(self) -> None:
        self.seen: list = []
        self.asked: list[tuple[str, str]] = []

    def emit(self, event) -> None:
        self.seen.append(event)

    def ask(self, title, body, cancel):
        self.asked.append((title, body))
        return Answer(True, "user", "y/N")


def run(rig, monkeypatch, front):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    rig.write_tool("asking", ASKING)
    write_agent(rig.home, "writer", tools=("asking",))
    write_script(rig.workdir, [{"text": "", "tool_calls": [{"name": "asking", "arguments": {}}]}, {"text": "done"}])
    return Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox).conversation("writer").run("go", front)


def test_a_front_end_is_only_a_sink_and_an_asker_and_gets_both_scrubbed(rig, monkeypatch):
    front: FrontEnd = BareFrontEnd()  # the protocol is all a run asks of it
    result = run(rig, monkeypatch, front)
    assert result.reason == "end_turn" and result.tool_calls[0][1].text == "true"
    assert front.asked == [("Deploy [redacted]", "with [redacted]")]  # asked once, scrubbed
    [confirm] = [e for e in front.seen if isinstance(e, Confirm)]
    assert (confirm.title, confirm.answer, confirm.how, confirm.via) == ("Deploy [redacted]", True, "user", "y/N")
    assert all(KEY not in repr(event) for event in front.seen)


@pytest.mark.parametrize(("policy", "answer", "how"), [("allow", True, "auto-approve"), ("deny", False, "auto-deny")])
def test_an_explicit_policy_answers_without_asking(rig, monkeypatch, policy, answer, how):
    front = BareFrontEnd()
    front.policy = policy
    run(rig, monkeypatch, front)
    assert front.asked == []
    assert [(e.answer, e.how) for e in front.seen if isinstance(e, Confirm)] == [(answer, how)]


class Rendering(PersonAsker):
    """A front end that renders events itself: a PersonAsker with ``emit``, nothing kept."""

    def __init__(self) -> None:
        super().__init__(policy="ask", person=None)
        self.lines: list[str] = []

    def emit(self, event) -> None:
        self.lines.append(event.type)


def test_a_rendering_front_end_keeps_no_events_and_with_nobody_to_ask_is_denied(rig, monkeypatch):
    front = Rendering()
    assert not hasattr(front, "events") and not front.interactive
    result = run(rig, monkeypatch, front)
    assert result.tool_calls[0][1].text == "false"
    assert "confirm" in front.lines and front.lines[-1] == "run_end"


def test_ui_is_both_parts_in_one_and_decides_nothing_itself():
    seen = []
    ui = UI(seen.append, policy="deny")
    assert isinstance(ui, Recorder) and isinstance(ui, PersonAsker)
    assert not hasattr(ui, "confirm") and not hasattr(ui, "approvals")  # decided where a run holds both
    ui.emit(Confirm("x", "t", "b", False, "auto-deny"))
    assert ui.events == seen == [Confirm("x", "t", "b", False, "auto-deny")]
    assert NonInteractiveUI(record_events=False).events == []


def test_only_the_run_side_decides_and_it_scrubs_both_ways(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    front = BareFrontEnd()
    held = ScrubbingUI.around(front)
    assert ScrubbingUI.around(held) is held and held.approvals is None
    assert held.confirm("tool:t", f"title {KEY}", "body", CancelToken()) is True
    assert front.asked == [("title [redacted]", "body")]
    assert [(e.title, e.how) for e in front.seen] == [("title [redacted]", "user")]
