"""Sub-agents end to end: the ``agent`` tool, hooks over the whole tree, ``ctx.subagent``,
limits, linked sessions. Real runs: a scripted model per agent, real V8 hooks, real
commands, real session files."""

from __future__ import annotations

import json

import pytest

from rienda_kernel.engine import CancelToken, ConfigError, NonInteractiveUI
from rienda_kernel.engine.events import Log, RunEnd, RunStart, ToolCallStarted, ToolResultReady
from rienda_kernel.engine.runtime.rienda import Rienda

from ...helpers.trees import (
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
    return agent_results[index].meta.subagent.session_id


def test_S01_S08_the_agent_tool_returns_the_childs_last_text_and_the_sessions_are_linked_both_ways(rig, engine):
    write_agent(rig.home, "lead", tools=("agent",))
    write_agent(rig.home, "helper")
    write_script(rig.workdir, "lead", [delegate("helper", "Say hi."), {"text": "Helper said hi."}])
    write_script(rig.workdir, "helper", [{"text": "Hi from the helper."}])
    result, ui = run(engine)
    assert (result.reason, result.text) == ("end_turn", "Helper said hi.")
    [(call, answer)] = result.tool_calls
    assert (answer.text, answer.is_error) == ("Hi from the helper.", False)
    child_id = answer.meta.subagent.session_id
    assert answer.meta.subagent.agent == "helper"
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


def test_S02_the_leads_guard_refuses_the_childs_rm_rf_and_nothing_is_deleted(rig, engine):
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


def logs(ui):
    return [e.text for e in ui.events if isinstance(e, Log)]


REWRITER = """module.exports = {
  beforeToolExecute(ctx, call) {
    if (call.name === "shell") return { arguments: { command: call.arguments.command.replace("alpha", "beta") } };
  },
  afterToolExecute(ctx, call, result) {
    if (call.name === "shell") return { text: "lead saw: " + result.text };
  },
};"""

CHILD_SEES = """module.exports = {
  beforeToolExecute(ctx, call) { ctx.log("child hook sees " + call.arguments.command); },
  afterToolExecute(ctx, call, result) { ctx.log("child hook sees result " + JSON.stringify(result.text)); },
};"""


def test_S02_the_leads_hooks_rewrite_a_childs_arguments_and_result_and_the_childs_own_hook_runs_after(rig, engine):
    write_hook(rig.home, "rewriter", REWRITER)
    write_hook(rig.home, "own", CHILD_SEES)
    write_agent(rig.home, "lead", tools=("agent",), hooks=("rewriter",))
    write_agent(rig.home, "echoer", tools=("shell",), hooks=("own",))
    write_script(rig.workdir, "lead", [delegate("echoer", "Echo."), {"text": "ok"}])
    write_script(rig.workdir, "echoer", [shell("echo alpha"), {"text": "echoed"}])
    result, ui = run(engine)
    assert result.reason == "end_turn"
    # the child's own hook sees what the lead's hook made of the call, and of the result
    assert logs(ui) == ["child hook sees echo beta", 'child hook sees result "lead saw: beta\\n\\nexit code 0"']
    child_id = child_session(rig, result)
    [tool] = [l for l in session_lines(rig.home, child_id) if l["type"] == "message" and l["role"] == "tool"]
    assert tool["text"] == "lead saw: beta\n\nexit code 0"  # what the child's model read
    assert tool["meta"]["arguments"] == {"command": "echo beta"}
    decisions = [(d["hook"], d["point"], d["effect"]) for d in session_lines(rig.home, child_id)
                 if d["type"] == "hook_decision"]
    assert decisions == [("rewriter", "beforeToolExecute", "rewrote"), ("own", "beforeToolExecute", "none"),
                         ("rewriter", "afterToolExecute", "rewrote"), ("own", "afterToolExecute", "none")]


def test_S02_every_point_of_a_child_runs_the_leads_hooks_then_its_own_and_a_grandchild_is_covered_by_both(rig, engine):
    for name in ("top", "mid", "low"):
        write_hook(rig.home, name, tracer(name))
    write_agent(rig.home, "lead", tools=("agent",), hooks=("top",))
    write_agent(rig.home, "middle", tools=("agent",), hooks=("mid",))
    write_agent(rig.home, "bottom", tools=("shell",), hooks=("low",))
    write_script(rig.workdir, "lead", [delegate("middle", "m"), {"text": "lead done"}])
    write_script(rig.workdir, "middle", [delegate("bottom", "b"), {"text": "middle done"}])
    write_script(rig.workdir, "bottom", [shell("true"), {"text": "bottom done"}])
    result, ui = run(engine)
    assert result.reason == "end_turn" and result.text == "lead done"
    seen = logs(ui)
    low_run = [line for line in seen if line.endswith(" 2")]
    points = ["beforeRun", "beforeModelRequest", "afterModelResponse", "beforeToolExecute", "afterToolExecute",
              "beforeModelRequest", "afterModelResponse", "afterRun"]
    assert low_run == [f"{hook} {point} 2" for point in points for hook in ("top", "mid", "low")]
    mid_run = [line for line in seen if line.endswith(" 1")]
    assert mid_run == [f"{hook} {point} 1" for point in points for hook in ("top", "mid")]
    assert [line for line in seen if line.endswith(" 0")] == [f"top {point} 0" for point in points]
    # afterRun innermost first, and the grandchild's session names the child's
    after_runs = [line for line in seen if "afterRun" in line]
    assert after_runs == ["top afterRun 2", "mid afterRun 2", "low afterRun 2", "top afterRun 1", "mid afterRun 1",
                          "top afterRun 0"]
    middle_id = child_session(rig, result)
    middle_tool = [l for l in session_lines(rig.home, middle_id) if l["type"] == "message" and l["role"] == "tool"]
    bottom_id = middle_tool[0]["meta"]["subagent"]["session_id"]
    header = session_lines(rig.home, bottom_id)[0]
    assert (header["agent"], header["parent_session_id"], header["depth"]) == ("bottom", middle_id, 2)


def test_S02_a_hook_declared_by_both_lead_and_child_runs_once_in_the_leads_place(rig, engine):
    write_hook(rig.home, "top", tracer("top"))
    write_hook(rig.home, "own", tracer("own"))
    write_agent(rig.home, "lead", tools=("agent",), hooks=("top",))
    write_agent(rig.home, "helper", hooks=("own", "top"))
    write_script(rig.workdir, "lead", [delegate("helper", "h"), {"text": "ok"}])
    write_script(rig.workdir, "helper", [{"text": "hi"}])
    result, ui = run(engine)
    assert [line for line in logs(ui) if "beforeRun 1" in line] == ["top beforeRun 1", "own beforeRun 1"]


SUBAGENT_PROBE = """module.exports = {
  beforeRun(ctx) { ctx.log(typeof ctx.subagent + " " + JSON.stringify(ctx.subagent)); },
};"""


def test_S04_ctx_subagent_is_undefined_at_the_top_and_describes_the_child_inside(rig, engine):
    write_hook(rig.home, "probe", SUBAGENT_PROBE)
    write_agent(rig.home, "lead", tools=("agent",), hooks=("probe",))
    write_agent(rig.home, "helper")
    write_script(rig.workdir, "lead", [delegate("helper", "h"), {"text": "ok"}])
    write_script(rig.workdir, "helper", [{"text": "hi"}])
    result, ui = run(engine)
    top, inside = logs(ui)
    assert top == "undefined undefined"
    kind, value = inside.split(" ", 1)
    call_id = result.tool_calls[0][0].id
    assert (kind, json.loads(value)) == ("object", {"agent": "helper", "depth": 1,
                                                    "parentSessionId": result.session_id, "callId": call_id})


WATCH_TOP_ONLY = """module.exports = {
  beforeToolExecute(ctx, call) {
    if (ctx.subagent) return;  // only the top-level run
    if (call.name === "shell") return { allow: false, reason: "the lead itself may not use the shell" };
  },
};"""


def test_S04_a_hook_can_watch_only_the_top_level_run(rig, engine):
    write_hook(rig.home, "toponly", WATCH_TOP_ONLY)
    write_agent(rig.home, "lead", tools=("agent", "shell"), hooks=("toponly",))
    write_agent(rig.home, "helper", tools=("shell",))
    write_script(rig.workdir, "lead", [shell("echo lead"), delegate("helper", "h"), {"text": "ok"}])
    write_script(rig.workdir, "helper", [shell("echo child"), {"text": "child ran"}])
    result, _ = run(engine)
    assert [(c.name, r.text) for c, r in result.tool_calls] == [("shell", "the lead itself may not use the shell"),
                                                                 ("agent", "child ran")]
    child = [l for l in session_lines(rig.home, child_session(rig, result)) if l.get("role") == "tool"]
    assert [m["text"] for m in child] == ["child\n\nexit code 0"]


def test_S03_the_agent_call_itself_passes_the_leads_before_tool_execute_which_may_refuse_or_rewrite_it(rig, engine):
    write_hook(rig.home, "gate", """module.exports = {
      beforeToolExecute(ctx, call) {
        if (call.name !== "agent") return;
        if (call.arguments.agent === "forbidden") return { allow: false, reason: "no delegating to forbidden" };
        return { arguments: { ...call.arguments, prompt: call.arguments.prompt + " Be brief." } };
      },
    };""")
    write_agent(rig.home, "lead", tools=("agent",), hooks=("gate",))
    write_agent(rig.home, "helper")
    write_agent(rig.home, "forbidden")
    write_script(rig.workdir, "lead", [delegate("forbidden", "x"), delegate("helper", "Say hi."), {"text": "ok"}])
    write_script(rig.workdir, "helper", [{"text": "hi"}])
    result, _ = run(engine)
    (_, refused), (_, answered) = result.tool_calls
    assert (refused.text, refused.is_error, refused.meta.subagent) == ("no delegating to forbidden", True, None)
    child_id = answered.meta.subagent.session_id
    first = [l for l in session_lines(rig.home, child_id) if l["type"] == "message"][0]
    assert first["text"] == "Say hi. Be brief."
    assert not [p for p in (rig.home / "sessions").iterdir() if '"forbidden"' in p.read_text().splitlines()[0]]


def test_S06_agents_limits_which_agents_a_lead_may_start_and_the_model_sees_them_as_an_enum(rig, engine):
    from rienda_kernel.engine.providers import PROVIDERS, Provider, TextChunk, ToolCallChunk
    from rienda_kernel.engine.sessions.messages import ToolCall

    class Probe(Provider):
        def __init__(self):
            self.requests = []

        def stream(self, request, cancel):
            self.requests.append(request)
            if len(self.requests) == 1:
                yield ToolCallChunk(ToolCall("c1", "agent", {"agent": "helper", "prompt": "p"}))
                yield ToolCallChunk(ToolCall("c2", "agent", {"agent": "cleaner", "prompt": "p"}))
            else:
                yield TextChunk("ok")

    probe = Probe()
    PROVIDERS["probe"] = lambda config: probe
    try:
        write_agent(rig.home, "lead", tools=("agent",), agents=("cleaner",))
        (rig.home / "agents" / "lead.md").write_text(
            (rig.home / "agents" / "lead.md").read_text().replace("scripted/lead.yaml", "probe/m"))
        write_agent(rig.home, "cleaner", description="Deletes what is not needed.")
        write_agent(rig.home, "helper")
        write_script(rig.workdir, "cleaner", [{"text": "cleaned"}])
        result, _ = run(engine)
    finally:
        del PROVIDERS["probe"]
    [spec] = probe.requests[0].tools
    assert spec.name == "agent" and spec.parameters["properties"]["agent"]["enum"] == ["cleaner"]
    assert "- cleaner: Deletes what is not needed." in spec.description
    (_, outside), (_, inside) = result.tool_calls
    assert outside.is_error and "'helper' is not one of ['cleaner']" in outside.text
    assert (inside.text, inside.is_error) == ("cleaned", False)
    # the model read the error and went on
    assert result.reason == "end_turn" and probe.requests[1].messages[2].text == outside.text


def test_S06_an_unknown_agent_is_an_error_result_the_model_can_recover_from(rig, engine):
    write_agent(rig.home, "lead", tools=("agent",))
    write_agent(rig.home, "helper")
    write_script(rig.workdir, "lead", [delegate("ghost", "p"), delegate("helper", "p"), {"text": "ok"}])
    write_script(rig.workdir, "helper", [{"text": "hi"}])
    result, _ = run(engine)
    (_, ghost), (_, helper) = result.tool_calls
    assert ghost.is_error and "'ghost' is not one of" in ghost.text and "'helper'" in ghost.text
    assert (helper.text, result.reason) == ("hi", "end_turn")


def test_S06_agents_naming_an_agent_that_does_not_exist_fails_the_run_before_any_model_call(rig, engine):
    path = write_agent(rig.home, "lead", tools=("agent",), agents=("ghost",))
    result, _ = run(engine)
    assert result.reason == "error"
    assert result.error.startswith(f"{path}: agents: lists 'ghost', which cannot be started: no agent 'ghost'")
    assert not (rig.home / "sessions").exists()


@pytest.mark.parametrize("where, expected", [
    ("config", "it would run at depth 2, past the limit of 1 (max_depth: 1 in config.yaml)"),
    ("lead", "it would run at depth 2, past the limit of 1 (max_depth: 1 in {home}/agents/lead.md)"),
    ("child", "it would run at depth 2, past the limit of 1 (max_depth: 0 in {home}/agents/middle.md, at depth 1)"),
])
def test_S07_a_call_past_max_depth_is_an_error_result_naming_the_limit(rig, engine, where, expected):
    if where == "config":
        (rig.home / "config.yaml").write_text("max_depth: 1\n")
    write_agent(rig.home, "lead", tools=("agent",), max_depth=1 if where == "lead" else None)
    write_agent(rig.home, "middle", tools=("agent",), max_depth=0 if where == "child" else None)
    write_agent(rig.home, "bottom")
    write_script(rig.workdir, "lead", [delegate("middle", "m"), {"text": "lead done"}])
    write_script(rig.workdir, "middle", [delegate("bottom", "b"), {"text": "middle done"}])
    write_script(rig.workdir, "bottom", [{"text": "bottom done"}])
    result, _ = run(engine)
    assert (result.reason, result.tool_calls[0][1].text) == ("end_turn", "middle done")
    middle = [l for l in session_lines(rig.home, child_session(rig, result))
              if l["type"] == "message" and l["role"] == "tool"]
    assert middle[0]["isError"] and middle[0]["text"] == "cannot start sub-agent 'bottom': " + expected.format(
        home=rig.home)


def test_S07_the_default_depth_is_three_levels_below_the_top(rig, engine):
    write_agent(rig.home, "lead", tools=("agent",))
    write_script(rig.workdir, "lead", [delegate("lead", "again"), {"text": "done"}] * 4)
    result, _ = run(engine)
    assert result.reason == "end_turn"
    depths = sorted(session_lines(rig.home, info.id)[0].get("depth", 0) for info in engine.sessions())
    assert depths == [0, 1, 2, 3]
    deepest = next(info.id for info in engine.sessions() if session_lines(rig.home, info.id)[0].get("depth") == 3)
    results = [l for l in session_lines(rig.home, deepest) if l["type"] == "message" and l["role"] == "tool"]
    assert "past the limit of 3 (max_depth: 3, the default)" in results[0]["text"]


def test_S01_a_child_ending_in_error_is_an_error_result_with_its_message(rig, engine):
    write_hook(rig.home, "top", tracer("top"))
    write_agent(rig.home, "lead", tools=("agent",), hooks=("top",))
    write_agent(rig.home, "helper")
    write_script(rig.workdir, "lead", [delegate("helper", "p"), {"text": "recovered"}])
    write_script(rig.workdir, "helper", [{"error": "the vendor is down"}])
    result, ui = run(engine)
    [(_, answer)] = result.tool_calls
    assert answer.is_error and answer.text == "sub-agent helper failed: scripted failure: the vendor is down"
    assert answer.meta.subagent.agent == "helper"
    assert (result.reason, result.text) == ("end_turn", "recovered")
    assert "top afterRun 1" in logs(ui)
    assert session_lines(rig.home, answer.meta.subagent.session_id)[-1]["reason"] == "error"


def test_S01_a_child_whose_setup_fails_is_an_error_result_and_saves_no_session(rig, engine):
    write_agent(rig.home, "lead", tools=("agent",))
    write_agent(rig.home, "helper", hooks=("ghost",))
    write_script(rig.workdir, "lead", [delegate("helper", "p"), {"text": "ok"}])
    result, _ = run(engine)
    [(_, answer)] = result.tool_calls
    assert answer.is_error and answer.text.startswith("sub-agent helper failed: ")
    assert "declares hook 'ghost', which does not exist" in answer.text
    assert [info.agent for info in engine.sessions()] == ["lead"]


ASKING_GUARD = """module.exports = {
  beforeToolExecute(ctx, call) {
    if (call.name === "shell" && /\\brm\\s+-rf\\b/.test(call.arguments.command || "")) {
      if (!ctx.confirm({ title: "Dangerous command", body: call.arguments.command })) {
        return { allow: false, reason: "refused by the user" };
      }
    }
  },
};"""


class Person(NonInteractiveUI):
    """A person who allows every request "for this session", and remembers being asked."""

    def __init__(self):
        super().__init__()
        self.asked = []

    def ask(self, title, body, cancel):
        from rienda_kernel.engine.ui import FOR_THIS_SESSION

        self.asked.append((title, body))
        return True, FOR_THIS_SESSION


def test_S05_a_childs_confirm_reaches_the_leads_person_titled_with_its_name_and_an_allow_for_the_session_holds_for_the_tree(
        rig, engine):
    from rienda_kernel.engine.events import Confirm
    from rienda_kernel.engine.ui import ALLOWED_EARLIER, FOR_THIS_SESSION

    write_hook(rig.home, "guard", ASKING_GUARD)
    write_agent(rig.home, "lead", tools=("agent", "shell"), hooks=("guard",))
    write_agent(rig.home, "cleaner", tools=("shell",))
    (rig.workdir / "junk").mkdir()
    write_script(rig.workdir, "lead", [delegate("cleaner", "c"), shell("rm -rf junk"), {"text": "done"},
                                       delegate("cleaner", "again"), {"text": "done again"}])
    write_script(rig.workdir, "cleaner", [shell("rm -rf junk"), {"text": "cleaned"}])
    person = Person()
    conversation = engine.conversation("lead")
    result = conversation.run("Clean.", person)
    assert result.reason == "end_turn"
    # asked once, in the child, titled with the sub-agent's name; the lead's identical request was allowed earlier
    assert person.asked == [("Dangerous command (sub-agent cleaner)", "rm -rf junk")]
    confirms = [(e.title, e.how, e.depth) for e in person.events if isinstance(e, Confirm)]
    assert confirms == [("Dangerous command", FOR_THIS_SESSION, 1), ("Dangerous command", ALLOWED_EARLIER, 0)]
    # the approval is the lead session's: recorded there, and a later child of the resumed session is not asked
    approvals = [l for l in session_lines(rig.home, result.session_id) if l["type"] == "approval"]
    assert approvals == [{"type": "approval", "title": "Dangerous command", "body": "rm -rf junk"}]
    later = Person()
    resumed = engine.conversation(session_id=result.session_id)
    assert resumed.run("Again.", later).text == "done again"
    assert later.asked == []
    assert [e.how for e in later.events if isinstance(e, Confirm)] == [ALLOWED_EARLIER]


@pytest.mark.parametrize("policy, answer, how", [("allow", True, "auto-approve"), ("deny", False, "auto-deny"),
                                                 ("ask", False, "default-deny")])
def test_S05_a_childs_confirm_in_a_batch_run_is_answered_by_the_policy(rig, engine, policy, answer, how):
    from rienda_kernel.engine.events import Confirm

    write_hook(rig.home, "guard", ASKING_GUARD)
    write_agent(rig.home, "lead", tools=("agent",), hooks=("guard",))
    write_agent(rig.home, "cleaner", tools=("shell",))
    victim = rig.workdir / "victim"
    victim.mkdir()
    write_script(rig.workdir, "lead", [delegate("cleaner", "c"), {"text": "done"}])
    write_script(rig.workdir, "cleaner", [shell("rm -rf victim"), {"text": "cleaned"}])
    result, ui = run(engine, ui=NonInteractiveUI(policy=policy))
    assert [(e.answer, e.how, e.depth) for e in ui.events if isinstance(e, Confirm)] == [(answer, how, 1)]
    assert victim.exists() is not answer


def test_S01_an_interrupt_during_a_grandchilds_tool_stops_the_whole_tree_after_run_innermost_first(rig, engine):
    import threading

    from rienda_kernel.engine.events import Output

    for name in ("top", "mid", "low"):
        write_hook(rig.home, name, tracer(name))
    write_agent(rig.home, "lead", tools=("agent",), hooks=("top",))
    write_agent(rig.home, "middle", tools=("agent",), hooks=("mid",))
    write_agent(rig.home, "bottom", tools=("shell",), hooks=("low",))
    write_script(rig.workdir, "lead", [delegate("middle", "m"), {"text": "never"}])
    write_script(rig.workdir, "middle", [delegate("bottom", "b"), {"text": "never"}])
    write_script(rig.workdir, "bottom", [shell("echo running; sleep 60"), {"text": "never"}])
    running = threading.Event()
    ui = NonInteractiveUI(sink=lambda e: running.set() if isinstance(e, Output) and "running" in e.text else None)
    cancel, box = CancelToken(), {}
    thread = threading.Thread(target=lambda: box.setdefault("result", engine.conversation("lead").run("go", ui, cancel)))
    thread.start()
    assert running.wait(60), "the grandchild's command never started"
    cancel.cancel()
    thread.join(60)
    assert not thread.is_alive(), "the tree did not stop"
    result = box["result"]
    assert result.reason == "interrupted"
    after_runs = [line for line in logs(ui) if "afterRun" in line]
    assert after_runs == ["top afterRun 2", "mid afterRun 2", "low afterRun 2", "top afterRun 1", "mid afterRun 1",
                          "top afterRun 0"]
    ends = [(e.depth, e.reason) for e in ui.events if isinstance(e, RunEnd)]
    assert ends == [(2, "interrupted"), (1, "interrupted"), (0, "interrupted")]
    # every level's session ends interrupted, and stays linked
    lead_tool = [m for m in result.messages if m.role == "tool"][0]
    assert lead_tool.text == "interrupted before the tool finished"
    middle_id = lead_tool.meta.subagent.session_id
    middle = session_lines(rig.home, middle_id)
    bottom_id = [l for l in middle if l["type"] == "message" and l["role"] == "tool"][0]["meta"]["subagent"]["session_id"]
    for session_id in (result.session_id, middle_id, bottom_id):
        assert session_lines(rig.home, session_id)[-1] == {"type": "run_end", "reason": "interrupted", "error": None}


def test_S08_a_sub_agents_session_cannot_be_resumed_alone_and_is_never_last(rig, engine):
    write_agent(rig.home, "lead", tools=("agent",))
    write_agent(rig.home, "helper")
    write_script(rig.workdir, "lead", [delegate("helper", "p"), {"text": "ok"}])
    write_script(rig.workdir, "helper", [{"text": "hi"}, {"text": "resumed"}])
    result, _ = run(engine)
    child_id = child_session(rig, result)
    assert engine.resolve_session("last") == result.session_id
    assert [info.parent_session_id for info in engine.sessions()] == [None, result.session_id]
    before = (rig.home / "sessions" / f"{child_id}.jsonl").read_text()
    alone = engine.conversation(session_id=child_id).run("again", NonInteractiveUI())
    assert alone.reason == "error"
    assert alone.error == (f"session {child_id} is a sub-agent's run, started by session {result.session_id}: "
                           "resume that session instead")
    assert (rig.home / "sessions" / f"{child_id}.jsonl").read_text() == before


def test_secrets_in_a_childs_output_are_scrubbed_from_every_session_and_event(rig, engine, monkeypatch):
    secret = "sk-live-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    write_hook(rig.home, "top", tracer("top"))
    write_agent(rig.home, "lead", tools=("agent",), hooks=("top",))
    write_agent(rig.home, "leaker", tools=("shell",))
    write_script(rig.workdir, "lead", [delegate("leaker", "Find the key."), {"text": "ok"}])
    write_script(rig.workdir, "leaker", [shell("echo key=$OPENAI_API_KEY"), {"text": f"The key is {secret}."}])
    result, ui = run(engine)
    assert result.reason == "end_turn"
    assert result.tool_calls[0][1].text == f"The key is {secret}."  # the lead's model may read it...
    for path in (rig.home / "sessions").iterdir():  # ...no file holds it
        assert secret not in path.read_text(), path.name
    assert len(list((rig.home / "sessions").iterdir())) == 2
    assert not [e for e in ui.events if secret in json.dumps(e.to_dict())]  # ...nor any event
    assert [e for e in ui.events if e.depth == 1 and "[redacted]" in json.dumps(e.to_dict())]


def test_S09_replay_of_the_lead_reuses_the_childs_answer_and_with_run_tools_replays_the_child_through_the_hooks(rig, engine):
    lead_and_cleaner(rig.home, rig.workdir)
    result, _ = run(engine)
    child_id = child_session(rig, result)
    same = engine.replay(result.session_id)
    assert not same.changed
    [plain] = same.children  # the child's session replayed too (its tools not run again), under its call
    assert (plain.session_id, plain.parent_call_id, same.calls[0].child) == (child_id, same.calls[0].id, plain)
    assert [(c.name, c.now_result.text) for c in same.calls] == [("agent", "I could not delete victim.")]
    deep = engine.replay(result.session_id, run_tools=True)
    assert not deep.changed, deep.lines()
    [child] = deep.children
    assert (child.session_id, child.hooks) == (child_id, ["guard"])
    assert [(c.name, c.now_refused_by) for c in child.calls] == [("shell", "guard")]
    # the guard taken away from the lead: the child's rm -rf would now run, and the replay says so
    write_hook(rig.home, "guard", "module.exports = { beforeToolExecute() {} };")
    now = engine.replay(result.session_id, run_tools=True)
    assert now.changed and not now.calls[0].differences
    assert now.children[0].calls[0].differences == ["no longer refused (was refused by hook guard)"]
    assert "    ≠ shell [call_1_1]" in now.lines()
    assert not (rig.workdir / "victim").exists()  # --run-tools runs the child's tools again: unguarded, rm -rf ran


def test_S09_replay_of_a_childs_own_session_runs_its_leads_hooks_first_with_ctx_subagent(rig, engine):
    lead_and_cleaner(rig.home, rig.workdir, child_hooks=("probe",))
    write_hook(rig.home, "probe", """module.exports = {
      beforeToolExecute(ctx, call) { ctx.log("probe " + JSON.stringify(ctx.subagent)); } };""")
    result, _ = run(engine)
    child_id = child_session(rig, result)
    ui = NonInteractiveUI()
    report = engine.replay(child_id, ui=ui)
    assert report.hooks == ["guard", "probe"] and not report.changed
    assert [c.now_refused_by for c in report.calls] == ["guard"]
    # the probe never ran (the guard refused first); with the guard gone it runs and sees ctx.subagent
    write_hook(rig.home, "guard", "module.exports = { beforeToolExecute() {} };")
    report = engine.replay(child_id, ui=ui)
    [line] = logs(ui)
    assert json.loads(line[len("probe "):]) == {"agent": "cleaner", "depth": 1, "parentSessionId": result.session_id,
                                                "callId": result.tool_calls[0][0].id}
    # --hooks chooses the chain outright
    assert engine.replay(child_id, hooks=["probe"]).hooks == ["probe"]


@pytest.mark.parametrize("line, problem", [
    ("agents: helper", "agents must be a list of names, got a string"),
    ("agents: [helper, helper]", "agents lists 'helper' twice"),
    ("max_depth: -1", "max_depth must be a whole number of sub-agent levels (0 or more), got the number -1"),
    ("max_depth: yes", "max_depth must be a whole number of sub-agent levels (0 or more), got the boolean True"),
])
def test_agents_and_max_depth_in_front_matter_are_checked_with_file_and_line(rig, engine, line, problem):
    path = rig.home / "agents" / "lead.md"
    path.parent.mkdir(parents=True)
    path.write_text(f"---\nmodel: scripted/lead.yaml\ntools: [agent]\n{line}\n---\nLead.\n")
    result, _ = run(engine)
    assert result.reason == "error" and result.error.startswith(f"{path}:4: {problem}")


def test_max_depth_in_config_yaml_is_checked(rig, engine):
    (rig.home / "config.yaml").write_text("max_depth: deep\n")
    write_agent(rig.home, "lead", tools=("agent",))
    result, _ = run(engine)
    assert result.error == (f"{rig.home / 'config.yaml'}:1: max_depth must be a whole number of sub-agent levels "
                            "(0 or more), got the string 'deep'")


def test_S07_max_depth_zero_means_no_sub_agents(rig, engine):
    write_agent(rig.home, "lead", tools=("agent",), max_depth=0)
    write_agent(rig.home, "helper")
    write_script(rig.workdir, "lead", [delegate("helper", "p"), {"text": "alone"}])
    result, _ = run(engine)
    [(_, answer)] = result.tool_calls
    assert answer.is_error and "past the limit of 0" in answer.text
    assert [info.agent for info in engine.sessions()] == ["lead"]


def test_the_agent_tool_outside_a_run_says_so(rig, engine):
    result = engine.call_tool(engine.find_tool("agent", NonInteractiveUI()), {"agent": "helper", "prompt": "p"},
                              NonInteractiveUI())
    assert (result.text, result.is_error) == ("the agent tool starts a sub-agent only during an agent's run", True)


def test_S06_an_empty_agents_list_lets_the_lead_start_no_agent(rig, engine):
    path = write_agent(rig.home, "lead", tools=("agent",), agents=())
    write_agent(rig.home, "helper")
    write_script(rig.workdir, "lead", [delegate("helper", "p"), {"text": "alone"}])
    result, _ = run(engine)
    [(_, answer)] = result.tool_calls
    assert (answer.text, answer.is_error) == (f"agent lead may not start agent 'helper': its agents are none "
                                              f"(agents: in {path})", True)
    assert result.text == "alone"


def test_S09_a_folder_of_recorded_sessions_replays_a_child_through_its_leads_hooks_found_beside_it(rig, engine,
                                                                                                   tmp_path):
    """(The pytest plugin's case: sessions copied out of the home, a lead and its child.)"""
    lead_and_cleaner(rig.home, rig.workdir)
    result, _ = run(engine)
    child_id = child_session(rig, result)
    folder = tmp_path / "recorded"
    (rig.home / "sessions").rename(folder)
    child = engine.replay_file(folder / f"{child_id}.jsonl")
    assert child.hooks == ["guard"] and not child.changed
    lead = engine.replay_file(folder / f"{result.session_id}.jsonl", run_tools=True)
    assert [c.session_id for c in lead.children] == [child_id] and not lead.changed
    (folder / f"{result.session_id}.jsonl").unlink()
    with pytest.raises(ConfigError) as lost:
        engine.replay_file(folder / f"{child_id}.jsonl")
    assert f"its lead's session {result.session_id} cannot be read" in str(lost.value)
    assert "choose the chain with --hooks" in str(lost.value)
