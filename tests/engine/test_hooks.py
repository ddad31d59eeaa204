"""The hook chain through real V8 isolates (H06-H21)."""

from __future__ import annotations

import json

import pytest

from rienda_kernel.engine import Confirm, Diagnostic, HookDecision, Log, NonInteractiveUI, Notify, ToolResult
from rienda_kernel.engine.hooks import ModelResponse
from rienda_kernel.engine.sessions.messages import Message, ToolCall

from ..helpers.extensions import go, hook


# -- H06 / H07 / H08: points, payloads, "returning nothing changes nothing" --------------
def test_H07_before_run_receives_session_agent_and_model(rig):
    """And (decided, issue 38) the prompt, and the context the hooks before it added."""
    rig.write_hook("spy", hook(beforeRun='function (ctx, e) { ctx.log(JSON.stringify(e)); }'))
    rig.chain("spy").before_run("s-1", "writer", "scripted/a.yaml", go(), "count the words")
    assert [json.loads(e.text) for e in rig.events(Log)] == [
        {"sessionId": "s-1", "agentId": "writer", "modelId": "scripted/a.yaml", "prompt": "count the words",
         "context": ""}]


@pytest.mark.parametrize("reason", ["end_turn", "interrupted", "error"])
def test_H08_after_run_receives_the_reason(rig, reason):
    rig.write_hook("audit", hook(afterRun='function (ctx, e) { ctx.notify({ title: "rienda", body: "run finished: " + e.reason }); }'))
    rig.chain("audit").after_run(reason, go())
    assert rig.events(Notify) == [Notify("hook:audit.afterRun", "rienda", f"run finished: {reason}")]


def test_H06_returning_nothing_changes_nothing(rig):
    quiet = 'function () {}'
    rig.write_hook("quiet", hook(beforeModelRequest=quiet, afterModelResponse=quiet,
                                 beforeToolExecute=quiet, afterToolExecute=quiet))
    chain = rig.chain("quiet")
    assert chain.before_model_request("sys", "m", [], go()) == "sys"
    assert chain.after_model_response(ModelResponse("t", "th"), go()) == ModelResponse("t", "th")
    gate = chain.before_tool_execute("c1", "shell", {"command": "ls"}, go())
    assert gate.allowed and gate.arguments == {"command": "ls"}
    assert chain.after_tool_execute("c1", "shell", {}, ToolResult("out"), go()) == ToolResult("out")
    assert {d.effect for d in rig.events(HookDecision)} == {"none"}


def test_H06_a_hook_without_the_point_is_passed_over(rig):
    rig.write_hook("only-after", hook(afterRun='function () {}'))
    chain = rig.chain("only-after")
    assert chain.before_model_request("sys", "m", [], go()) == "sys"
    assert rig.events(HookDecision) == []


# -- H09 / H10 / H11: beforeModelRequest --------------------------------------------------
def test_H09_before_model_request_payload_and_system_replacement(rig):
    rig.write_hook("ctxinfo", hook(beforeModelRequest="""function (ctx, r) {
      return { system: r.system + " | model=" + r.model + " | n=" + r.messages.length + " | last=" + r.messages[r.messages.length - 1].text };
    }"""))
    messages = [Message("user", "hello", thinking="not shown"), Message("assistant", "hi")]
    system = rig.chain("ctxinfo").before_model_request("Be brief.", "openai/gpt-4o", messages, go())
    assert system == "Be brief. | model=openai/gpt-4o | n=2 | last=hi"


def test_H10_system_is_for_this_turn_only(rig):
    """The chain returns this turn's prompt and leaves the agent's own untouched, so the
    next turn builds from the declared prompt again (no accumulation)."""
    rig.write_hook("date", hook(beforeModelRequest='function (ctx, r) { return { system: r.system + "\\n\\nToday is X." }; }'))
    chain = rig.chain("date")
    declared = "You are careful."
    first = chain.before_model_request(declared, "m", [], go())
    second = chain.before_model_request(declared, "m", [Message.user("again")], go())
    assert first == second == "You are careful.\n\nToday is X."


