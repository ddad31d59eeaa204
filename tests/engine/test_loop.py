"""The agent loop end to end: real V8, real session files, the scripted model.

A "probe" provider (a stand-in for a model vendor, registered like any provider) records
the requests a model would receive, to show what the model sees.
"""

from __future__ import annotations

import json
import threading

import pytest

from rienda_kernel.engine import CancelToken, NonInteractiveUI
from rienda_kernel.engine.events import (
    Confirm,
    Diagnostic,
    Log,
    MessageSaved,
    Notify,
    Output,
    RunEnd,
    RunStart,
    TextDelta,
    ThinkingDelta,
    ToolCallStarted,
    ToolResultReady,
)
from rienda_kernel.engine.providers import (
    PROVIDERS,
    Provider,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    VendorStateChunk,
)
from rienda_kernel.engine.sessions.messages import MessageMeta, ToolCall
from rienda_kernel.engine.runtime.rienda import Rienda

from ..helpers.extensions import WORD_COUNT
from ..helpers.homes import session_lines, write_agent, write_script


class ProbeProvider(Provider):
    """Answers from a list and records every request (what the model would see)."""

    def __init__(self):
        self.requests = []
        self.answers = []

    def stream(self, request, cancel):
        self.requests.append(request)
        answer = self.answers[len(self.requests) - 1]
        yield TextChunk(answer.get("text", ""))
        for call in answer.get("calls", []):
            yield ToolCallChunk(ToolCall(*call))


@pytest.fixture
def probe():
    provider = ProbeProvider()
    PROVIDERS["probe"] = lambda config: provider
    yield provider
    del PROVIDERS["probe"]


@pytest.fixture
def engine(rig):
    rig.write_tool("word-count", WORD_COUNT)
    (rig.workdir / "notes.txt").write_text("one two three four")
    return Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)


def agent(rig, name="writer", model="scripted/script.yaml", tools=("word-count",), hooks=(), body="Be careful."):
    """This module's agent: ``writer`` with the word-count tool, unless told otherwise."""
    return write_agent(rig.home, name, tools, hooks, model, description="A test agent.", body=body)


COUNT_SCRIPT = [
    {"text": "Let me count.", "tool_calls": [{"name": "word-count", "arguments": {"path": "notes.txt"}}]},
    {"text": "There are 4 words."},
]


def test_a_run_calls_the_tool_and_saves_every_message(rig, engine):
    agent(rig)
    write_script(rig.workdir, COUNT_SCRIPT)
    ui = NonInteractiveUI()
    result = engine.conversation("writer").run("How many words?", ui)
    assert result.reason == "end_turn" and result.error is None
    assert result.text == "There are 4 words."
    [(call, answer)] = result.tool_calls
    assert (call.name, call.arguments, answer.text, answer.is_error) == ("word-count", {"path": "notes.txt"}, "4", False)
    lines = session_lines(rig.home, result.session_id)
    assert lines[0]["type"] == "session" and lines[0]["agent"] == "writer" and lines[0]["model"] == "scripted/script.yaml"
    assert [(l["type"], l.get("role")) for l in lines[1:]] == [
        ("message", "user"), ("message", "assistant"), ("message", "tool"), ("message", "assistant"),
        ("run_end", None)]
    types = [type(e) for e in ui.events]
    assert types[0] is RunStart and types[-1] is RunEnd
    assert TextDelta in types and MessageSaved in types and ToolCallStarted in types and ToolResultReady in types
    assert "".join(e.text for e in ui.events if isinstance(e, TextDelta)) == "Let me count.There are 4 words."
    assert ui.events[0] == RunStart(result.session_id, "writer", "scripted/script.yaml")
    end = ui.events[-1]
    assert isinstance(end, RunEnd) and (end.reason, end.error) == ("end_turn", None)
    assert end.context == result.context and end.context.tokens > 0  # how full the window is
    assert lines[-1] == {"type": "run_end", "reason": "end_turn", "error": None}


def test_text_streams_in_small_chunks(rig, engine):
    agent(rig)
    write_script(rig.workdir, [{"text": "one two three four five six"}])
    ui = NonInteractiveUI()
    engine.conversation("writer").run("go", ui)
    assert len([e for e in ui.events if isinstance(e, TextDelta)]) == 6


HOOKS_ALL_POINTS = """module.exports = {
  beforeRun(ctx, e) { ctx.log("beforeRun " + JSON.stringify(e)); },
  beforeModelRequest(ctx, r) {
    ctx.log("beforeModelRequest " + r.model + " " + JSON.stringify(r.messages.map(m => m.role)));
    return { system: r.system + " [turn note]" };
  },
  afterModelResponse(ctx, r) {
    ctx.log("afterModelResponse " + JSON.stringify(r.toolCalls.map(c => c.name)));
    return { text: r.text.replace(/\\b\\d{16}\\b/g, "[redacted]") };
  },
  beforeToolExecute(ctx, call) { return { arguments: { path: "other.txt" } }; },
  afterToolExecute(ctx, call, result) { return { text: "words: " + result.text }; },
  afterRun(ctx, e) { ctx.notify({ title: "done", body: e.reason }); },
};"""


