"""One hook point's chain as one worker job: the hooks' contracts hold, and so do the
sandbox's (each hook in a runtime of its own, interrupts, out of memory mid-chain).

Real worker processes and real V8; the job count is the sandbox's own diagnostic.
"""

from __future__ import annotations

import threading

import pytest

from rienda_kernel.engine import CancelToken, HookDecision, Interrupted, Log, NonInteractiveUI, Sandbox, ToolResult

from ...helpers.extensions import hook

MB = 1024 * 1024


@pytest.fixture
def own_sandbox():
    sandbox = Sandbox(memory_limit=64 * MB, stop_grace=30)
    yield sandbox
    sandbox.close()


def decisions(rig):
    return [(d.hook, d.effect) for d in rig.events(HookDecision)]


def test_a_point_is_one_job_that_stops_at_the_first_refusal_and_records_every_decision(rig):
    rig.write_hook("https", hook(beforeToolExecute="""function (ctx, call) {
      ctx.log("https saw " + call.arguments.url);
      return { arguments: { url: call.arguments.url.replace("http:", "https:") } }; }"""))
    rig.write_hook("quiet", hook(beforeToolExecute="function (ctx, call) { ctx.log('quiet saw ' + call.arguments.url); }"))
    rig.write_hook("deny", hook(beforeToolExecute="""function (ctx, call) {
      ctx.log("deny saw " + call.arguments.url); return { allow: false, reason: "no " + call.arguments.url }; }"""))
    rig.write_hook("never", hook(beforeToolExecute="function (ctx) { ctx.log('never'); }"))
    chain = rig.chain("https", "quiet", "deny", "never")
    jobs = rig.sandbox.jobs
    gate = chain.before_tool_execute("c1", "http", {"url": "http://x"}, CancelToken())
    assert rig.sandbox.jobs == jobs + 1
    assert (gate.allowed, gate.reason, gate.refused_by) == (False, "no https://x", "deny")
    assert gate.arguments == {"url": "https://x"}
    assert [(e.source, e.text) for e in rig.events(Log)] == [
        ("hook:https.beforeToolExecute", "https saw http://x"),
        ("hook:quiet.beforeToolExecute", "quiet saw https://x"),
        ("hook:deny.beforeToolExecute", "deny saw https://x"),
    ]
    assert decisions(rig) == [("https", "rewrote"), ("quiet", "none"), ("deny", "refused")]
    [rewrote] = [d for d in rig.events(HookDecision) if d.effect == "rewrote"]
    assert rewrote.changes == {"arguments.url": {"before": "http://x", "after": "https://x"}}
    assert all(d.call_id == "c1" for d in rig.events(HookDecision))


def test_hooks_of_one_chain_share_no_state(rig):
    body = """function (ctx, call, result) {
      const seen = [typeof globalThis.mark, typeof Object.prototype.polluted, String(typeof counter)];
      globalThis.mark = 1; Object.prototype.polluted = 1;
      return { text: result.text + seen.join(",") + ";" }; }"""
    for name in ("a", "b", "c"):
        rig.write_hook(name, f"var counter = (typeof counter === 'number' ? counter : 0) + 1;\n"
                       + hook(afterToolExecute=body))
    result = rig.chain("a", "b", "c").after_tool_execute("c1", "read", {}, ToolResult("", False), CancelToken())
    assert result.text == "undefined,undefined,number;" * 3


def test_a_fatal_out_of_memory_mid_chain_fails_that_hook_and_the_rest_run_from_its_input(rig, own_sandbox):
    rig.sandbox = own_sandbox
    rig.loader.sandbox = own_sandbox
    rig.write_hook("first", hook(afterToolExecute="function (ctx, c, r) { return { text: r.text + '1' }; }"))
    rig.write_hook("bomb", hook(afterToolExecute="function () { new Array(2 ** 29).fill(0); }"))
    rig.write_hook("third", hook(afterToolExecute="function (ctx, c, r) { return { text: r.text + '3' }; }"))
    result = rig.chain("first", "bomb", "third").after_tool_execute("c1", "read", {}, ToolResult("0"), CancelToken())
    assert result == ToolResult("013", False)
    assert decisions(rig) == [("first", "rewrote"), ("bomb", "threw"), ("third", "rewrote")]
    [threw] = [d for d in rig.events(HookDecision) if d.effect == "threw"]
    assert "ran out of memory" in threw.error