def test_H11_messages_is_a_read_only_snapshot(rig):
    rig.write_hook("meddler", hook(beforeModelRequest="""function (ctx, r) {
      const errors = [];
      try { r.messages.push({ role: "user", text: "injected" }); } catch (e) { errors.push(e.name); }
      try { "use strict"; r.messages[0].text = "changed"; } catch (e) { errors.push(e.name); }
      ctx.log(JSON.stringify({ errors, messages: r.messages }));
    }"""))
    messages = [Message.user("original")]
    rig.chain("meddler").before_model_request("s", "m", messages, go())
    logged = json.loads(rig.events(Log)[0].text)
    assert logged["errors"][0] == "TypeError"
    assert logged["messages"] == [{"role": "user", "text": "original"}]
    assert messages == [Message.user("original")]


# -- H12: afterModelResponse ------------------------------------------------------------------
def test_H12_after_model_response_rewrites_text_and_thinking_not_tool_calls(rig):
    rig.write_hook("rewrite", hook(afterModelResponse="""function (ctx, r) {
      let frozen = false;
      try { r.toolCalls.push({}); } catch (e) { frozen = true; }
      return { text: r.text.toUpperCase(), thinking: "[" + r.thinking + "] frozen=" + frozen + " calls=" + r.toolCalls.length, toolCalls: [] };
    }"""))
    calls = [ToolCall("c1", "shell", {"command": "ls"})]
    out = rig.chain("rewrite").after_model_response(ModelResponse("done", "hmm", calls), go())
    assert out.text == "DONE"
    assert out.thinking == "[hmm] frozen=true calls=1"
    assert out.tool_calls == calls
    assert any("unknown field(s) toolCalls" in d.message for d in rig.events(Diagnostic))


# -- H13 / H14 / H15: beforeToolExecute ---------------------------------------------------------
def test_H13_before_tool_execute_receives_id_name_arguments(rig):
    rig.write_hook("spy", hook(beforeToolExecute='function (ctx, call) { ctx.log(JSON.stringify(call)); }'))
    rig.chain("spy").before_tool_execute("call_7", "http", {"url": "http://x"}, go())
    assert json.loads(rig.events(Log)[0].text) == {"id": "call_7", "name": "http", "arguments": {"url": "http://x"}}


def test_H14_allow_false_refuses_with_reason_and_consults_no_further_hook(rig):
    rig.write_hook("deny", hook(beforeToolExecute='function () { return { allow: false, reason: "not today" }; }'))
    rig.write_hook("later", hook(beforeToolExecute='function (ctx) { ctx.log("consulted"); }'))
    gate = rig.chain("deny", "later").before_tool_execute("c1", "shell", {"command": "ls"}, go())
    assert not gate.allowed
    assert gate.refused_by == "deny"
    assert gate.refusal() == ToolResult("not today", True)
    assert rig.events(Log) == []
    refused = [d for d in rig.events(HookDecision) if d.effect == "refused"]
    assert refused == [HookDecision(hook="deny", point="beforeToolExecute", effect="refused",
                                    reason="not today", call_id="c1", duration_ms=refused[0].duration_ms)]


def test_H14_refusal_without_reason_names_the_hook(rig):
    rig.write_hook("deny", hook(beforeToolExecute='function () { return { allow: false }; }'))
    gate = rig.chain("deny").before_tool_execute("c1", "shell", {}, go())
    assert gate.refusal() == ToolResult("refused by hook deny", True)