def test_every_hook_point_acts_end_to_end(rig, engine, probe):
    rig.write_hook("all", HOOKS_ALL_POINTS)
    agent(rig, model="probe/m1", hooks=("all",))
    (rig.workdir / "other.txt").write_text("a b")
    probe.answers = [{"text": "card 4111111111111111", "calls": [("c1", "word-count", {"path": "notes.txt"})]},
                     {"text": "done"}]
    ui = NonInteractiveUI()
    result = engine.conversation("writer").run("count", ui)
    assert result.reason == "end_turn"
    logs = [e.text for e in ui.events if isinstance(e, Log)]
    assert logs[0].startswith("beforeRun ") and json.loads(logs[0][len("beforeRun "):]) == {
        "sessionId": result.session_id, "agentId": "writer", "modelId": "probe/m1", "prompt": "count", "context": ""}
    assert logs[1:] == ['beforeModelRequest probe/m1 ["user"]', 'afterModelResponse ["word-count"]',
                        'beforeModelRequest probe/m1 ["user","assistant","tool"]', "afterModelResponse []"]
    # system: for the turn only, rebuilt from the agent's own each turn, never saved
    assert [r.system for r in probe.requests] == ["Be careful. [turn note]"] * 2
    text = (rig.home / "sessions" / f"{result.session_id}.jsonl").read_text()
    assert "turn note" not in text and "4111111111111111" not in text
    # afterModelResponse rewrote what was saved and what the model sees next
    assert probe.requests[1].messages[1].text == "card [redacted]"
    # arguments rewritten by beforeToolExecute reach the tool; afterToolExecute rewrote its result
    call_event = next(e for e in ui.events if isinstance(e, ToolCallStarted))
    assert call_event.arguments == {"path": "other.txt"}
    assert probe.requests[1].messages[2].text == "words: 2"
    assert [e for e in ui.events if isinstance(e, Notify)][0].body == "end_turn"


def test_a_refused_call_does_not_run_and_the_model_gets_the_reason(rig, engine):
    rig.write_hook("deny", 'module.exports = { beforeToolExecute() { return { allow: false, reason: "no counting" }; },'
                           ' afterToolExecute(ctx) { ctx.log("after ran"); } };')
    agent(rig, hooks=("deny",))
    write_script(rig.workdir, COUNT_SCRIPT)
    ui = NonInteractiveUI()
    result = engine.conversation("writer").run("count", ui)
    [(call, answer)] = result.tool_calls
    assert (answer.text, answer.is_error) == ("no counting", True)
    assert next(e for e in ui.events if isinstance(e, ToolCallStarted)).refused_by == "deny"
    assert not [e for e in ui.events if isinstance(e, Log)]
    records = [l for l in session_lines(rig.home, result.session_id) if l["type"] == "hook_decision"]
    assert [(r["hook"], r["point"], r["effect"], r["reason"]) for r in records] == [
        ("deny", "beforeToolExecute", "refused", "no counting")]


def test_a_throwing_hook_is_reported_and_the_run_continues(rig, engine):
    rig.write_hook("broken", 'module.exports = { beforeModelRequest() { throw new Error("bad hook"); } };')
    agent(rig, hooks=("broken",))
    write_script(rig.workdir, COUNT_SCRIPT)
    ui = NonInteractiveUI()
    result = engine.conversation("writer").run("count", ui)
    assert result.reason == "end_turn"
    assert any("bad hook" in e.message for e in ui.events if isinstance(e, Diagnostic))


def test_H04_hooks_run_in_the_declared_order_and_an_agent_without_hooks_runs_none(rig, engine):
    rig.write_hook("a", 'module.exports = { beforeRun(ctx) { ctx.log("a"); } };')
    rig.write_hook("b", 'module.exports = { beforeRun(ctx) { ctx.log("b"); } };')
    write_script(rig.workdir, [{"text": "hi"}] * 3)
    for hooks, expected in ((("b", "a"), ["b", "a"]), (("a", "b"), ["a", "b"]), ((), [])):
        agent(rig, hooks=hooks)
        ui = NonInteractiveUI()
        engine.conversation("writer").run("hi", ui)
        assert [e.text for e in ui.events if isinstance(e, Log)] == expected


