"""Sub-agents end to end: the ``agent`` tool, hooks over the whole tree, ``ctx.subagent``,
limits, linked sessions. Real runs: a scripted model per agent, real V8 hooks, real
commands, real session files."""

from __future__ import annotations

import json

import pytest

from rienda_kernel.engine import CancelToken, NonInteractiveUI
from rienda_kernel.engine.events import HookDecision, Log, RunEnd, RunStart, ToolCallStarted, ToolResultReady
from rienda_kernel.engine.runtime import Rienda

from ..helpers.trees import (
    GUARD,
    delegate,
    lead_and_cleaner,
    session_lines,
    shell,
    tracer,
    write_agent,
    write_hook,
    write_script,
)


@pytest.fixture
def engine(rig):
    return Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)


def run(engine, agent="lead", prompt="Go.", ui=None):
    ui = ui or NonInteractiveUI()
    return engine.conversation(agent).run(prompt, ui), ui


def child_session(rig, result, index=0):
    """The session id the lead's ``index``-th agent call recorded."""
    agent_results = [m for m in result.messages if m.role == "tool" and m.name == "agent"]
    return agent_results[index].meta["subagent"]["session_id"]


def test_the_agent_tool_returns_the_childs_last_text_and_the_sessions_are_linked_both_ways(rig, engine):
    write_agent(rig.home, "lead", tools=("agent",))
    write_agent(rig.home, "helper")
    write_script(rig.workdir, "lead", [delegate("helper", "Say hi."), {"text": "Helper said hi."}])
    write_script(rig.workdir, "helper", [{"text": "Hi from the helper."}])
    result, ui = run(engine)
    assert (result.reason, result.text) == ("end_turn", "Helper said hi.")
    [(call, answer)] = result.tool_calls
    assert (answer.text, answer.is_error) == ("Hi from the helper.", False)
    child_id = answer.meta["subagent"]["session_id"]
    assert answer.meta["subagent"]["agent"] == "helper"
    header = session_lines(rig.home, child_id)[0]
    assert (header["agent"], header["parent_session_id"], header["parent_call_id"], header["depth"]) == (
        "helper", result.session_id, call.id, 1)
    child_messages = [l for l in session_lines(rig.home, child_id) if l["type"] == "message"]
    assert [(m["role"], m["text"]) for m in child_messages] == [("user", "Say hi."),
                                                                ("assistant", "Hi from the helper.")]
    # the child's transcript never enters the lead's conversation: only its answer
    lead_messages = [l for l in session_lines(rig.home, result.session_id) if l["type"] == "message"]
    assert "Say hi." not in [m["text"] for m in lead_messages if m["role"] == "user"]
    # events: the child's run between the agent call and its result, tagged with its depth
    kinds = [(type(e).__name__, e.depth) for e in ui.events if isinstance(e, (RunStart, RunEnd, ToolCallStarted,
                                                                              ToolResultReady))]
    assert kinds == [("RunStart", 0), ("ToolCallStarted", 0), ("RunStart", 1), ("RunEnd", 1),
                     ("ToolResultReady", 0), ("RunEnd", 0)]
    child_start = [e for e in ui.events if isinstance(e, RunStart)][1]
    assert (child_start.session_id, child_start.parent_session_id, child_start.parent_call_id) == (
        child_id, result.session_id, call.id)
    assert [e for e in ui.events if isinstance(e, ToolResultReady)][0].subagent_session_id == child_id


def test_the_leads_guard_refuses_the_childs_rm_rf_and_nothing_is_deleted(rig, engine):
    victim = lead_and_cleaner(rig.home, rig.workdir)
    result, ui = run(engine)
    assert result.reason == "end_turn"
    assert (victim / "keep.txt").read_text() == "precious"
    child_id = child_session(rig, result)
    refused = [l for l in session_lines(rig.home, child_id) if l["type"] == "message" and l["role"] == "tool"]
    assert [(m["text"], m["isError"], m["meta"].get("refused_by")) for m in refused] == [
        ("rm -rf refused by the lead's guard", True, "guard")]
    # the decision is in the child's ledger, with its depth
    decisions = [l for l in session_lines(rig.home, child_id) if l["type"] == "hook_decision"]
    assert [(d["hook"], d["point"], d["effect"], d["depth"]) for d in decisions] == [
        ("guard", "beforeToolExecute", "refused", 1)]
    # the lead's ledger has its own decision on the agent call, at depth 0
    lead_decisions = [l for l in session_lines(rig.home, result.session_id) if l["type"] == "hook_decision"]
    assert [(d["hook"], d["point"], d["effect"], d["depth"]) for d in lead_decisions] == [
        ("guard", "beforeToolExecute", "none", 0)]
    assert result.tool_calls[0][1].text == "I could not delete victim."


def test_without_the_leads_hooks_the_same_child_would_delete(rig, engine):
    """The control: the cleaner run alone (no lead) does delete; the guard is what stops it."""
    victim = lead_and_cleaner(rig.home, rig.workdir)
    result, _ = run(engine, "cleaner")
    assert result.reason == "end_turn" and not victim.exists()