def test_H15_arguments_replace_what_the_next_hook_and_the_tool_see(rig):
    rig.write_hook("https", hook(beforeToolExecute="""function (ctx, call) {
      if (call.name !== "http") return;
      return { arguments: { ...call.arguments, url: call.arguments.url.replace("http://", "https://") } };
    }"""))
    rig.write_hook("tag", hook(beforeToolExecute="""function (ctx, call) {
      ctx.log("saw " + call.arguments.url);
      return { arguments: { ...call.arguments, headers: { "X-Via": "tag" } } };
    }"""))
    gate = rig.chain("https", "tag").before_tool_execute("c1", "http", {"url": "http://example.org"}, go())
    assert gate.allowed
    assert gate.arguments == {"url": "https://example.org", "headers": {"X-Via": "tag"}}
    assert rig.events(Log)[0].text == "saw https://example.org"
    rewrites = [d for d in rig.events(HookDecision) if d.effect == "rewrote"]
    assert [d.changes for d in rewrites] == [
        {"arguments.url": {"before": "http://example.org", "after": "https://example.org"}},
        {"arguments.headers": {"before": None, "after": {"X-Via": "tag"}}},
    ]


def test_H15_rewritten_arguments_reach_the_tool(rig):
    """The chain's arguments are what the tool is invoked with."""
    rig.write_hook("pin", hook(beforeToolExecute='function (ctx, call) { return { arguments: { path: "b.txt" } }; }'))
    rig.write_tool("cat", """module.exports = {
      description: "Cat.", parameters: { type: "object", properties: { path: { type: "string" } } },
      execute: function (ctx, args) { return ctx.file.read(args.path); } };""")
    (rig.workdir / "a.txt").write_text("A")
    (rig.workdir / "b.txt").write_text("B")
    gate = rig.chain("pin").before_tool_execute("c1", "cat", {"path": "a.txt"}, go())
    assert rig.tool("cat", gate.arguments) == ToolResult("B")


# -- H16: afterToolExecute -----------------------------------------------------------------------
def test_H16_after_tool_execute_rewrites_the_result(rig):
    rig.write_hook("upper", hook(afterToolExecute="""function (ctx, call, result) {
      ctx.log(call.id + " " + call.name + " " + JSON.stringify(call.arguments) + " " + result.isError);
      return { text: result.text.toUpperCase(), isError: true };
    }"""))
    out = rig.chain("upper").after_tool_execute("c9", "read", {"path": "x"}, ToolResult("quiet"), go())
    assert out == ToolResult("QUIET", True)
    assert rig.events(Log)[0].text == 'c9 read {"path":"x"} false'


# -- H17 / H18: chaining, last writer wins, null keeps -----------------------------------------------
def test_H17_each_hook_gets_the_previous_output_and_the_last_writer_wins(rig):
    rig.write_hook("a", hook(afterToolExecute='function (ctx, c, r) { return { text: r.text + "+a" }; }'))
    rig.write_hook("b", hook(afterToolExecute='function (ctx, c, r) { return { text: r.text + "+b" }; }'))
    assert rig.chain("a", "b").after_tool_execute("c", "t", {}, ToolResult("x"), go()).text == "x+a+b"
    assert rig.chain("b", "a").after_tool_execute("c", "t", {}, ToolResult("x"), go()).text == "x+b+a"


@pytest.mark.parametrize("value", ["undefined", "null", "omitted"])
def test_H18_a_field_left_out_undefined_or_null_keeps_its_value(rig, value):
    returned = "{ isError: true }" if value == "omitted" else f"{{ text: {value}, isError: true }}"
    rig.write_hook("partial", hook(afterToolExecute=f"function () {{ return {returned}; }}"))
    out = rig.chain("partial").after_tool_execute("c", "t", {}, ToolResult("kept"), go())
    assert out == ToolResult("kept", True)


def test_H18_a_field_of_the_wrong_type_is_ignored_with_a_diagnostic(rig):
    rig.write_hook("sloppy", hook(beforeModelRequest='function () { return { system: 42 }; }'))
    assert rig.chain("sloppy").before_model_request("kept", "m", [], go()) == "kept"
    assert any("system must be a string, got a number" in d.message for d in rig.events(Diagnostic))


