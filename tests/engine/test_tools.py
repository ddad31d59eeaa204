"""Tools through a real V8 isolate: invocation semantics and the ctx API (T07-T22)."""

from __future__ import annotations

import json
import os
import threading

import pytest

from rienda_kernel.engine import (
    OUTPUT_CAP,
    CancelToken,
    Confirm,
    Interrupted,
    Log,
    NonInteractiveUI,
    Notify,
    Output,
    ToolResult,
)

from ..helpers.extensions import returning

ECHO_TOOL = """
module.exports = {
  description: "Echoes.",
  parameters: {
    type: "object",
    properties: { n: { type: "integer" }, s: { type: "string" } },
    required: ["n"],
    additionalProperties: false,
  },
  execute: function (ctx, args) { return "n=" + args.n + " s=" + args.s; },
};
"""


# -- T07: arguments decoded from JSON and validated against parameters ---------------------
def test_T07_arguments_arrive_decoded_from_json(rig):
    rig.write_tool("echo", ECHO_TOOL)
    assert rig.tool("echo", '{"n": 3, "s": "x"}') == ToolResult("n=3 s=x")
    assert rig.tool("echo", {"n": 4}) == ToolResult("n=4 s=undefined")


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"n": "three"}', "field 'n': 'three' is not of type 'integer'"),
        ("{}", "'n' is a required property"),
        ('{"n": 1, "extra": true}', "Additional properties are not allowed ('extra' was unexpected)"),
        ('{"n": 1', "not valid JSON"),
        ("[1, 2]", "must be a JSON object, got an array"),
        ('"n=1"', "must be a JSON object, got a string"),
        ("3", "must be a JSON object, got a number"),
        ("2.5", "must be a JSON object, got a number"),
        ("true", "must be a JSON object, got a boolean"),
        ("null", "must be a JSON object, got null"),
    ],
)
def test_T07_mismatched_arguments_are_an_error_result_and_execute_does_not_run(rig, arguments, expected):
    rig.write_tool("echo", ECHO_TOOL.replace('return "n="', 'ctx.file.write("ran.txt", "yes"); return "n="'))
    result = rig.tool("echo", arguments)
    assert result.is_error
    assert expected in result.text
    assert "echo" in result.text
    assert not (rig.workdir / "ran.txt").exists()


def test_T07_execute_is_called_once_per_invocation(rig):
    rig.write_tool("count", """
module.exports = {
  description: "Appends a line per call.",
  parameters: { type: "object" },
  execute: function (ctx) {
    const before = ctx.file.exists("calls.txt") ? ctx.file.read("calls.txt") : "";
    ctx.file.write("calls.txt", before + "x");
    return "ok";
  },
};
""")
    for _ in range(3):
        rig.tool("count", {})
    assert (rig.workdir / "calls.txt").read_text() == "xxx"


# -- T08 / T09: typed returns, no implicit serialization ------------------------------------
def test_T08_string_and_text_object_returns(rig):
    rig.write_tool("s", returning('"plain"'))
    rig.write_tool("o", returning('{ text: "boxed" }'))
    rig.write_tool("e", returning('{ text: "bad", isError: true }'))
    assert rig.tool("s", {}) == ToolResult("plain", False)
    assert rig.tool("o", {}) == ToolResult("boxed", False)
    assert rig.tool("e", {}) == ToolResult("bad", True)


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("42", "a number (42)"),
        ("true", "a boolean (true)"),
        ("[1, 2]", "an array ([1, 2])"),
        ("null", "returned null"),
        ("undefined", "returned undefined"),
        ('{ count: 3 }', """an object without a string 'text' ({"count": 3})"""),
        ('{ text: 5 }', """an object without a string 'text' ({"text": 5})"""),
        ('{ text: "x", isError: "yes" }', "isError as a string"),
        ('{ text: "x", isError: 1 }', "isError as a number"),
        ('{ text: "x", isError: {} }', "isError as an object"),
        ('["é", "ñ"]', 'an array (["é", "ñ"])'),  # the preview keeps the characters as they are
        ("Array(50).fill(7)", f"an array ({json.dumps([7] * 50)[:77]}...)"),  # cut at 80 characters
    ],
)
def test_T08_anything_else_is_an_error_result_saying_what_came_back(rig, expression, says):
    rig.write_tool("bad", returning(expression))
    result = rig.tool("bad", {})
    assert result.is_error
    assert says in result.text


