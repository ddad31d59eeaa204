"""A hook that keeps a run waiting is said, live, and named when the run is stopped in it.

Through real V8 workers: the chain's watch (common/watch.py) says a hook still running after
its moment as a ``Waiting`` event, once, before its decision; a stop while it runs is its
``stopped`` decision in the ledger and a :class:`HookStopped` naming it; a hook waiting on a
person (``ctx.confirm``) is not announced; and the watch's thread never outlives the chain.
The moment is set short here (the product's is NOTICE_AFTER_S, 2 s).
"""

from __future__ import annotations

import threading

import pytest

from rienda_kernel.engine import CancelToken, Diagnostic, HookDecision, NonInteractiveUI, Rienda, Waiting
from rienda_kernel.engine.common import watch
from rienda_kernel.engine.errors import HookStopped

from ..helpers.extensions import hook
from ..helpers.homes import call_script, session_lines, write_agent, write_script


def until(name: str) -> str:
    """JavaScript that waits (quietly, in a command) until the file ``name`` is in the
    workdir (the test writes it), 30 s at most."""
    return f'ctx.system.exec("for i in $(seq 1500); do [ -e {name} ] && break; sleep 0.02; done");'


UNTIL_RELEASED = f"function (ctx) {{ {until('release')} }}"
LOOP = "function () { const end = Date.now() + 30000; while (Date.now() < end) {} }"  # "forever", within a test's bound
NOOP_TOOL = 'module.exports = { description: "n", parameters: { type: "object" }, execute: () => "ran" };'


@pytest.fixture(autouse=True)
def short_moment(monkeypatch):
    monkeypatch.setattr(watch, "NOTICE_AFTER_S", 0.05)


def watch_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "rienda-hook-watch"]


def test_a_hook_still_running_is_said_once_before_its_decision_and_no_thread_stays(rig):
    rig.write_hook("gate", hook(beforeToolExecute=UNTIL_RELEASED))
    rig.ui = NonInteractiveUI(sink=lambda e: (rig.workdir / "release").touch() if isinstance(e, Waiting) else None)
    gate = rig.chain("gate").before_tool_execute("c1", "shell", {}, CancelToken())
    assert gate.allowed
    said = [e for e in rig.ui.events if isinstance(e, (Waiting, HookDecision))]
    assert said == [Waiting("hook", "gate", 0.05, "beforeToolExecute", "c1"), said[1]]
    assert (said[1].hook, said[1].effect) == ("gate", "none")
    assert said[0].subject() == "hook gate (beforeToolExecute)"
    assert watch_threads() == []


def test_each_slow_hook_of_a_chain_is_said_in_turn(rig):
    rig.write_hook("first", hook(afterRun=f"function (ctx) {{ {until('one')} }}"))
    rig.write_hook("second", hook(afterRun=f"function (ctx) {{ {until('two')} }}"))
    names = iter(["one", "two"])
    rig.ui = NonInteractiveUI(sink=lambda e: (rig.workdir / next(names)).touch() if isinstance(e, Waiting) else None)
    rig.chain("first", "second").after_run("end_turn", CancelToken())
    assert [(type(e).__name__, getattr(e, "name", getattr(e, "hook", None))) for e in rig.ui.events
            if isinstance(e, (Waiting, HookDecision))] == [
        ("Waiting", "first"), ("HookDecision", "first"), ("Waiting", "second"), ("HookDecision", "second")]


def test_a_stop_while_a_hook_runs_names_it_in_the_ledger_and_in_what_is_raised(rig):
    rig.write_hook("loop", hook(beforeToolExecute=LOOP))
    cancel = CancelToken()
    rig.ui = NonInteractiveUI(sink=lambda e: cancel.cancel() if isinstance(e, Waiting) else None)
    with pytest.raises(HookStopped) as stopped:
        rig.chain("loop").before_tool_execute("c1", "shell", {}, cancel)
    assert (stopped.value.hook, stopped.value.point, stopped.value.call_id) == ("loop", "beforeToolExecute", "c1")
    assert str(stopped.value).startswith("stopped while hook loop was running (beforeToolExecute), after ")
    [decision] = rig.events(HookDecision)
    assert (decision.hook, decision.effect, decision.call_id, decision.error) == (
        "loop", "stopped", "c1", "the run was stopped while it ran")
    assert decision.duration_ms > 0
    assert watch_threads() == []


