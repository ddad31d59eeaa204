"""Fail-closed hooks (``fail_closed: [...]`` in an agent's front matter): at
``beforeToolExecute`` a marked hook's failure refuses the call and ends the chain; anywhere
else, and unmarked, a failure is H19's (reported and skipped).

Real V8 in both sandboxes: the pool of worker processes (the chain is one job: the worker
itself stops after the failure, shown by the steps it sends) and the in-process one.
"""

from __future__ import annotations

import os
import signal
from dataclasses import replace

import pytest

from rienda_kernel.engine import CancelToken, Diagnostic, HookDecision, Log, NonInteractiveUI, Sandbox, ToolResult
from rienda_kernel.engine.hooks import HookChain, chain_hooks, declared_hooks
from rienda_kernel.engine.sandbox.chain import ChainRule
from rienda_kernel.engine.sandbox.inprocess import InProcessSandbox

from ..helpers.extensions import go, hook

MB = 1024 * 1024
THROWS = "function (ctx, call) { ctx.log('broken saw ' + call.arguments.url); throw new Error('policy unreadable'); }"


@pytest.fixture(params=["pool", "in-process"])
def any_rig(request, rig):
    """The rig on the shared pool of V8 workers, or on a sandbox in this process."""
    if request.param == "in-process":
        rig.sandbox = rig.loader.sandbox = InProcessSandbox(memory_limit=64 * MB)
    return rig


def marked(rig, names, closed, **context):
    """A chain of ``names`` with the hooks in ``closed`` fail-closed, as an agent declares them."""
    catalog = rig.catalog()
    return HookChain(declared_hooks(catalog.hooks, names, closed), rig.sandbox, rig.run_context(**context))


def decisions(rig):
    return [(d.hook, d.effect) for d in rig.events(HookDecision)]


def three_hooks(rig):
    rig.write_hook("https", hook(beforeToolExecute="""function (ctx, call) {
      return { arguments: { url: call.arguments.url.replace("http:", "https:") } }; }"""))
    rig.write_hook("broken", hook(beforeToolExecute=THROWS, afterToolExecute="function () { throw new Error('late'); }"))
    rig.write_hook("never", hook(beforeToolExecute="function (ctx) { ctx.log('never ran'); }",
                                 afterToolExecute="function (ctx, c, r) { return { text: r.text + '!' }; }"))


def test_H19_a_fail_closed_hook_that_throws_refuses_the_call_and_no_later_hook_runs(any_rig):
    rig = any_rig
    three_hooks(rig)
    gate = marked(rig, ["https", "broken", "never"], {"broken"}).before_tool_execute(
        "c1", "http", {"url": "http://x"}, go())
    assert (gate.allowed, gate.refused_by) == (False, "broken")
    assert gate.reason.startswith("hook broken failed and fails closed, so the call is refused: Error: policy unr")
    assert "policy unreadable" in gate.reason and "hooks/broken/index.js:2:" in gate.reason, gate.reason
    assert gate.refusal() == ToolResult(gate.reason, True)
    assert [e.text for e in rig.events(Log)] == ["broken saw https://x"]
    assert decisions(rig) == [("https", "rewrote"), ("broken", "refused")]
    refused = rig.events(HookDecision)[-1]
    assert (refused.failed_closed, refused.reason, refused.call_id) == (True, gate.reason, "c1")
    assert "policy unreadable" in refused.error and refused.to_dict()["failed_closed"] is True
    [said] = [d.message for d in rig.events(Diagnostic)]
    assert said.startswith("hook broken failed in beforeToolExecute; it fails closed, so the call was refused: ")


def test_H19_unmarked_the_same_hook_is_skipped_and_the_chain_goes_on(any_rig):
    rig = any_rig
    three_hooks(rig)
    gate = marked(rig, ["https", "broken", "never"], set()).before_tool_execute("c1", "http", {"url": "http://x"}, go())
    assert (gate.allowed, gate.arguments) == (True, {"url": "https://x"})
    assert decisions(rig) == [("https", "rewrote"), ("broken", "threw"), ("never", "none")]
    assert [d.failed_closed for d in rig.events(HookDecision)] == [False, False, False]


def test_H19_fail_closed_holds_at_before_tool_execute_only(any_rig):
    rig = any_rig
    three_hooks(rig)
    result = marked(rig, ["broken", "never"], {"broken"}).after_tool_execute("c1", "http", {}, ToolResult("ok"), go())
    assert result == ToolResult("ok!", False)
    assert decisions(rig) == [("broken", "threw"), ("never", "rewrote")]


def test_the_worker_stops_the_chain_itself_after_a_fail_closed_failure(rig):
    """The rule travels to the worker: the job's steps end at the failed hook (a worker
    that went on would send the next hook's step, heard here)."""
    three_hooks(rig)
    links = [(h.path, h.source) for h in (rig.catalog().hooks[n] for n in ("https", "broken", "never"))]
    rule = ChainRule({"arguments": 0}, {"arguments": "object", "allow": "boolean", "reason": "string"},
                     refusable=True, fail_closed=frozenset({1}), closable=True)
    heard, jobs = [], rig.sandbox.jobs
    rig.sandbox.call_chain(links, "beforeToolExecute", [{"id": "c1", "name": "http", "arguments": {"url": "http://x"}}],
                           rule, lambda index: (lambda op, args: None), CancelToken(),
                           on_step=lambda index, outcome: heard.append(index))
    assert (heard, rig.sandbox.jobs) == ([0, 1], jobs + 1)
    heard.clear()
    rig.sandbox.call_chain(links, "beforeToolExecute", [{"id": "c1", "name": "http", "arguments": {"url": "http://x"}}],
                           replace(rule, fail_closed=frozenset()), lambda index: (lambda op, args: None), CancelToken(),
                           on_step=lambda index, outcome: heard.append(index))
    assert heard == [0, 1, 2]