def test_T09_structured_data_is_serialized_by_the_tool_itself(rig):
    rig.write_tool("j", returning('JSON.stringify({ count: 3, file: "a.txt" })'))
    result = rig.tool("j", {})
    assert not result.is_error
    assert json.loads(result.text) == {"count": 3, "file": "a.txt"}


# -- T10: a throw fails the invocation, never the run ---------------------------------------
def test_T10_a_throw_becomes_the_error_text_with_file_line_and_column(rig):
    path = rig.write_tool("thrower", """
module.exports = {
  description: "Throws.",
  parameters: { type: "object" },
  execute: function (ctx, args) {
    throw new RangeError("the answer is out of range");
  },
};
""")
    result = rig.tool("thrower", {})
    assert result.is_error
    assert "RangeError: the answer is out of range" in result.text
    assert f"{path}:6:11" in result.text
    # The engine is unharmed: the next invocation works.
    rig.write_tool("ok", returning('"fine"'))
    assert rig.tool("ok", {}) == ToolResult("fine")


def test_T10_an_async_execute_is_awaited_and_its_rejection_is_a_result(rig):
    rig.write_tool("later", """
module.exports = {
  description: "Async.",
  parameters: { type: "object", properties: { fail: { type: "boolean" } } },
  execute: async function (ctx, args) {
    const text = await ctx.file.read("in.txt");
    await new Promise((resolve) => setTimeout(resolve, 10));
    if (args.fail) throw new Error("async failure");
    return text.toUpperCase();
  },
};
""")
    (rig.workdir / "in.txt").write_text("quiet")
    assert rig.tool("later", {}) == ToolResult("QUIET")
    failed = rig.tool("later", {"fail": True})
    assert failed.is_error and "Error: async failure" in failed.text


def test_T10_a_promise_that_can_never_settle_is_a_clear_error(rig):
    rig.write_tool("stuck", returning("new Promise(() => {})"))
    result = rig.tool("stuck", {})
    assert result.is_error
    assert "execute returned a promise that can never settle" in result.text


# -- T11 / T19: the same ctx with its top-level values --------------------------------------
CTX_DUMP = """
module.exports = {
  description: "Dumps ctx.",
  parameters: { type: "object" },
  execute: function (ctx) {
    return JSON.stringify({
      workdir: ctx.workdir, session: ctx.session, agent: ctx.agent, config: ctx.config,
      keys: Object.keys(ctx).sort(), home: ctx.env.HOME,
    });
  },
};
"""


def test_T19_top_level_values(rig):
    rig.write_tool("dump", CTX_DUMP)
    config = {"auto_approve": False, "providers": {"openai": {"api_key": "[redacted]"}}}
    dumped = json.loads(rig.tool("dump", {}, config=config).text)
    assert dumped["workdir"] == str(rig.workdir.resolve())
    assert dumped["session"] == {"id": "s-test"}
    assert dumped["agent"] == {"id": "tester", "description": "A test agent.",
                               "model": "scripted/x.yaml", "tools": [], "hooks": []}
    assert dumped["config"] == config
    assert dumped["keys"] == ["agent", "config", "confirm", "env", "file", "http", "log", "notify",
                              "session", "subagent", "system", "workdir"]
    assert dumped["home"] == os.environ.get("HOME")


def test_T13_env_is_a_read_only_plain_object(rig):
    rig.write_tool("env", """
module.exports = {
  description: "Env.",
  parameters: { type: "object" },
  execute: function (ctx) {
    "use strict";
    let threw = false;
    try { ctx.env.RIENDA_PROBE = "changed"; } catch (e) { threw = e instanceof TypeError; }
    return JSON.stringify({ value: ctx.env.RIENDA_PROBE, threw, plain: Object.getPrototypeOf(ctx.env) === Object.prototype });
  },
};
""")
    result = rig.tool("env", {}, env={"RIENDA_PROBE": "original"})
    assert json.loads(result.text) == {"value": "original", "threw": True, "plain": True}