def test_a_heap_out_of_memory_mid_chain_fails_that_hook_and_the_chain_goes_on(rig):
    rig.write_hook("hungry", hook(afterToolExecute="""function () {
      const a = []; while (true) a.push(new Array(100000).fill(a.length)); }"""))
    rig.write_hook("after", hook(afterToolExecute="function (ctx, c, r) { return { text: r.text + '!' }; }"))
    result = rig.chain("hungry", "after").after_tool_execute("c1", "read", {}, ToolResult("ok"), CancelToken())
    assert result.text == "ok!"
    assert decisions(rig) == [("hungry", "threw"), ("after", "rewrote")]


@pytest.mark.parametrize("body", ["while (true) {}", "ctx.confirm({ title: 't', body: 'b' }); while (true) {}",
                                  "return new Promise(() => setTimeout(() => { while (true) {} }, 5));"],
                         ids=["busy-loop", "pending-confirm", "loop-in-timer"])
def test_a_stop_mid_chain_ends_it_there_and_keeps_what_came_before(rig, own_sandbox, body):
    rig.sandbox = own_sandbox
    rig.loader.sandbox = own_sandbox
    rig.write_hook("first", hook(afterToolExecute="function (ctx, c, r) { return { text: r.text + '1' }; }"))
    rig.write_hook("stuck", hook(afterToolExecute=f"function (ctx) {{ ctx.log('stuck'); {body} }}"))
    rig.write_hook("never", hook(afterToolExecute="function (ctx) { ctx.log('never'); }"))
    reached = threading.Event()
    rig.ui = NonInteractiveUI(sink=lambda event: reached.set() if isinstance(event, Log) else None)
    chain = rig.chain("first", "stuck", "never")
    cancel = CancelToken()
    box: dict = {}

    def run():
        try:
            box["result"] = chain.after_tool_execute("c1", "read", {}, ToolResult("0"), cancel)
        except Interrupted as exc:
            box["stopped"], box["cause"] = str(exc), str(exc.__cause__)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    assert reached.wait(60), "the stuck hook never started"
    cancel.cancel()
    worker.join(60)
    assert box["stopped"].startswith("stopped while hook stuck was running (afterToolExecute), after ")
    assert box["cause"] == f"{rig.home / 'hooks' / 'stuck' / 'index.js'}: afterToolExecute was stopped"
    assert decisions(rig) == [("first", "rewrote"), ("stuck", "stopped")]  # the hook it stopped, in the ledger
    assert [e.text for e in rig.events(Log)] == ["stuck"]
    after = rig.chain("first").after_tool_execute("c2", "read", {}, ToolResult("0"), CancelToken())
    assert after.text == "01"


def test_a_host_call_answered_stopped_ends_the_chain_at_that_hook(rig, own_sandbox):
    """The host answers a call of a stopped run with Interrupted, and sends the stop on the
    other channel; the worker must not take that answer for the hook's failure and start the
    next hook before the stop arrives (here it never does: the token is not cancelled)."""
    from rienda_kernel.engine.sandbox.chain import ChainRule

    rig.write_hook("stuck", hook(afterToolExecute="function (ctx) { ctx.confirm({ title: 't', body: 'b' }); }"))
    rig.write_hook("never", hook(afterToolExecute="function (ctx) { ctx.log('never'); }"))
    links = [(h.path, h.source) for h in (rig.catalog().hooks[n] for n in ("stuck", "never"))]
    asked: list[str] = []

    def host(index):
        def answer(op, args):
            asked.append(f"{index}:{op}")
            raise Interrupted("the run was stopped")
        return answer

    heard: list[int] = []
    with pytest.raises(Interrupted):
        own_sandbox.call_chain(links, "afterToolExecute", [{"id": "c1"}, {"text": "0"}], ChainRule(), host,
                               CancelToken(), on_step=lambda index, outcome: heard.append(index))
    assert (asked, heard) == (["0:confirm"], [])
