"""What an extension does to its own values and globals cannot break the bridge.

Through the real sandbox (V8 worker processes): return values that throw when read are a
skipped hook (H19) or an error result, polluted globals leave ``ctx`` and the results
intact, arguments arrive as data, text out of V8 is valid Unicode, and error texts quote
the extension's file, never Rienda's wrapper.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rienda_kernel.engine import Diagnostic, HookDecision, Log, ToolResult

from ...helpers.extensions import go, hook, returning

UNREADABLE = {
    "proxy-get-throws": "new Proxy({}, { get() { throw new Error('no reading me'); } })",
    "then-getter-throws": "({ get then() { throw new Error('no then'); } })",
    "toJSON-pollution-throws": "(Object.prototype.toJSON = () => { throw new Error('polluted'); }, { text: 'x' })",
    "nested-100000-deep": "(() => { let v = {}; for (let i = 0; i < 100000; i++) v = { a: v }; return v; })()",
    # Readable, but deeper than Python's own JSON code copes with further on (common.bounded.MAX_DEPTH).
    "nested-300-deep": "(() => { let v = {}; for (let i = 0; i < 300; i++) v = { a: v }; return v; })()",
}


# -- item 3: a broken hook is skipped, never fatal (H19) ----------------------------------
@pytest.mark.parametrize("returned", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_H19_a_hook_whose_return_value_cannot_be_read_is_skipped_as_threw(rig, returned):
    rig.write_hook("broken", hook(afterToolExecute=f"function () {{ return {returned}; }}"))
    rig.write_hook("after", hook(afterToolExecute='function (ctx, c, r) { return { text: r.text + "!" }; }'))
    out = rig.chain("broken", "after").after_tool_execute("c", "t", {}, ToolResult("ok"), go())
    assert out == ToolResult("ok!")
    [diagnostic] = rig.events(Diagnostic)
    assert diagnostic.message.startswith("hook broken threw in afterToolExecute and was skipped: ")
    assert [d.effect for d in rig.events(HookDecision)] == ["threw", "rewrote"]


@pytest.mark.parametrize("returned", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_a_tool_whose_return_value_cannot_be_read_is_an_error_result(rig, returned):
    rig.write_tool("broken", returning(returned))
    result = rig.tool("broken", {})
    assert result.is_error and result.text.startswith("broken failed: ")
    rig.write_tool("after", returning('"alive"'))
    assert rig.tool("after", {}).text == "alive"


POLLUTION = """
JSON.stringify = () => { throw new Error("JSON.stringify"); };
JSON.parse = () => { throw new Error("JSON.parse"); };
Object.defineProperty(Object.prototype, "error", { get() { throw new Error("error getter"); }, configurable: true });
Object.prototype.toJSON = function () { return this; };
Array.prototype[Symbol.iterator] = function* () { throw new Error("iterator"); };
Array.prototype.push = Array.prototype.join = Array.prototype.map = () => { throw new Error("array"); };
Function.prototype.call = Function.prototype.apply = () => { throw new Error("call"); };
String.prototype.charCodeAt = () => 0;
String.prototype.slice = () => "";
Promise.prototype.then = function () {};
globalThis.Promise = function () { throw new Error("Promise"); };
Object.keys = () => { throw new Error("Object.keys"); };
Object.freeze = (x) => x;
"""


def test_polluted_globals_leave_ctx_and_results_intact(rig):
    (rig.workdir / "in.txt").write_text("from the host")
    rig.write_tool("polluter", POLLUTION + """
