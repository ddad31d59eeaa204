"""Fresh realms prepared ahead (sandbox/realms.py): an invocation's runtime may be made
before it is needed, but never holds anything an earlier invocation left.

Real V8 in this process (``InProcessSandbox``, what each worker runs), and real worker
processes where the engine's own path is the point. The counters read here (``misses``,
``ready``) are the realms' own diagnostics: they say whether a realm was prepared ahead.
"""

from __future__ import annotations

import threading
import time

import pytest

from rienda_kernel.engine import CancelToken, Interrupted, ToolResult
from rienda_kernel.engine.sandbox.inprocess import InProcessSandbox

from ...helpers.extensions import hook

PATH = "/virtual/hooks/probe/index.js"

POLLUTER = """
var counter = (typeof counter === "number" ? counter : 0) + 1;
module.exports = { run: function (ctx) {
  const seen = [typeof globalThis.mark, typeof Object.prototype.polluted, typeof Array.prototype.extra,
                String(counter), typeof globalThis.loadedMark];
  globalThis.mark = 1; Object.prototype.polluted = 1; Array.prototype.extra = 1; counter++;
  return seen.join(","); } };
globalThis.loadedMark = (globalThis.loadedMark || 0) + 1;
"""
FRESH = "undefined,undefined,undefined,1,number"


@pytest.fixture
def local():
    sandbox = InProcessSandbox(memory_limit=64 * 1024 * 1024)
    yield sandbox
    sandbox.realms.shutdown()


def wait_for(predicate, timeout: float = 60.0, what: str = "the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def call(sandbox, source, host=None, path=PATH, cancel=None):
    return sandbox.call(path, source, "run", [], host or (lambda op, args: None), cancel or CancelToken()).value


def test_an_invocation_in_a_realm_prepared_ahead_sees_nothing_an_earlier_one_left(local):
    assert call(local, POLLUTER) == FRESH
    assert local.realms.failing == 0, "the module should run in realms, not in the isolate fallback"
    for _ in range(5):
        wait_for(local.realms.quiescent, what="realms prepared ahead")
        misses = local.realms.misses
        assert call(local, POLLUTER) == FRESH
        assert local.realms.misses == misses, "the invocation should have used a realm prepared ahead"


def test_realms_prepared_side_by_side_share_nothing(local):
    other = POLLUTER.replace("module.exports", "Object.prototype.atLoad = 1; module.exports")
    call(local, POLLUTER), call(local, other, path="/virtual/hooks/other/index.js")
    wait_for(lambda: local.realms.ready >= 2, what="realms of both modules prepared")
    assert call(local, other, path="/virtual/hooks/other/index.js") == FRESH
    assert call(local, "module.exports = { run: () => typeof Object.prototype.atLoad };") == "undefined"
    assert call(local, POLLUTER) == FRESH
    assert local.realms.failing == 0


def test_a_module_that_fails_in_a_realm_runs_in_a_fresh_isolate_which_reports_it(local):
    source = "throw new TypeError('not today');\nmodule.exports = { run: () => 1 };"
    with pytest.raises(Exception) as caught:
        call(local, source)
    assert "threw while loading" in str(caught.value) and "not today" in str(caught.value)
    assert local.realms.failing == 1


def test_a_realm_prepared_for_an_older_source_is_never_used(local):
    assert call(local, "module.exports = { run: () => 'v1' };") == "v1"
    wait_for(lambda: local.realms.ready >= 1, what="a realm prepared for v1")
    assert call(local, "module.exports = { run: () => 'v2' };") == "v2"


def test_a_hook_changed_on_disk_runs_its_new_code(rig):
    rig.write_hook("v", hook(afterToolExecute="function () { return { text: 'v1' }; }"))
    assert rig.chain("v").after_tool_execute("c", "read", {}, ToolResult(""), CancelToken()).text == "v1"
    time.sleep(0.2)  # the workers' realms prepare ahead for v1 meanwhile
    rig.write_hook("v", hook(afterToolExecute="function () { return { text: 'v2' }; }"))
    assert rig.chain("v").after_tool_execute("c", "read", {}, ToolResult(""), CancelToken()).text == "v2"


LATE = "module.exports = { run: (ctx) => { %s; return 'returned'; } };"


@pytest.mark.parametrize("leave", [
    "setTimeout(() => ctx.log('late'), 30)",
    "Atomics.waitAsync(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 30).value.then(() => ctx.log('late'))",
], ids=["timer", "atomics-wait-async"])
def test_work_left_behind_never_runs_into_a_later_invocation(local, leave):
    logs = []
    assert call(local, LATE % leave, host=lambda op, args: logs.append(args)) == "returned"
    homes = local.realms.retired
    assert homes >= 1, "the home with work left behind should be retired"
    time.sleep(0.2)
    assert call(local, "module.exports = { run: (ctx) => { ctx.log('next'); return 'next'; } };",
                host=lambda op, args: logs.append(args)) == "next"
    time.sleep(0.1)
    assert logs == [{"text": "next"}]


@pytest.mark.parametrize("body", ["while (true) {}", "setTimeout(() => ctx.log('late'), 20); while (true) {}",
                                  "return new Promise(() => setTimeout(() => { while (true) {} }, 5));"],
                         ids=["busy-loop", "timer-then-loop", "loop-in-timer"])
def test_a_stopped_invocation_takes_its_realms_home_with_it(local, body):
    call(local, "module.exports = { run: () => 'warm' };")
    cancel = CancelToken()
    logs, box = [], {}
    started = threading.Event()

    def host(op, args):
        logs.append(args)

    def run():
        started.set()
        try:
            call(local, f"module.exports = {{ run: (ctx) => {{ {body} }} }};", host=host, cancel=cancel)
        except Interrupted as exc:
            box["stopped"] = str(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    started.wait(30)
    time.sleep(0.1)
    cancel.cancel()
    worker.join(30)
    assert box == {"stopped": f"{PATH}: run was stopped"}
    assert local.realms.retired == 1
    time.sleep(0.1)
    for n in range(4):  # whichever home each lands in
        assert call(local, f"module.exports = {{ run: () => 'next {n}' }};") == f"next {n}"
    assert logs == []


def test_out_of_memory_in_a_realm_retires_its_home_and_the_next_invocation_works(local):
    from rienda_kernel.engine import OutOfMemory

    with pytest.raises(OutOfMemory):
        call(local, "module.exports = { run: () => { const a = []; while (true) a.push(new Array(1e5).fill(1)); } };")
    assert call(local, POLLUTER) == FRESH