# -- H19: a throwing hook is reported and skipped ------------------------------------------------------
def test_H19_a_throwing_hook_is_reported_and_skipped_as_if_it_returned_nothing(rig):
    path = rig.write_hook("broken", hook(afterToolExecute='function () { throw new Error("oops"); }'))
    rig.write_hook("after", hook(afterToolExecute='function (ctx, c, r) { return { text: r.text + "!" }; }'))
    out = rig.chain("broken", "after").after_tool_execute("c", "t", {}, ToolResult("ok"), go())
    assert out == ToolResult("ok!")
    [diagnostic] = rig.events(Diagnostic)
    assert diagnostic.source == "hook:broken.afterToolExecute"
    assert "Error: oops" in diagnostic.message and f"{path}:2:" in diagnostic.message
    assert [d.effect for d in rig.events(HookDecision)] == ["threw", "rewrote"]


# -- H20 / H21: the same ctx, confirm, live output, fresh state -------------------------------------------
def test_H20_hooks_get_the_same_ctx_as_tools(rig):
    rig.write_hook("probe", hook(beforeRun="""function (ctx) {
      ctx.file.write("probe.txt", ctx.session.id + " " + ctx.agent.id + " " + (ctx.workdir.length > 0));
      ctx.log(Object.keys(ctx).sort().join(","));
    }"""))
    rig.chain("probe").before_run("s", "a", "m", go())
    assert (rig.workdir / "probe.txt").read_text() == "s-test tester true"
    assert rig.events(Log)[0].text == "agent,config,confirm,env,file,http,log,notify,session,subagent,system,workdir"


@pytest.mark.parametrize("auto_approve", [True, False])
def test_H20_confirm_in_a_hook(rig, auto_approve):
    rig.write_hook("gate", hook(beforeToolExecute="""function (ctx, call) {
      if (!ctx.confirm({ title: "Run " + call.name + "?", body: JSON.stringify(call.arguments) })) {
        return { allow: false, reason: "refused by the user" };
      }
    }"""))
    rig.ui = NonInteractiveUI(auto_approve=auto_approve)
    gate = rig.chain("gate").before_tool_execute("c", "shell", {"command": "ls"}, go())
    assert gate.allowed is auto_approve
    assert rig.events(Confirm)[0].title == "Run shell?"


def test_H21_fresh_state_per_hook_invocation(rig):
    rig.write_hook("counter", hook(beforeModelRequest="""function (ctx, r) {
      globalThis.n = (globalThis.n || 0) + 1;
      return { system: r.system + globalThis.n };
    }"""))
    rig.write_hook("counter2", hook(beforeModelRequest="""function (ctx, r) {
      globalThis.n = (globalThis.n || 0) + 1;
      return { system: r.system + globalThis.n };
    }"""))
    chain = rig.chain("counter", "counter2")
    assert chain.before_model_request("s", "m", [], go()) == "s11"
    assert chain.before_model_request("s", "m", [], go()) == "s11"


@pytest.mark.parametrize(("returned", "kind"), [("42", "a number"), ('"rm -rf /"', "a string"),
                                                ('["a.txt"]', "an array"), ("true", "a boolean")])
def test_H18_arguments_that_are_not_an_object_are_ignored_and_the_tool_sees_the_previous_ones(rig, returned, kind):
    rig.write_hook("pin", hook(beforeToolExecute='function () { return { arguments: { path: "b.txt" } }; }'))
    path = rig.write_hook("bad", hook(beforeToolExecute=f"function () {{ return {{ arguments: {returned} }}; }}"))
    rig.write_tool("cat", """module.exports = {
      description: "Cat.", parameters: { type: "object", properties: { path: { type: "string" } } },
      execute: function (ctx, args) { return ctx.file.read(args.path); } };""")
    (rig.workdir / "b.txt").write_text("B")
    gate = rig.chain("pin", "bad").before_tool_execute("c1", "cat", {"path": "a.txt"}, go())
    assert gate.allowed and gate.arguments == {"path": "b.txt"}
    assert rig.tool("cat", gate.arguments) == ToolResult("B")
    [diagnostic] = rig.events(Diagnostic)
    assert diagnostic.source == "hook:bad.beforeToolExecute" and diagnostic.path == str(path)
    assert f"arguments must be an object, got {kind}; ignored" in diagnostic.message
    assert [(d.hook, d.effect) for d in rig.events(HookDecision)] == [("pin", "rewrote"), ("bad", "invalid")]