# -- T12: ctx.file --------------------------------------------------------------------------
def test_T12_file_api_resolves_relative_paths_against_the_workdir(rig, tmp_path):
    rig.write_tool("files", """
module.exports = {
  description: "Files.",
  parameters: { type: "object", properties: { abs: { type: "string" } } },
  execute: function (ctx, args) {
    ctx.file.write("sub/out.txt", "héllo ✓");
    const out = {
      read: ctx.file.read("sub/out.txt"),
      exists: ctx.file.exists("sub/out.txt"),
      missing: ctx.file.exists("nope.txt"),
      list: ctx.file.list("sub"),
      root: ctx.file.list(),
      abs: ctx.file.read(args.abs),
    };
    try { ctx.file.read("nope.txt"); } catch (e) { out.error = e.name + ": " + e.message; }
    return JSON.stringify(out);
  },
};
""")
    outside = tmp_path / "outside.txt"
    outside.write_text("absolute")
    out = json.loads(rig.tool("files", {"abs": str(outside)}).text)
    assert (rig.workdir / "sub" / "out.txt").read_text(encoding="utf-8") == "héllo ✓"
    assert out["read"] == "héllo ✓"
    assert out["exists"] is True and out["missing"] is False
    assert out["list"] == ["out.txt"]
    assert "sub/" in out["root"]
    assert out["abs"] == "absolute"
    assert out["error"].startswith("FileNotFoundError: ")
    assert "nope.txt" in out["error"]


def test_T12_an_uncaught_missing_file_is_an_error_result_naming_it(rig):
    rig.write_tool("wc", """
module.exports = {
  description: "Reads.",
  parameters: { type: "object" },
  execute: function (ctx) { return ctx.file.read("absent.txt"); },
};
""")
    result = rig.tool("wc", {})
    assert result.is_error
    assert "FileNotFoundError" in result.text and "absent.txt" in result.text


# -- T15 / T16: ctx.system.exec, streamed live ----------------------------------------------
EXEC_TOOL = """
module.exports = {
  description: "Runs a command.",
  parameters: { type: "object", properties: { command: { type: "string" }, options: { type: "object" } } },
  execute: function (ctx, args) { return JSON.stringify(ctx.system.exec(args.command, args.options)); },
};
"""


def test_T15_exec_returns_code_stdout_stderr(rig):
    rig.write_tool("exec", EXEC_TOOL)
    (rig.workdir / "d").mkdir()
    out = json.loads(rig.tool("exec", {"command": "pwd; echo oops >&2; echo $GREETING; exit 3",
                                       "options": {"cwd": "d", "env": {"GREETING": "hi"}}}).text)
    assert out["code"] == 3
    assert out["stdout"] == f"{(rig.workdir / 'd').resolve()}\nhi\n"
    assert out["stderr"] == "oops\n"


def test_T15_exec_timeout_kills_and_says_so(rig):
    rig.write_tool("exec", EXEC_TOOL)
    out = json.loads(rig.tool("exec", {"command": "echo start; sleep 30", "options": {"timeout_ms": 300}}).text)
    assert out["timedOut"] is True
    assert out["stdout"] == "start\n"
    assert "timed out after 300 ms" in out["stderr"]


def test_T16_log_and_exec_output_reach_the_front_end_while_the_tool_runs(rig):
    rig.write_tool("slow", """
module.exports = {
  description: "Slow.",
  parameters: { type: "object" },
  execute: function (ctx) {
    ctx.log("starting");
    console.warn("careful");
    const r = ctx.system.exec("echo first; while [ ! -e release ]; do sleep 0.02; done; echo second");
    return r.stdout;
  },
};
""")
    seen: list = []
    arrived = threading.Event()

    def sink(event):
        seen.append(event)
        if isinstance(event, Output) and "first" in event.text:
            arrived.set()

    rig.ui = NonInteractiveUI(sink=sink)
    box: dict = {}
    worker = threading.Thread(target=lambda: box.setdefault("result", rig.tool("slow", {})))
    worker.start()
    assert arrived.wait(10), "exec output did not arrive while the tool ran"
    assert worker.is_alive(), "the tool finished before its output was seen"
    assert [e.text for e in seen if isinstance(e, Log)] == ["starting", "warn: careful"]
    (rig.workdir / "release").touch()
    worker.join(10)
    assert box["result"] == ToolResult("first\nsecond\n")
    assert all(e.source == "tool:slow" for e in seen)