@pytest.fixture
def own_sandbox():
    sandbox = Sandbox(memory_limit=64 * MB, stop_grace=30)
    yield sandbox
    sandbox.close()


def test_a_fail_closed_hook_whose_worker_runs_out_of_memory_refuses_the_call(rig, own_sandbox):
    rig.sandbox = rig.loader.sandbox = own_sandbox
    rig.write_hook("bomb", hook(beforeToolExecute="function () { new Array(2 ** 29).fill(0); }"))
    rig.write_hook("never", hook(beforeToolExecute="function (ctx) { ctx.log('never ran'); }"))
    gate = marked(rig, ["bomb", "never"], {"bomb"}).before_tool_execute("c1", "shell", {"command": "ls"}, go())
    assert (gate.allowed, gate.refused_by) == (False, "bomb")
    assert "ran out of memory" in gate.reason and "ran out of memory" in gate.failed
    assert decisions(rig) == [("bomb", "refused")] and rig.events(Log) == []


def test_a_fail_closed_hook_whose_worker_is_killed_refuses_the_call(rig, own_sandbox):
    """The sandbox cannot finish running it (its worker killed from outside mid-hook)."""
    rig.sandbox = rig.loader.sandbox = own_sandbox

    def kill_the_busy_worker(event):
        if isinstance(event, Log) and event.text == "waiting":
            for pid in own_sandbox.pool.pids()[1]:
                os.kill(pid, signal.SIGKILL)

    rig.ui = NonInteractiveUI(sink=kill_the_busy_worker)
    rig.write_hook("stuck", hook(beforeToolExecute="function (ctx) { ctx.log('waiting'); while (true) {} }"))
    rig.write_hook("never", hook(beforeToolExecute="function (ctx) { ctx.log('never ran'); }"))
    gate = marked(rig, ["stuck", "never"], {"stuck"}).before_tool_execute("c1", "shell", {"command": "ls"}, go())
    assert (gate.allowed, gate.refused_by) == (False, "stuck")
    assert "lost its V8 worker, killed by SIGKILL" in gate.reason, gate.reason
    assert [e.text for e in rig.events(Log)] == ["waiting"]


def test_a_sub_agent_may_make_its_leads_hook_fail_closed_never_the_reverse(rig):
    three_hooks(rig)
    hooks = rig.catalog().hooks
    lead = declared_hooks(hooks, ["https", "broken"], {"https"})
    child = declared_hooks(hooks, ["broken", "never"], {"broken"})
    chain = chain_hooks(lead, child)
    assert [(h.name, h.fail_closed) for h in chain] == [("https", True), ("broken", True), ("never", False)]
    laxer = chain_hooks(lead, declared_hooks(hooks, ["https"], ()))
    assert [(h.name, h.fail_closed) for h in laxer] == [("https", True), ("broken", False)]


def test_a_fail_closed_hook_the_sandbox_cannot_run_at_all_refuses_the_call(rig, monkeypatch):
    """No V8 worker will start (a signal ended them all, new ones die at boot): the hooks
    before it are skipped (H19), the fail-closed one refuses, the ones after are not asked."""
    from rienda_kernel.engine.sandbox import worker_handle

    sandbox = Sandbox(memory_limit=64 * MB)
    try:
        rig.sandbox = rig.loader.sandbox = sandbox
        three_hooks(rig)
        chain = marked(rig, ["https", "broken", "never"], {"broken"})  # loaded while workers start
        monkeypatch.setattr(worker_handle, "_BOOT", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
        idle, busy = sandbox.pool.pids()
        for pid in idle + busy:
            os.kill(pid, signal.SIGTERM)
        gate = chain.before_tool_execute("c1", "http", {"url": "http://x"}, go())
    finally:
        sandbox.close()
    assert (gate.allowed, gate.refused_by) == (False, "broken")
    assert "a V8 worker did not start" in gate.failed, gate.failed
    assert decisions(rig) == [("https", "threw"), ("broken", "refused")]


def test_after_a_worker_dies_mid_chain_the_rest_runs_with_the_fail_closed_marks_shifted(rig, own_sandbox):
    """The chain resumes in another worker from the hook after the one that died; the
    fail-closed hook among the rest still stops that worker."""
    rig.sandbox = rig.loader.sandbox = own_sandbox
    three_hooks(rig)
    rig.write_hook("bomb", hook(beforeToolExecute="function () { new Array(2 ** 29).fill(0); }"))
    chain = marked(rig, ["bomb", "https", "broken", "never"], {"broken"})
    jobs = own_sandbox.jobs
    gate = chain.before_tool_execute("c1", "http", {"url": "http://x"}, go())
    assert (gate.allowed, gate.refused_by, gate.arguments) == (False, "broken", {"url": "https://x"})
    assert decisions(rig) == [("bomb", "threw"), ("https", "rewrote"), ("broken", "refused")]
    assert [e.text for e in rig.events(Log)] == ["broken saw https://x"] and own_sandbox.jobs == jobs + 2