@pytest.mark.parametrize("kind", ["hook", "tool"])
def test_H05_a_declared_hook_or_tool_that_does_not_exist_fails_the_run_before_any_model_call(rig, engine, probe, kind):
    path = agent(rig, model="probe/m", **({"hooks": ("ghost",)} if kind == "hook" else {"tools": ("ghost",)}))
    ui = NonInteractiveUI()
    result = engine.conversation("writer").run("hi", ui)
    assert result.reason == "error"
    assert str(path) in result.error and f"declares {kind} 'ghost', which does not exist" in result.error
    assert probe.requests == []
    assert not (rig.home / "sessions").exists() or not list((rig.home / "sessions").iterdir())


def test_H05_every_missing_tool_and_hook_is_said_at_once_with_the_closest_name(rig, engine, probe):
    """Several typos in an agent file: one error naming each, with "did you mean" where a
    tool or hook of the home (or a built-in) is close (issue 40)."""
    rig.write_tool("word-count", 'module.exports = { description: "w", parameters: {type: "object"}, '
                                 'execute: () => "3" };')
    rig.write_hook("guard", "module.exports = { beforeRun() {} };")
    path = agent(rig, model="probe/m", tools=("wrod-count", "reed"), hooks=("gaurd",))
    result = engine.conversation("writer").run("hi", NonInteractiveUI())
    assert result.reason == "error" and result.error.startswith(f"{path}: declares tool 'wrod-count'")
    for name, closest in (("wrod-count", "word-count"), ("reed", "read"), ("gaurd", "guard")):
        assert f"{name!r}, which does not exist (no " in result.error and f"(did you mean {closest!r}?)" in result.error
    assert probe.requests == []


def test_a_hook_skipped_for_a_diagnostic_fails_the_run_saying_why(rig, engine):
    rig.write_hook("typo", "module.exports = { beforeToolExec() {} };")
    agent(rig, hooks=("typo",))
    result = engine.conversation("writer").run("hi", NonInteractiveUI())
    assert "declares hook 'typo'" in result.error and "exports none of the hook points" in result.error


def test_an_exhausted_script_ends_the_run_with_error(rig, engine):
    rig.write_hook("audit", 'module.exports = { afterRun(ctx, e) { ctx.log("afterRun " + e.reason); } };')
    agent(rig, hooks=("audit",))
    write_script(rig.workdir, COUNT_SCRIPT[:1])
    ui = NonInteractiveUI()
    result = engine.conversation("writer").run("count", ui)
    assert result.reason == "error"
    assert "is exhausted: it has 1 response(s) and this is turn 2" in result.error
    assert [e.text for e in ui.events if isinstance(e, Log)] == ["afterRun error"]
    assert [(m.role, m.text) for m in result.messages][-1] == ("tool", "4")


def test_T05_the_model_is_offered_only_the_declared_tools(rig, engine, probe):
    agent(rig, model="probe/m", tools=("word-count",))
    probe.answers = [{"text": "ok"}]
    engine.conversation("writer").run("hi", NonInteractiveUI())
    [spec] = probe.requests[0].tools
    assert (spec.name, spec.description, spec.parameters) == (
        "word-count", "Counts words.", {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})


def test_T05_a_call_to_an_undeclared_tool_is_an_error_result_and_the_other_calls_run(rig, engine, probe):
    agent(rig, model="probe/m")
    probe.answers = [{"calls": [("c1", "word-count", {"path": "notes.txt"}), ("c2", "echo", {"text": "hi"}),
                                ("c3", "word-count", {"path": "notes.txt"})]},
                     {"text": "There are 4 words."}]
    ui = NonInteractiveUI()
    result = engine.conversation("writer").run("go", ui)
    assert (result.reason, result.text) == ("end_turn", "There are 4 words.")
    assert [(call.name, answer.text, answer.is_error) for call, answer in result.tool_calls] == [
        ("word-count", "4", False),
        ("echo", "unknown tool 'echo'; this agent's tools: word-count", True),
        ("word-count", "4", False)]
    assert [m.text for m in probe.requests[1].messages if m.role == "tool"][1].startswith("unknown tool 'echo'")
    assert [e.name for e in ui.events if isinstance(e, ToolCallStarted)] == ["word-count", "echo", "word-count"]


@pytest.mark.parametrize(("turns", "reason"), [
    (["echo", "echo", "word-count", "echo", "echo"], "end_turn"),  # a good turn in between resets the count
    (["echo", "nope", "echo"], "error"),
])
def test_a_model_that_keeps_calling_undeclared_tools_ends_the_run_after_three_turns(rig, engine, probe, turns, reason):
    agent(rig, model="probe/m")
    probe.answers = [{"calls": [(f"c{i}", name, {"path": "notes.txt"})]} for i, name in enumerate(turns)]
    probe.answers.append({"text": "done"})
    result = engine.conversation("writer").run("go", NonInteractiveUI())
    assert result.reason == reason
    assert len(probe.requests) == (len(turns) + 1 if reason == "end_turn" else 3)
    if reason == "error":
        assert result.error == ("the model kept calling tools agent writer does not declare (3 model turns in a row, "
                                "lately 'echo'; its tools: word-count)")
        assert result.messages[-1].role == "tool" and result.messages[-1].is_error