module.exports = {
  description: "Pollutes everything, then uses ctx.",
  parameters: { type: "object" },
  execute: async function (ctx, args) {
    ctx.log("logged", { n: args.n });
    const text = ctx.file.read("in.txt");
    await null;
    return { text: text + " " + args.n + " " + ctx.session.id, isError: false };
  },
};
""")
    assert rig.tool("polluter", {"n": 7}) == ToolResult("from the host 7 s-test")
    assert [e.text for e in rig.events(Log)] == ['logged {"n":7}']


def test_a_polluting_hook_still_rewrites_through_the_bridge(rig):
    rig.write_hook("polluter", POLLUTION + hook(
        afterToolExecute='function (ctx, call, result) { return { text: result.text.toUpperCase() }; }'))
    out = rig.chain("polluter").after_tool_execute("c", "t", {}, ToolResult("quiet"), go())
    assert out == ToolResult("QUIET")


# -- item 4: out of memory in a timer or an async function --------------------------------
@pytest.mark.parametrize(
    "returned",
    ["new Promise(() => setTimeout(() => { const a = []; while (true) a.push(new Array(50000).fill(1)); }, 5))",
     "(async () => { await null; const a = []; while (true) a.push(new Array(50000).fill(1)); })()"],
    ids=["timer", "async-function"],
)
def test_out_of_memory_in_a_timer_or_an_async_function_says_so(rig, returned):
    rig.write_tool("hungry", returning(returned))
    result = rig.tool("hungry", {})
    assert result.is_error and "ran out of memory" in result.text
    assert "never settle" not in result.text


def test_error_texts_quote_the_file_never_the_wrapper(rig):
    path = rig.write_tool("typo", 'module.exports = { description: "x", parameters: {}, execute() { return 1 +; } };')
    [diagnostic] = rig.catalog().diagnostics
    assert diagnostic.message == f"{path}:1:76: SyntaxError: Unexpected token ';'; skipped"
    rig.write_tool("thrower", 'module.exports = { description: "x", parameters: { type: "object" }, '
                              'execute() { return nothing.here; } };')
    result = rig.tool("thrower", {})
    assert result.text.endswith(f"ReferenceError: nothing is not defined (at {rig.home}/tools/thrower/index.js:1:82)")
    assert "(function" not in diagnostic.message + result.text


# -- item 5: arguments cross into V8 as data ----------------------------------------------
def test_a_proto_key_in_the_arguments_is_an_own_property_not_a_prototype(rig):
    rig.write_tool("mode", """
module.exports = {
  description: "Reports the mode it got.",
  parameters: { type: "object", properties: { mode: { enum: ["read"] } } },
  execute: function (ctx, args) {
    return JSON.stringify({ mode: args.mode === undefined ? null : args.mode,
                            plain: Object.getPrototypeOf(args) === Object.prototype,
                            own: Object.keys(args) });
  },
};
""")
    result = rig.tool("mode", '{"__proto__": {"mode": "admin"}}')
    assert json.loads(result.text) == {"mode": None, "plain": True, "own": ["__proto__"]}


# -- item 7: lone surrogates are repaired at the V8 boundary ------------------------------
def test_lone_surrogates_from_a_tool_its_log_and_its_host_calls_are_repaired(rig):
    rig.write_tool("cut", """
module.exports = {
  description: "Cuts an emoji in half everywhere.",
  parameters: { type: "object" },
  execute: function (ctx) {
    const cut = "abc😀".slice(0, 4);
    ctx.log(cut);
    ctx.file.write("cut.txt", cut);
    return cut;
  },
};
""")
    assert rig.tool("cut", {}) == ToolResult("abc\ufffd")
    assert [e.text for e in rig.events(Log)] == ["abc\ufffd"]
    assert (rig.workdir / "cut.txt").read_text(encoding="utf-8") == "abc\ufffd"


def test_a_json_run_with_a_lone_surrogate_in_a_tool_result_prints_valid_utf8(rig):
    rig.write_tool("cut", returning('"abc😀".slice(0, 4)'))
    (rig.home / "agents").mkdir()
    (rig.home / "agents" / "cutter.md").write_text("---\nmodel: scripted/script.yaml\ntools: [cut]\n---\nCut.\n")
    (rig.workdir / "script.yaml").write_text(json.dumps(
        [{"text": "", "tool_calls": [{"name": "cut", "arguments": {}}]}, {"text": "done"}]))
    done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "--home", str(rig.home), "run", "--json",
                           "--agent", "cutter", "--workdir", str(rig.workdir), "go"],
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    events = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]
    assert [e["text"] for e in events if e.get("type") == "tool_result"] == ["abc\ufffd"]