@pytest.mark.parametrize(("returned", "problem"), [
    ("{ text: {} }", "text must be a string, got an object"),
    ("{ text: [1] }", "text must be a string, got an array"),
    ("{ text: 2.5 }", "text must be a string, got a number"),
    ("{ text: true }", "text must be a string, got a boolean"),
    ('{ isError: "yes" }', "isError must be a boolean, got a string"),
    ("{ isError: 1 }", "isError must be a boolean, got a number"),
    ('{ text: 1, isError: "no", extra: 1, more: 2 }',
     "text must be a string, got a number; isError must be a boolean, got a string; unknown field(s) extra, more"),
])
def test_H18_the_diagnostic_names_each_wrong_field_and_what_came(rig, returned, problem):
    path = rig.write_hook("sloppy", hook(afterToolExecute=f"function () {{ return {returned}; }}"))
    out = rig.chain("sloppy").after_tool_execute("c7", "t", {}, ToolResult("kept"), go())
    assert out == ToolResult("kept")
    [diagnostic] = rig.events(Diagnostic)
    assert (diagnostic.source, diagnostic.path) == ("hook:sloppy.afterToolExecute", str(path))
    assert diagnostic.message == f"hook sloppy afterToolExecute: {problem}; ignored"
    [decision] = rig.events(HookDecision)
    assert (decision.effect, decision.call_id, decision.error) == ("invalid", "c7", problem)


def test_H18_allow_that_is_not_a_boolean_is_ignored(rig):
    rig.write_hook("vague", hook(beforeToolExecute='function () { return { allow: "no" }; }'))
    gate = rig.chain("vague").before_tool_execute("c1", "shell", {"command": "ls"}, go())
    assert (gate.allowed, gate.arguments) == (True, {"command": "ls"})
    [diagnostic] = rig.events(Diagnostic)
    assert diagnostic.message == "hook vague beforeToolExecute: allow must be a boolean, got a string; ignored"


@pytest.mark.parametrize("reason", ["42", '""', "null"])
def test_H14_a_refusal_whose_reason_is_not_a_non_empty_string_names_the_hook(rig, reason):
    rig.write_hook("deny", hook(beforeToolExecute=f"function () {{ return {{ allow: false, reason: {reason} }}; }}"))
    gate = rig.chain("deny").before_tool_execute("c1", "shell", {"command": "ls"}, go())
    assert (gate.allowed, gate.arguments, gate.refused_by) == (False, {"command": "ls"}, "deny")
    assert gate.refusal() == ToolResult("refused by hook deny", True)


def test_H13_allow_true_with_a_reason_is_a_valid_answer_that_changes_nothing(rig):
    rig.write_hook("fine", hook(beforeToolExecute='function () { return { allow: true, reason: "looks safe" }; }'))
    gate = rig.chain("fine").before_tool_execute("c1", "shell", {"command": "ls"}, go())
    assert (gate.allowed, gate.arguments) == (True, {"command": "ls"})
    assert rig.events(Diagnostic) == []
    assert [(d.effect, d.changes) for d in rig.events(HookDecision)] == [("none", {})]


def test_H08_after_run_fields_are_unknown_and_reported(rig):
    rig.write_hook("chatty", hook(afterRun="function () { return { summary: 'done' }; }"))
    rig.chain("chatty").after_run("end_turn", go())
    [diagnostic] = rig.events(Diagnostic)
    assert diagnostic.message == "hook chatty afterRun: unknown field(s) summary; ignored"