def test_resume_continues_the_session_and_the_model_sees_earlier_messages(rig, engine, probe):
    agent(rig, model="probe/m")
    probe.answers = [{"text": "first answer"}, {"text": "second answer"}]
    first = engine.conversation("writer").run("first question", NonInteractiveUI())
    resumed = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox).conversation(session_id=first.session_id)
    second = resumed.run("second question", NonInteractiveUI())
    assert second.session_id == first.session_id and second.reason == "end_turn"
    assert [(m.role, m.text) for m in probe.requests[1].messages] == [
        ("user", "first question"), ("assistant", "first answer"), ("user", "second question")]
    roles = [l.get("role") for l in session_lines(rig.home, first.session_id) if l["type"] == "message"]
    assert roles == ["user", "assistant", "user", "assistant"]


def test_the_scripted_model_continues_where_a_resumed_session_stopped(rig, engine):
    agent(rig, tools=())
    write_script(rig.workdir, [{"text": "one"}, {"text": "two"}])
    first = engine.conversation("writer").run("a", NonInteractiveUI())
    second = engine.conversation(session_id=first.session_id).run("b", NonInteractiveUI())
    assert (first.text, second.text) == ("one", "two")


def test_a_torn_last_line_loads_with_a_warning_and_the_session_goes_on(rig, engine):
    agent(rig, tools=())
    write_script(rig.workdir, [{"text": "one"}, {"text": "two"}])
    first = engine.conversation("writer").run("a", NonInteractiveUI())
    path = rig.home / "sessions" / f"{first.session_id}.jsonl"
    with path.open("a") as f:
        f.write('{"type": "message", "role": "assistant", "te')
    resumed = engine.conversation(session_id=first.session_id)
    assert any("incomplete" in w for w in resumed.warnings)
    assert [m.text for m in resumed.messages] == ["a", "one"]
    assert resumed.run("b", NonInteractiveUI()).text == "two"


def _run_in_thread(conversation, prompt, ui):
    cancel = CancelToken()
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("result", conversation.run(prompt, ui, cancel)))
    thread.start()
    return cancel, box, thread


def test_stopping_mid_stream_ends_interrupted_and_keeps_the_partial_answer(rig, engine):
    rig.write_hook("audit", 'module.exports = { afterRun(ctx, e) { ctx.log("afterRun " + e.reason); } };')
    agent(rig, hooks=("audit",))
    write_script(rig.workdir, [{"text": " ".join(f"w{i}" for i in range(200)), "chunk_delay_ms": 10}])
    seen = threading.Event()
    ui = NonInteractiveUI(sink=lambda e: seen.set() if isinstance(e, TextDelta) and e.text.startswith("w5") else None)
    cancel, box, thread = _run_in_thread(engine.conversation("writer"), "talk", ui)
    assert seen.wait(10)
    cancel.cancel()
    thread.join(10)
    result = box["result"]
    assert result.reason == "interrupted"
    partial = result.messages[-1]
    assert partial.role == "assistant" and partial.meta == MessageMeta(interrupted=True)
    assert partial.text.startswith("w0 w1 w2 w3 w4 w5") and "w199" not in partial.text
    assert [e.text for e in ui.events if isinstance(e, Log)] == ["afterRun interrupted"]
    saved = [l for l in session_lines(rig.home, result.session_id) if l["type"] == "message"]
    assert saved[-1]["text"] == partial.text


@pytest.mark.parametrize("where", ["tool", "confirm"])
def test_stopping_mid_tool_or_confirm_ends_interrupted_and_the_next_run_works(rig, engine, where):
    body = ('ctx.system.exec("echo running; sleep 30")' if where == "tool"
            else 'ctx.confirm({ title: "wait", body: "forever" })')
    rig.write_tool("slow", f'module.exports = {{ description: "s", parameters: {{ type: "object" }}, '
                           f'execute(ctx) {{ {body}; return "done"; }} }};')
    agent(rig, tools=("slow",))
    write_script(rig.workdir, [{"text": "", "tool_calls": [{"name": "slow", "arguments": {}}, {"name": "slow", "arguments": {}}]},
                 {"text": "after"}, {"text": "next run"}])

    started = threading.Event()  # the command is running, or the confirm is asked

    class Waiting(NonInteractiveUI):
        def ask(self, title, body, cancel):
            started.set()
            cancel.wait()
            return False, "interrupted"

    ui = Waiting(sink=lambda e: started.set() if isinstance(e, Output) and "running" in e.text else None)
    conversation = engine.conversation("writer")
    cancel, box, thread = _run_in_thread(conversation, "go", ui)
    assert started.wait(30), f"the {where} never started"
    cancel.cancel()
    thread.join(30)
    assert not thread.is_alive(), "the run did not end on the stop"
    result = box["result"]
    assert result.reason == "interrupted"
    results = [m for m in result.messages if m.role == "tool"]
    assert [(m.text, m.is_error) for m in results] == [("interrupted before the tool finished", True)] * 2
    if where == "confirm":  # the pending confirm itself returned on the stop
        assert [(e.title, e.answer, e.how) for e in ui.events if isinstance(e, Confirm)] == [
            ("wait", False, "interrupted")]
    assert conversation.run("again", NonInteractiveUI()).text == "after"