# -- T14: ctx.http.fetch (against a real server on 127.0.0.1) --------------------------------
def test_T14_fetch_returns_status_headers_body(rig, http_server):
    rig.write_tool("fetch", """
module.exports = {
  description: "Fetches.",
  parameters: { type: "object", properties: { url: { type: "string" } } },
  execute: function (ctx, args) {
    const res = ctx.http.fetch(args.url, { method: "POST", headers: { "X-Test": "1" }, body: "ping" });
    let failure = null;
    try { ctx.http.fetch("http://127.0.0.1:1/nothing", { timeout_ms: 2000 }); } catch (e) { failure = e.message; }
    return JSON.stringify({ status: res.status, body: res.body, type: res.headers["content-type"], failure });
  },
};
""")
    out = json.loads(rig.tool("fetch", {"url": http_server.url("/echo")}).text)
    assert out["status"] == 201
    assert json.loads(out["body"]) == {"method": "POST", "path": "/echo", "body": "ping", "x-test": "1"}
    assert out["type"] == "application/json"
    assert "127.0.0.1:1" in out["failure"]


# -- T17 / T18: confirm and notify ------------------------------------------------------------
CONFIRM_TOOL = """
module.exports = {
  description: "Asks.",
  parameters: { type: "object" },
  execute: function (ctx) {
    const answer = ctx.confirm({ title: "Publish", body: "Push the current branch?" });
    ctx.notify({ title: "asked", body: "answer was " + answer });
    return String(answer);
  },
};
"""


@pytest.mark.parametrize(("auto_approve", "expected", "how"), [(True, "true", "auto-approve"),
                                                               (False, "false", "default-deny")])
def test_T17_non_interactive_confirm_follows_auto_approve(rig, auto_approve, expected, how):
    rig.write_tool("ask", CONFIRM_TOOL)
    rig.ui = NonInteractiveUI(auto_approve=auto_approve)
    assert rig.tool("ask", {}).text == expected
    assert rig.events(Confirm) == [Confirm("tool:ask", "Publish", "Push the current branch?", auto_approve, how)]
    assert rig.events(Notify) == [Notify("tool:ask", "asked", f"answer was {expected}")]


class _WaitingUI(NonInteractiveUI):
    """A front end whose person answers later, from another thread."""

    def __init__(self, sink=None):
        super().__init__(sink=sink)
        self.asked = threading.Event()
        self.answer: bool | None = None
        self.answered = threading.Event()

    def ask(self, title, body, cancel):
        self.asked.set()
        while not self.answered.wait(0.01):
            if cancel.cancelled:
                return False, "interrupted"
        return bool(self.answer), "user"


def test_T17_confirm_blocks_until_the_user_answers(rig):
    rig.write_tool("ask", CONFIRM_TOOL)
    rig.ui = _WaitingUI()
    box: dict = {}
    worker = threading.Thread(target=lambda: box.setdefault("result", rig.tool("ask", {})))
    worker.start()
    assert rig.ui.asked.wait(30)
    assert rig.events(Notify) == [], "the tool went on before anyone answered"
    rig.ui.answer = True
    rig.ui.answered.set()
    worker.join(30)
    assert box["result"].text == "true"
    assert rig.events(Notify) == [Notify("tool:ask", "asked", "answer was true")]


def test_T18_notify_returns_nothing(rig):
    rig.write_tool("n", returning('String(ctx.notify({ title: "t", body: "b" }))'))
    assert rig.tool("n", {}).text == "undefined"
    assert rig.events(Notify) == [Notify("tool:n", "t", "b")]