def test_the_ledger_records_only_what_a_hook_really_changed(rig):
    rig.write_hook("same", hook(afterToolExecute="function (ctx, c, r) { return { text: r.text }; }"))
    rig.write_hook("flag", hook(afterToolExecute="function (ctx, c, r) { return { text: r.text, isError: true }; }"))
    out = rig.chain("same", "flag").after_tool_execute("c1", "t", {}, ToolResult("kept"), go())
    assert out == ToolResult("kept", True)
    assert [(d.hook, d.effect, d.changes) for d in rig.events(HookDecision)] == [
        ("same", "none", {}), ("flag", "rewrote", {"isError": {"before": False, "after": True}})]


# -- the decision ledger: every hook call, exactly ------------------------------------------------
def _ledger(rig) -> list[tuple]:
    decisions = rig.events(HookDecision)
    assert all(isinstance(d.duration_ms, float) and d.duration_ms >= 0 for d in decisions)
    return [(d.hook, d.point, d.effect, d.call_id, d.changes, d.error) for d in decisions]


def _diagnostics(rig) -> list[tuple]:
    return [(d.source, d.message, d.path) for d in rig.events(Diagnostic)]


@pytest.mark.parametrize(("body", "effect", "error", "message"), [
    ("return null;", "none", None, None),
    ("return;", "none", None, None),
    ("return 42;", "invalid", "returned number",
     "hook h returned number from afterToolExecute; expected an object or nothing; ignored"),
    ('return "text";', "invalid", "returned string",
     "hook h returned string from afterToolExecute; expected an object or nothing; ignored"),
    ('throw new Error("oops");', "threw", "Error: oops", "hook h threw in afterToolExecute and was skipped: Error: oops"),
])
def test_the_ledger_records_a_hook_that_has_no_say(rig, body, effect, error, message):
    path = rig.write_hook("h", hook(afterToolExecute=f"function () {{ {body} }}"))
    assert rig.chain("h").after_tool_execute("c4", "t", {}, ToolResult("kept"), go()) == ToolResult("kept")
    [(hook_name, point, got_effect, call_id, changes, got_error)] = _ledger(rig)
    assert (hook_name, point, got_effect, call_id, changes) == ("h", "afterToolExecute", effect, "c4", {})
    assert got_error == error or (effect == "threw" and got_error.startswith(error))
    diagnostics = _diagnostics(rig)
    if message is None:
        assert diagnostics == []
    else:
        [(source, got_message, got_path)] = diagnostics
        assert (source, got_path) == ("hook:h.afterToolExecute", str(path))
        assert got_message == message or (effect == "threw" and got_message.startswith(message))