def test_no_secret_reaches_the_session_file(rig, monkeypatch, sandbox):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-0123456789abcdef")
    rig.write_tool("leak", 'module.exports = { description: "l", parameters: { type: "object" },'
                           ' execute: (ctx) => "key=" + ctx.env.OPENAI_API_KEY };')
    agent(rig, tools=("leak",))
    write_script(rig.workdir, [{"text": "using sk-live-0123456789abcdef", "tool_calls": [
        {"name": "leak", "arguments": {"headers": {"Authorization": "Bearer abc.def.ghi"}}}]}, {"text": "ok"}])
    engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=sandbox)
    result = engine.conversation("writer").run("go", NonInteractiveUI())
    assert result.reason == "end_turn"
    assert result.tool_calls[0][1].text == "key=sk-live-0123456789abcdef"  # the model may read it...
    text = (rig.home / "sessions" / f"{result.session_id}.jsonl").read_text()
    assert "sk-live-0123456789abcdef" not in text and "abc.def.ghi" not in text  # ...the file never holds it
    assert "[redacted]" in text


def test_a_request_allowed_for_this_session_is_not_asked_again_until_a_new_session(rig, engine):
    from rienda_kernel.engine.ui import ALLOWED_EARLIER, FOR_THIS_SESSION

    rig.write_tool("ask", 'module.exports = { description: "a", parameters: { type: "object", properties: '
                          '{ body: { type: "string" } } }, execute: (ctx, a) => String(ctx.confirm({ title: "Deploy", '
                          'body: a.body })) };')
    agent(rig, tools=("ask",))
    calls = [{"name": "ask", "arguments": {"body": body}} for body in ("prod", "prod", "staging")]
    write_script(rig.workdir, [{"text": "", "tool_calls": calls}, {"text": "done"}] * 3)

    class Person(NonInteractiveUI):
        def __init__(self):
            super().__init__()
            self.asked = []

        def ask(self, title, body, cancel):
            self.asked.append((title, body))
            return (True, FOR_THIS_SESSION) if body == "prod" else (False, "user")

    person = Person()
    conversation = engine.conversation("writer")
    result = conversation.run("deploy", person)
    assert [m.text for m in result.messages if m.role == "tool"] == ["true", "true", "false"]
    assert person.asked == [("Deploy", "prod"), ("Deploy", "staging")]
    assert [(e.body, e.how) for e in person.events if isinstance(e, Confirm)] == [
        ("prod", FOR_THIS_SESSION), ("prod", ALLOWED_EARLIER), ("staging", "user")]
    # The session remembers it, also when resumed from its file...
    resumed_person = Person()
    engine.conversation(session_id=result.session_id).run("again", resumed_person)
    assert resumed_person.asked == [("Deploy", "staging")]
    # ...and a new session asks again.
    fresh = Person()
    engine.conversation("writer").run("deploy", fresh)
    assert fresh.asked == [("Deploy", "prod"), ("Deploy", "staging")]


def test_a_second_interrupt_stops_after_model_response_reviewing_a_partial_answer(rig, engine):
    rig.write_hook("review", 'module.exports = { afterModelResponse(ctx, r) { ctx.log("reviewing"); for (;;) {} },'
                             ' afterRun(ctx, e) { ctx.log("afterRun " + e.reason); } };')
    agent(rig, hooks=("review",))
    write_script(rig.workdir, [{"text": " ".join(f"w{i}" for i in range(200)), "chunk_delay_ms": 10}])
    streaming, reviewing = threading.Event(), threading.Event()

    def watch(event):
        if isinstance(event, TextDelta):
            streaming.set()
        elif isinstance(event, Log) and event.text == "reviewing":
            reviewing.set()

    ui = NonInteractiveUI(sink=watch)
    cancel, box, thread = _run_in_thread(engine.conversation("writer"), "talk", ui)
    assert streaming.wait(10)
    cancel.cancel()
    assert reviewing.wait(10), "the first interrupt lets afterModelResponse review the partial answer"
    cancel.cancel()
    thread.join(10)
    result = box["result"]
    assert result.reason == "interrupted"
    assert [m.role for m in result.messages] == ["user"], "nothing unreviewed is saved"
    stopped = [l for l in session_lines(rig.home, result.session_id) if l["type"] == "stopped"]
    assert [s["point"] for s in stopped] == ["afterModelResponse", "afterRun"]
    assert not any(isinstance(e, Log) and e.text.startswith("afterRun") for e in ui.events)
    assert session_lines(rig.home, result.session_id)[-1]["type"] == "run_end"