def test_a_hook_waiting_on_a_person_is_not_announced_and_is_again_once_answered(rig):
    asked = threading.Event()

    class SlowPerson(NonInteractiveUI):
        def ask(self, title, body, cancel):
            asked.set()
            cancel.wait(20 * watch.NOTICE_AFTER_S)  # far past the moment: a notice would have come meanwhile
            return True, "user"

    rig.write_hook("guard", hook(beforeToolExecute='function (ctx) { ctx.confirm({ title: "t", body: "b" }); '
                                 + until("release") + " }"))
    rig.ui = SlowPerson(policy="ask",
                        sink=lambda e: (rig.workdir / "release").touch() if isinstance(e, Waiting) else None)
    assert rig.chain("guard").before_tool_execute("c1", "shell", {}, CancelToken()).allowed
    assert asked.is_set()
    kinds = [type(e).__name__ for e in rig.ui.events if type(e).__name__ in ("Confirm", "Waiting", "HookDecision")]
    assert kinds == ["Confirm", "Waiting", "HookDecision"]  # said only once the person had answered


@pytest.fixture
def engine(rig):
    rig.write_tool("noop", NOOP_TOOL)
    return Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)


def run_stopped_at_first_wait(engine, agent: str) -> tuple[object, NonInteractiveUI]:
    """Run ``agent`` on "go"; the first Waiting stops the run (as a person's Ctrl-C)."""
    cancel = CancelToken()
    ui = NonInteractiveUI(sink=lambda e: cancel.cancel() if isinstance(e, Waiting) else None)
    return engine.conversation(agent).run("go", ui, cancel), ui


@pytest.mark.parametrize("point, says", [
    ("beforeToolExecute", "; the tool never ran"),
    ("afterToolExecute", " on the tool's result; that result was not kept"),
])
def test_a_call_whose_hook_was_stopped_says_which_hook_and_what_became_of_the_tool(rig, engine, point, says):
    rig.write_hook("loop", hook(**{point: LOOP}))
    write_agent(rig.home, "looper", ["noop"], ["loop"])
    write_script(rig.workdir, call_script("noop"))
    result, ui = run_stopped_at_first_wait(engine, "looper")
    assert result.reason == "interrupted"
    [(call, answer)] = result.tool_calls
    assert answer.text.startswith(f"interrupted while hook loop was running ({point}, ") and answer.text.endswith(says)
    ledger = [line for line in session_lines(rig.home, result.session_id) if line["type"] == "hook_decision"]
    assert [(r["hook"], r["point"], r["effect"], r["call_id"]) for r in ledger] == [("loop", point, "stopped", call.id)]


def test_a_second_stop_in_after_run_names_the_hook_it_stopped(rig, engine):
    rig.write_hook("stuck", hook(afterRun='function (ctx, e) { const end = Date.now() + 30000;'
                                         ' while (e.reason === "interrupted" && Date.now() < end) {} }'))
    rig.write_hook("loop", hook(beforeToolExecute=LOOP))
    write_agent(rig.home, "stuck", ["noop"], ["loop", "stuck"])
    write_script(rig.workdir, call_script("noop"))
    cancel = CancelToken()
    # The first notice (loop) stops the run; the second (stuck, in afterRun) stops the wind-down.
    ui = NonInteractiveUI(sink=lambda e: cancel.cancel() if isinstance(e, Waiting) else None)
    result = engine.conversation("stuck").run("go", ui, cancel)
    assert result.reason == "interrupted"
    [message] = [e.message for e in ui.events if isinstance(e, Diagnostic) and "afterRun" in e.message]
    assert message.startswith("afterRun was stopped by another interrupt: its hooks did not finish "
                              "(hook stuck was running, ")
    records = session_lines(rig.home, result.session_id)
    assert [r["hook"] for r in records if r["type"] == "hook_decision" and r["effect"] == "stopped"] == ["loop", "stuck"]
    assert [r["message"] for r in records if r["type"] == "stopped"] == [message]
    assert watch_threads() == []