def test_the_ledger_names_each_point_and_what_changed(rig):
    path = rig.write_hook("all", hook(
        beforeRun="function () { return { note: 1 }; }",
        beforeModelRequest='function (ctx, r) { return { system: r.system + "!" }; }',
        afterModelResponse='function (ctx, r) { return { text: "[x]", thinking: r.thinking }; }',
        beforeToolExecute="function (ctx, c) { const a = { ...c.arguments, flag: null }; delete a.old; return { arguments: a }; }",
        afterToolExecute='function () { return { text: "done" }; }',
        afterRun="function () { return { summary: 2 }; }",
    ))
    chain = rig.chain("all")
    chain.before_run("s", "a", "m", go())
    assert chain.before_model_request("sys", "m", [], go()) == "sys!"
    assert chain.after_model_response(ModelResponse("card", "hmm"), go()) == ModelResponse("[x]", "hmm")
    gate = chain.before_tool_execute("c1", "t", {"old": 1, "kept": 2}, go())
    assert gate.arguments == {"kept": 2, "flag": None}
    assert chain.after_tool_execute("c1", "t", gate.arguments, ToolResult("4"), go()) == ToolResult("done")
    chain.after_run("end_turn", go())
    assert _ledger(rig) == [
        ("all", "beforeRun", "invalid", None, {}, "unknown field(s) note"),
        ("all", "beforeModelRequest", "rewrote", None, {"system": {"before_chars": 3, "after_chars": 4}}, None),
        ("all", "afterModelResponse", "rewrote", None, {"text": {"before_chars": 4, "after_chars": 3}}, None),
        ("all", "beforeToolExecute", "rewrote", "c1",
         {"arguments.flag": {"before": None, "after": None}, "arguments.old": {"before": 1, "after": None}}, None),
        ("all", "afterToolExecute", "rewrote", "c1", {"text": {"before_chars": 1, "after_chars": 4}}, None),
        ("all", "afterRun", "invalid", None, {}, "unknown field(s) summary"),
    ]
    assert _diagnostics(rig) == [
        ("hook:all.beforeRun", "hook all beforeRun: unknown field(s) note; ignored", str(path)),
        ("hook:all.afterRun", "hook all afterRun: unknown field(s) summary; ignored", str(path)),
    ]


def test_the_ledger_names_the_call_a_silent_before_tool_execute_was_asked_about(rig):
    rig.write_hook("quiet", hook(beforeToolExecute="function () {}"))
    rig.chain("quiet").before_tool_execute("c9", "t", {}, go())
    assert _ledger(rig) == [("quiet", "beforeToolExecute", "none", "c9", {}, None)]


def test_H19_hooks_the_sandbox_cannot_run_at_all_are_skipped_and_the_run_still_ends_in_its_session(
        rig, tmp_path, monkeypatch):
    """What a kernel's shutdown did under load: a signal to the process group ended the V8
    workers mid-turn, no new one would start, and afterRun's SandboxError escaped the run
    (its session had no run_end). A real pool whose workers are killed and cannot restart."""
    import os
    import signal

    from rienda_kernel.engine import PythonNamespace, Rienda, Sandbox, notebook_tools
    from rienda_kernel.engine.sandbox import worker_handle

    from ..helpers.homes import session_lines, write_agent, write_script

    sandbox = Sandbox(memory_limit=64 * 1024 * 1024)
    rig.write_hook("audit", 'module.exports = { afterRun(ctx, e) { ctx.log("after " + e.reason); } };')
    rig.write_hook("late", 'module.exports = { afterRun(ctx, e) { ctx.log("late " + e.reason); } };')
    write_agent(rig.home, "careful", ["python"], ["audit", "late"], model="scripted/careful.yaml")
    write_script(rig.workdir, [{"text": "", "tool_calls": [{"name": "python", "arguments": {"code": "stop_v8()"}}]},
                               {"text": "done"}], "careful.yaml")

    def stop_v8() -> None:
        monkeypatch.setattr(worker_handle, "_BOOT", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
        idle, busy = sandbox.pool.pids()
        for pid in idle + busy:
            os.kill(pid, signal.SIGTERM)

    namespace = PythonNamespace()
    namespace.values["stop_v8"] = stop_v8
    rienda = Rienda(home=rig.home, workdir=rig.workdir, sandbox=sandbox, extra_tools=notebook_tools(namespace))
    ui = NonInteractiveUI(auto_approve=False)
    try:
        result = rienda.conversation("careful").run("go", ui)
    finally:
        sandbox.close()
    assert (result.reason, result.text) == ("end_turn", "done"), result.error
    skipped = [e.message for e in ui.events if isinstance(e, Diagnostic) and "afterRun" in e.message]
    assert [message.split(" threw in")[0] for message in skipped] == ["hook audit", "hook late"]
    assert "a V8 worker did not start: it died of signal 15" in skipped[-1], skipped
    assert session_lines(rig.home, result.session_id)[-1] == {"type": "run_end", "reason": "end_turn", "error": None}