def test_a_wind_down_token_is_stopped_by_the_next_interrupt_and_at_the_latest_by_the_second():
    token = CancelToken()
    before = token.for_wind_down()
    token.cancel()
    assert token.cancelled and before.cancelled
    after_first = token.for_wind_down()
    assert not after_first.cancelled
    token.cancel()
    assert after_first.cancelled and token.for_wind_down().cancelled


def test_runs_of_one_session_never_overlap_and_the_next_goes_on_from_the_file(rig, engine):
    agent(rig, tools=())
    write_script(rig.workdir, [{"text": "one"}, {"text": " ".join(["word"] * 300), "chunk_delay_ms": 10}, {"text": "three"}])
    first = engine.conversation("writer")
    session_id = first.run("a", NonInteractiveUI()).session_id
    second = engine.conversation(session_id=session_id)  # e.g. another notebook resuming it
    streaming = threading.Event()
    ui = NonInteractiveUI(sink=lambda e: streaming.set() if isinstance(e, TextDelta) else None)
    cancel, box, thread = _run_in_thread(first, "b", ui)
    assert streaming.wait(10)
    refused = second.run("while it runs", NonInteractiveUI())
    assert refused.reason == "error" and refused.error.startswith(f"session {session_id} is being written by another run")
    thread.join(30)
    assert box["result"].reason == "end_turn"
    assert second.run("c", NonInteractiveUI()).text == "three"
    texts = [l["text"][:4] for l in session_lines(rig.home, session_id) if l["type"] == "message"]
    assert texts == ["a", "one", "b", "word", "c", "thre"]


def test_a_schema_that_breaks_validation_gives_its_call_an_error_result_and_the_turn_goes_on(rig, engine, probe):
    rig.write_tool("loopy", 'module.exports = { description: "l", execute: () => "ran", parameters: { type: "object",'
                            ' properties: { x: { $ref: "#/$defs/a" } }, $defs: { a: { allOf: [{ $ref: "#/$defs/a" }] } } } };')
    agent(rig, model="probe/m", tools=("loopy", "word-count"))
    probe.answers = [{"calls": [("c1", "loopy", {"x": 1}), ("c2", "word-count", {"path": "notes.txt"})]},
                     {"text": "done"}]
    result = engine.conversation("writer").run("go", NonInteractiveUI())
    assert result.reason == "end_turn"
    [(_, broken), (_, counted)] = result.tool_calls
    assert broken.is_error and broken.text.startswith(
        "invalid arguments for loopy: the tool's parameters schema cannot be applied: maximum recursion depth")
    assert (counted.text, counted.is_error) == ("4", False)


GATE_HOOK = """module.exports = {
  beforeToolExecute(ctx, call) {
    ctx.log("before " + call.id + " " + call.name);
    if (call.arguments.path === "secret.txt") return { allow: false, reason: "not that one" };
    return { arguments: { path: "other.txt" } };
  },
  afterToolExecute(ctx, call, result) { ctx.log("after " + call.id + " " + call.name + " " + JSON.stringify(call.arguments)); },
};"""