# -- T20: output cap ----------------------------------------------------------------------------
def test_T20_returned_text_is_capped_on_a_character_boundary(rig):
    rig.write_tool("big", returning('"é".repeat(200000)'))  # 400,000 bytes of UTF-8
    result = rig.tool("big", {})
    encoded = result.text.encode("utf-8")
    assert len(encoded) <= OUTPUT_CAP
    assert len(encoded) > OUTPUT_CAP - 100
    assert result.text.endswith("[rienda: output cut at 256 KiB]")
    assert set(result.text.split("\n")[0]) == {"é"}


def test_T20_streamed_output_is_not_capped(rig):
    rig.write_tool("loud", """
module.exports = {
  description: "Loud.",
  parameters: { type: "object" },
  execute: function (ctx) { ctx.log("x".repeat(400000)); ctx.system.exec("head -c 400000 /dev/zero | tr '\\\\0' y"); return "done"; },
};
""")
    assert rig.tool("loud", {}).text == "done"
    assert sum(len(e.text) for e in rig.events(Log)) == 400000
    assert sum(len(e.text) for e in rig.events(Output)) == 400000


# -- T21: no timeout, but stoppable -------------------------------------------------------------
# Each body signals (a log line, a command's output, a pending confirm) once it is in the
# part that never ends; the test stops it from then on. bench/bench_cancel.py measures how
# long a stop takes.
@pytest.mark.parametrize(
    ("body", "ready"),
    [
        ('ctx.log("ready"); while (true) {}', "log"),
        ("ctx.log('ready'); while (true) { try { ctx.file.read('missing'); } catch (e) {} }", "log"),
        ("ctx.confirm({ title: 'never answered', body: '' }); while (true) {}", "confirm"),
        ("ctx.system.exec('echo ready; sleep 60');", "output"),
        ("return new Promise(() => setTimeout(() => { ctx.log('ready'); while (true) {} }, 5));", "log"),
    ],
    ids=["busy-loop", "catch-all-loop", "pending-confirm", "long-exec", "loop-in-timer"],
)
def test_T21_an_invocation_runs_until_stopped_from_another_thread(rig, body, ready):
    rig.write_tool("forever", f"""
module.exports = {{
  description: "Never ends.",
  parameters: {{ type: "object" }},
  execute: function (ctx) {{ {body} }},
}};
""")
    signalled = threading.Event()
    kinds = {"log": Log, "output": Output}

    def sink(event):
        if ready in kinds and isinstance(event, kinds[ready]) and "ready" in event.text:
            signalled.set()

    rig.ui = _WaitingUI(sink)
    cancel = CancelToken()
    box: dict = {}

    def run():
        try:
            box["result"] = rig.tool("forever", {}, cancel=cancel)
        except Interrupted as exc:
            box["interrupted"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    assert (rig.ui.asked if ready == "confirm" else signalled).wait(30), "the tool never got going"
    cancel.cancel()
    worker.join(30)
    assert not worker.is_alive(), "stop did not end the invocation"
    assert "interrupted" in box, box
    rig.write_tool("after", returning('"alive"'))
    assert rig.tool("after", {}).text == "alive"


# -- T22: fresh state -----------------------------------------------------------------------------
def test_T22_nothing_persists_in_memory_between_invocations(rig):
    rig.write_tool("memory", """
let loads = (globalThis.loads || 0) + 1;
globalThis.loads = loads;
module.exports = {
  description: "Remembers?",
  parameters: { type: "object" },
  execute: function (ctx) {
    globalThis.calls = (globalThis.calls || 0) + 1;
    Array.prototype.polluted = true;
    return JSON.stringify({ loads, calls: globalThis.calls });
  },
};
""")
    first = rig.tool("memory", {}).text
    second = rig.tool("memory", {}).text
    assert first == second == '{"loads":1,"calls":1}'


def test_sandbox_has_no_require_process_or_fetch(rig):
    rig.write_tool("globals", returning(
        'JSON.stringify([typeof require, typeof process, typeof fetch, typeof module, typeof exports])'))
    assert json.loads(rig.tool("globals", {}).text) == ["undefined", "undefined", "undefined", "object", "object"]


def test_an_allocation_bomb_ends_that_invocation_and_the_process_survives(rig):
    rig.write_tool("bomb", returning('(() => { const a = []; while (true) a.push(new Array(100000).fill("x" + a.length)); })()'))
    result = rig.tool("bomb", {})
    assert result.is_error
    assert "ran out of memory" in result.text
    rig.write_tool("after", returning('"alive"'))
    assert rig.tool("after", {}).text == "alive"


def test_T20_a_built_in_tools_result_is_capped_and_its_live_output_is_not(rig):
    """The cap applies to every tool's result, the built-in ``shell`` included."""
    megabyte = 1024 * 1024
    result = rig.tool("shell", {"command": f"head -c {megabyte} /dev/zero | tr '\\0' x"})
    encoded = result.text.encode("utf-8")
    assert not result.is_error
    assert OUTPUT_CAP - 100 < len(encoded) <= OUTPUT_CAP
    assert result.text.endswith("\n[rienda: output cut at 256 KiB]")
    assert set(result.text[: -len("\n[rienda: output cut at 256 KiB]")]) == {"x"}
    assert sum(len(e.text) for e in rig.events(Output)) == megabyte


def test_T08_a_wrong_return_is_named_with_the_tool_and_the_way_to_fix_it(rig):
    rig.write_tool("bad", returning("42"))
    assert rig.tool("bad", {}) == ToolResult(
        "bad returned a number (42); execute must return a string or { text, isError } "
        "(serialize structured data with JSON.stringify)", True)


NESTED_TOOL = """
module.exports = {
  description: "Nested.",
  parameters: { type: "object", properties: { opts: { type: "object", properties: { depth: { type: "integer" } } } } },
  execute: function (ctx, args) { return JSON.stringify(args); },
};
"""


def test_T07_the_error_names_the_nested_field_or_the_arguments_as_a_whole(rig):
    rig.write_tool("nested", NESTED_TOOL)
    rig.write_tool("echo", ECHO_TOOL)
    assert rig.tool("nested", {"opts": {"depth": "x"}}) == ToolResult(
        "invalid arguments for nested: field 'opts/depth': 'x' is not of type 'integer'", True)
    assert rig.tool("echo", {}) == ToolResult("invalid arguments for echo: arguments: 'n' is a required property", True)


def test_T07_empty_arguments_text_is_an_empty_object(rig):
    rig.write_tool("nested", NESTED_TOOL)
    assert rig.tool("nested", "") == ToolResult("{}")
    assert rig.tool("nested", "  \n") == ToolResult("{}")


def test_T20_text_of_exactly_the_cap_is_kept_whole(rig):
    rig.write_tool("full", returning(f'"x".repeat({OUTPUT_CAP})'))
    assert rig.tool("full", {}) == ToolResult("x" * OUTPUT_CAP)
    rig.write_tool("over", returning(f'"x".repeat({OUTPUT_CAP + 1})'))
    assert rig.tool("over", {}).text.endswith("[rienda: output cut at 256 KiB]")


def test_a_built_in_tools_failure_is_an_error_result(rig):
    assert rig.tool("shell", {"command": "echo oops >&2; exit 3"}) == ToolResult("oops\n\nexit code 3", True)
    assert rig.tool("shell", {"command": "echo fine"}) == ToolResult("fine\n\nexit code 0", False)


def test_T20_a_lone_surrogate_in_the_text_does_not_break_the_cap(rig):
    """JavaScript strings may hold half a surrogate pair: it becomes U+FFFD as it leaves
    the sandbox (so the text is valid UTF-8 everywhere after), and the cap still holds."""
    rig.write_tool("half", returning('"a" + String.fromCharCode(0xD800) + "b"'))
    assert rig.tool("half", {}) == ToolResult("a\ufffdb")
    rig.write_tool("long", returning(f'String.fromCharCode(0xD800) + "x".repeat({OUTPUT_CAP})'))
    cut = rig.tool("long", {}).text
    assert len(cut.encode("utf-8")) <= OUTPUT_CAP
    assert cut.startswith("\ufffdxxx") and cut.endswith("[rienda: output cut at 256 KiB]")