def test_the_session_keeps_what_hooks_changed_or_refused_and_for_which_call(rig, engine):
    """A result saves the arguments the tool really got when hooks changed them, or the
    refusing hook; every hook decision names its call (the session replays the run)."""
    rig.write_hook("gate", GATE_HOOK)
    agent(rig, hooks=("gate",))
    (rig.workdir / "other.txt").write_text("a b")
    calls = [{"id": call_id, "name": "word-count", "arguments": {"path": path}}
             for call_id, path in (("c1", "notes.txt"), ("c2", "secret.txt"), ("c3", "other.txt"))]
    write_script(rig.workdir, [{"text": "", "tool_calls": calls}, {"text": "done"}])
    ui = NonInteractiveUI()
    result = engine.conversation("writer").run("count", ui)
    assert result.reason == "end_turn", result.error
    lines = session_lines(rig.home, result.session_id)
    results = [(l["tool_call_id"], l["text"], l.get("meta")) for l in lines if l.get("role") == "tool"]
    assert results == [("c1", "2", {"arguments": {"path": "other.txt"}, "saw": {}}),  # saw: afterToolExecute
                       ("c2", "not that one", {"refused_by": "gate"}),                # changed nothing
                       ("c3", "2", {"saw": {}})]
    decisions = [(l["point"], l["effect"], l["call_id"]) for l in lines if l["type"] == "hook_decision"]
    assert decisions == [("beforeToolExecute", "rewrote", "c1"), ("afterToolExecute", "none", "c1"),
                         ("beforeToolExecute", "refused", "c2"),
                         ("beforeToolExecute", "none", "c3"), ("afterToolExecute", "none", "c3")]
    assert [e.text for e in ui.events if isinstance(e, Log)] == [
        "before c1 word-count", 'after c1 word-count {"path":"other.txt"}', "before c2 word-count",
        "before c3 word-count", 'after c3 word-count {"path":"other.txt"}']
    assert [(e.id, e.name, e.arguments, e.refused_by) for e in ui.events if isinstance(e, ToolCallStarted)] == [
        ("c1", "word-count", {"path": "other.txt"}, None), ("c2", "word-count", {"path": "secret.txt"}, "gate"),
        ("c3", "word-count", {"path": "other.txt"}, None)]
    assert [(e.id, e.name, e.text, e.isError) for e in ui.events if isinstance(e, ToolResultReady)] == [
        ("c1", "word-count", "2", False), ("c2", "word-count", "not that one", True), ("c3", "word-count", "2", False)]


def test_a_tool_in_a_run_sees_the_runs_session_and_agent(rig, engine):
    rig.write_tool("whoami", 'module.exports = { description: "w", parameters: { type: "object" }, '
                             'execute: (ctx) => JSON.stringify({ session: ctx.session, agent: ctx.agent }) };')
    agent(rig, tools=("whoami",), hooks=())
    write_script(rig.workdir, [{"text": "", "tool_calls": [{"name": "whoami", "arguments": {}}]}, {"text": "done"}])
    result = engine.conversation("writer").run("who?", NonInteractiveUI())
    assert json.loads(result.tool_calls[0][1].text) == {
        "session": {"id": result.session_id},
        "agent": {"id": "writer", "description": "A test agent.", "model": "scripted/script.yaml",
                  "tools": ["whoami"], "hooks": []}}


class ExplodingProvider(Provider):
    """A provider with a bug: it fails with an exception no provider should raise."""

    def stream(self, request, cancel):
        yield TextChunk("half an ")
        raise ValueError("boom")


def test_an_engine_bug_ends_the_run_with_error_and_the_session_says_so(rig, engine, monkeypatch):
    monkeypatch.setitem(PROVIDERS, "exploding", lambda config: ExplodingProvider())
    rig.write_hook("audit", 'module.exports = { afterRun(ctx, e) { ctx.log("afterRun " + e.reason); } };')
    agent(rig, model="exploding/m", hooks=("audit",))
    ui = NonInteractiveUI()
    result = engine.conversation("writer").run("go", ui)
    assert (result.reason, result.error) == ("error", "internal error: ValueError: boom")
    [diagnostic] = [e for e in ui.events if isinstance(e, Diagnostic)]
    assert diagnostic.source == "engine" and diagnostic.message.rstrip().endswith("ValueError: boom")
    assert "Traceback" in diagnostic.message
    assert [e.text for e in ui.events if isinstance(e, Log)] == ["afterRun error"]
    assert ui.events[0] == RunStart(result.session_id, "writer", "exploding/m")
    end = ui.events[-1]
    assert isinstance(end, RunEnd) and (end.reason, end.error) == ("error", "internal error: ValueError: boom")
    lines = session_lines(rig.home, result.session_id)
    assert lines[-1] == {"type": "run_end", "reason": "error", "error": "internal error: ValueError: boom"}
    [answer] = [line for line in lines if line.get("role") == "assistant"]
    assert (answer["text"], answer["meta"]) == ("half an ", {"error": True})  # what arrived before the bug is kept


def test_an_agent_without_tools_is_told_so_when_the_model_calls_one(rig, engine):
    agent(rig, tools=())
    write_script(rig.workdir, [{"text": "x", "tool_calls": [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]},
                 {"text": "I have no tools, then."}])
    result = engine.conversation("writer").run("go", NonInteractiveUI())
    assert (result.reason, result.text) == ("end_turn", "I have no tools, then.")
    assert [m.text for m in result.messages if m.role == "tool"] == [
        "unknown tool 'a'; this agent's tools: none", "unknown tool 'b'; this agent's tools: none"]


def test_the_saved_answer_keeps_thinking_and_usage_and_the_front_end_gets_it_as_saved(rig, engine):
    agent(rig, tools=())
    write_script(rig.workdir, [{"thinking": "let me think", "text": "yes", "usage": {"input_tokens": 12, "output_tokens": 3}}])
    ui = NonInteractiveUI()
    result = engine.conversation("writer").run("go", ui)
    assert [e.text for e in ui.events if isinstance(e, ThinkingDelta)] == ["let ", "me ", "think"]
    [saved] = [l for l in session_lines(rig.home, result.session_id) if l.get("role") == "assistant"]
    assert (saved["text"], saved["thinking"], saved["usage"]) == (
        "yes", "let me think", {"input_tokens": 12, "output_tokens": 3})
    [shown] = [e.message for e in ui.events if isinstance(e, MessageSaved)]
    assert shown == {key: value for key, value in saved.items() if key not in ("type", "time")}


class VendorProvider(Provider):
    """Streams thinking with the vendor state that vouches for it."""

    def stream(self, request, cancel):
        yield ThinkingChunk("signed thought")
        yield TextChunk("answer")
        yield VendorStateChunk({"anthropic": {"thinking": [{"signature": "sig"}]}})


@pytest.mark.parametrize("rewrite", [False, True])
def test_vendor_state_is_saved_unless_a_hook_changed_the_thinking_it_vouches_for(rig, engine, monkeypatch, rewrite):
    monkeypatch.setitem(PROVIDERS, "vendor", lambda config: VendorProvider())
    hooks = ()
    if rewrite:
        rig.write_hook("rethink", 'module.exports = { afterModelResponse(ctx, r) { return { thinking: "[hidden]" }; } };')
        hooks = ("rethink",)
    agent(rig, model="vendor/m", tools=(), hooks=hooks)
    result = engine.conversation("writer").run("go", NonInteractiveUI())
    [saved] = [l for l in session_lines(rig.home, result.session_id) if l.get("role") == "assistant"]
    if rewrite:
        # no vendor state, and the thinking the hook replaced is withheld from replay too
        assert (saved["thinking"], saved.get("meta")) == ("[hidden]", {"saw": {"thinking": None}})
    else:
        assert (saved["thinking"], saved["meta"]) == (
            "signed thought", {"vendor": {"anthropic": {"thinking": [{"signature": "sig"}]}}})


# -- beforeRun and afterRun as decided by issue 38 (H07, H08): the prompt refused or given context, the run
# kept going once; a hook of the seed's contract changes nothing
RUN_POLICY = """module.exports = {
  beforeRun(ctx, run) {
    ctx.log("beforeRun " + run.prompt);
    if (/forbidden/.test(run.prompt)) return { allow: false, reason: "the prompt holds a forbidden word" };
    return { context: "Team rule: answer in one line." };
  },
  afterRun(ctx, run) {
    ctx.log("afterRun " + run.reason + " " + run.continued + " " + run.text);
    if (!/checked/.test(run.text)) return { prompt: "Check your work, then say checked." };
  },
};"""


def test_before_run_refuses_a_prompt_with_its_reason_and_no_model_is_called(rig, engine, probe):
    rig.write_hook("policy", RUN_POLICY)
    agent(rig, model="probe/m1", hooks=("policy",))
    result = engine.conversation("writer").run("do the forbidden thing", NonInteractiveUI())
    assert (result.reason, result.error) == ("error", "hook policy refused the run: the prompt holds a forbidden word")
    assert probe.requests == []


def test_before_run_adds_context_and_after_run_keeps_the_run_going_once(rig, engine, probe):
    rig.write_hook("policy", RUN_POLICY)
    agent(rig, model="probe/m1", hooks=("policy",), body="Be careful.")
    probe.answers = [{"text": "done"}, {"text": "still done"}]
    ui = NonInteractiveUI()
    result = engine.conversation("writer").run("count", ui)
    assert result.reason == "end_turn" and result.text == "still done"
    assert [r.system for r in probe.requests] == ["Be careful.\n\nTeam rule: answer in one line."] * 2
    assert [m.text for m in probe.requests[1].messages if m.role == "user"] == [
        "count", "Check your work, then say checked."]
    assert [e.text for e in ui.events if isinstance(e, Log)] == [
        "beforeRun count", "afterRun end_turn false done", "afterRun end_turn true still done"]  # once, then told


def test_a_hook_of_the_seed_contract_changes_nothing(rig, engine, probe):
    rig.write_hook("audit", "module.exports = { beforeRun(ctx, e) { ctx.log(e.sessionId); }, "
                            "afterRun(ctx, e) { ctx.log(e.reason); } };")
    agent(rig, model="probe/m1", hooks=("audit",), body="Be careful.")
    probe.answers = [{"text": "done"}]
    ui = NonInteractiveUI()
    result = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox).conversation("writer").run("go", ui)
    assert result.reason == "end_turn" and [r.system for r in probe.requests] == ["Be careful."]
    assert [e.text for e in ui.events if isinstance(e, Log)] == [result.session_id, "end_turn"]  # afterRun once
