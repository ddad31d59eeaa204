"""The sandbox's V8 worker processes: nothing an extension does takes the host down.

Real worker processes, real signals: a worker that runs out of memory, is killed or does
not stop fails only its own invocation and is replaced; workers never outlive their host
and ignore the terminal's Ctrl-C.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from rienda_kernel.engine import CancelToken, HookDecision, Interrupted, Log, NonInteractiveUI, Rienda, Sandbox
from rienda_kernel.engine.errors import SandboxError

from ...helpers.extensions import returning
from ...helpers.processes import alive, wait_exit, wait_for
from ...helpers.pipes import read_until
from ...helpers.signals import interruptible

MB = 1024 * 1024
LIMIT = 64 * MB


@pytest.fixture
def own_sandbox():
    """A sandbox of the test's own, so killing its workers disturbs no other test."""
    sandbox = Sandbox(memory_limit=LIMIT, stop_grace=0.5)
    yield sandbox
    sandbox.close()


def call(sandbox: Sandbox, source: str, host=None, cancel: CancelToken | None = None):
    return sandbox.call("/virtual/tools/probe/index.js", source, "run", [], host or (lambda op, args: None),
                        cancel or CancelToken())


# -- item 1: nothing crashes the host --------------------------------------------------
def test_a_fatal_out_of_memory_in_a_tool_is_its_error_result_and_the_next_call_works(rig):
    rig.write_tool("huge", returning("new Array(2 ** 29).fill(0).length"))
    result = rig.tool("huge", {})
    assert result.is_error
    assert "huge failed:" in result.text
    assert "execute ran out of memory; its V8 worker was replaced" in result.text
    rig.write_tool("after", returning('"alive"'))
    assert rig.tool("after", {}).text == "alive"


def test_a_run_goes_on_after_a_tool_and_a_hook_run_out_of_memory(rig):
    rig.write_tool("huge", returning("new Array(2 ** 29).fill(0).length"))
    rig.write_hook("hungry", """
      module.exports = {
        afterToolExecute() { const a = []; while (true) a.push(new Array(100000).fill(a.length)); },
        afterRun(ctx, e) { ctx.log("afterRun " + e.reason); },
      };""")
    (rig.home / "agents").mkdir()
    (rig.home / "agents" / "probe.md").write_text(
        "---\nmodel: scripted/script.yaml\ntools: [huge]\nhooks: [hungry]\n---\nYou probe.\n")
    (rig.workdir / "script.yaml").write_text(json.dumps(
        [{"text": "", "tool_calls": [{"name": "huge", "arguments": {}}]}, {"text": "still here"}]))
    engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    ui = NonInteractiveUI()
    result = engine.conversation("probe").run("go", ui)
    assert (result.reason, result.text) == ("end_turn", "still here")
    [(_, tool_result)] = result.tool_calls
    assert tool_result.is_error and "ran out of memory" in tool_result.text
    [decision] = [e for e in ui.events if isinstance(e, HookDecision) and e.point == "afterToolExecute"]
    assert decision.effect == "threw" and "ran out of memory" in decision.error
    assert [e.text for e in ui.events if isinstance(e, Log)] == ["afterRun end_turn"]
    saved = (engine.store.directory / f"{result.session_id}.jsonl").read_text().splitlines()
    lines = [json.loads(line) for line in saved]
    assert lines[-1] == {"type": "run_end", "reason": "end_turn", "error": None}


def test_a_worker_killed_mid_invocation_fails_only_that_invocation(own_sandbox):
    def kill_my_worker(op, args):
        [pid] = own_sandbox.pool.pids()[1]
        os.kill(pid, signal.SIGKILL)
        wait_exit(pid)
        return None

    with pytest.raises(SandboxError) as caught:
        call(own_sandbox, "module.exports = { run: (ctx) => { ctx.file.exists('x'); return 'unreachable'; } };",
             host=kill_my_worker)
    assert "run lost its V8 worker, killed by SIGKILL; it was replaced" in str(caught.value)
    assert call(own_sandbox, "module.exports = { run: () => 'next' };").value == "next"


def test_workers_start_in_the_background_when_the_sandbox_is_made(own_sandbox):
    idle = wait_for(lambda: own_sandbox.pool.pids()[0], what="an idle worker")
    assert all(alive(pid) for pid in idle)


# -- item 2: the memory limit holds for every allocation kind ---------------------------
def test_typed_arrays_count_against_the_memory_limit(own_sandbox):
    """Keeps 16 MB typed arrays until an allocation fails (at most 1 GB); the bound is the
    limit plus the worker's slack, far below that."""
    source = """module.exports = { run: () => {
      const kept = [];
      try { while (kept.length < 64) kept.push(new Uint8Array(16 * 2 ** 20).fill(1)); } catch (e) {}
      return kept.length * 16;
    } };"""
    try:
        got = call(own_sandbox, source).value
    except SandboxError as exc:  # the bound can land on V8's own allocation first
        assert "ran out of memory" in str(exc)
        return
    assert got <= (LIMIT + 80 * MB) // MB


@pytest.mark.parametrize(
    "expression",
    ["(() => { const a = []; for (let i = 0; i < 8; i++) a.push(new Uint8Array(64 * 2 ** 20).fill(1)); "
     "return a.length; })()",
     "new Array(200).fill('x'.repeat(1e6)).join('').length",
     "new Array(2 ** 29).fill(0).length",
     "(() => { const a = []; while (true) a.push({ x: Math.random(), y: [1, 2, 3] }); })()"],
    ids=["eight-64MB-typed-arrays", "200MB-joined-string", "array-of-2**29", "heap-growth"],
)
def test_no_allocation_kind_gets_past_the_limit(own_sandbox, expression):
    with pytest.raises(SandboxError) as caught:
        call(own_sandbox, f"module.exports = {{ run: () => {expression} }};")
    assert "ran out of memory" in str(caught.value) or "Array buffer allocation failed" in str(caught.value)
    assert call(own_sandbox, "module.exports = { run: () => 'next' };").value == "next"


# -- stopping --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "body",
    ["while (true) {}",
     "while (true) { try { while (true) {} } catch (e) {} }",
     "ctx.confirm({ title: 't', body: 'b' }); while (true) {}",
     "return new Promise(() => setTimeout(() => { while (true) {} }, 5));",
     "Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);"],
    ids=["busy-loop", "catch-all-loop", "pending-confirm", "loop-in-timer", "atomics-wait"],
)
def test_a_stop_ends_the_invocation_and_keeps_the_worker(body):
    # A grace far beyond any load: the worker survives only if terminating the isolate
    # ended the job (a kill after the grace would fail the test, however loaded the machine).
    own_sandbox = Sandbox(memory_limit=LIMIT, stop_grace=60)
    try:
        _stop_and_keep(own_sandbox, body)
    finally:
        own_sandbox.close()


def _stop_and_keep(own_sandbox, body):
    cancel = CancelToken()
    started = threading.Event()
    box: dict = {}

    def host(op, args):  # ctx.confirm waits for the stop, as a front end's dialog does
        cancel.wait()
        return False

    def run():
        try:
            call(own_sandbox, f"module.exports = {{ run: (ctx) => {{ {body} }} }};", host, cancel)
        except Interrupted as exc:
            box["stopped"] = str(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    [pid] = wait_for(lambda: own_sandbox.pool.pids()[1], what="the worker to take the job")
    started.set()
    cancel.cancel()
    worker.join(30)
    assert box == {"stopped": "/virtual/tools/probe/index.js: run was stopped"}
    assert alive(pid), "terminating the isolate should have been enough"
    assert call(own_sandbox, "module.exports = { run: () => 'next' };").value == "next"


def test_a_worker_that_does_not_stop_within_the_grace_is_killed(own_sandbox):
    cancel = CancelToken()
    box: dict = {}

    def run():
        try:
            call(own_sandbox, "module.exports = { run: () => { while (true) {} } };", cancel=cancel)
        except Interrupted as exc:
            box["stopped"] = str(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    [pid] = wait_for(lambda: own_sandbox.pool.pids()[1], what="the worker to take the job")
    os.kill(pid, signal.SIGSTOP)  # it can no longer act on the stop
    cancel.cancel()
    worker.join(30)
    assert box == {"stopped": "/virtual/tools/probe/index.js: run was stopped"}
    assert wait_exit(pid), "the frozen worker must have been killed"
    assert call(own_sandbox, "module.exports = { run: () => 'next' };").value == "next"


# -- the process tree ------------------------------------------------------------------
HOST_SETUP = """
import json, os, signal, sys, threading
from rienda_kernel.engine import CancelToken, Sandbox

sandbox = Sandbox()
def pids():
    idle, busy = sandbox.pool.pids()
    return sorted(idle + busy)
def call():
    return sandbox.call("/p.js", "module.exports = { run: () => 'ok' };", "run", [], None, CancelToken()).value
"""
HOST_SCRIPT = HOST_SETUP + 'print(json.dumps({"call": call(), "pids": pids()}), flush=True)\n'


def test_workers_exit_when_their_host_process_is_killed(tmp_path):
    host = subprocess.Popen([sys.executable, "-c", HOST_SCRIPT + "threading.Event().wait()\n"],
                            stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        first = json.loads(read_until(host, "stdout", "\n", 120))
        assert first["call"] == "ok" and first["pids"]
    finally:
        host.kill()
        host.wait(60)
    assert all(wait_exit(pid) for pid in first["pids"]), "a worker outlived its killed host"


def test_ctrl_c_to_the_process_group_leaves_the_workers_to_the_host(tmp_path):
    script = HOST_SETUP + textwrap.dedent("""
        try:  # the first line is printed inside the try: the Ctrl-C that follows it lands here
            print(json.dumps({"call": call(), "pids": pids()}), flush=True)
            threading.Event().wait()
        except KeyboardInterrupt:
            print(json.dumps({"call": call(), "pids": pids()}), flush=True)
        """)
    host = subprocess.Popen(interruptible([sys.executable, "-c", script]), stdout=subprocess.PIPE, text=True,
                            cwd=tmp_path, start_new_session=True)
    try:
        before = json.loads(read_until(host, "stdout", "\n", 120))
        os.killpg(host.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        after = json.loads(read_until(host, "stdout", "\n", 120).split("\n")[0])
        assert host.wait(60) == 0
    finally:
        host.kill()
    assert after["call"] == "ok"
    assert set(before["pids"]) <= set(after["pids"]), "a worker died of the process group's SIGINT"


def test_a_run_without_javascript_never_waits_for_a_worker(tmp_path):
    """Workers that never start (an interpreter that hangs) do not delay a run that
    declares no JS extension; it ends at once."""
    never = tmp_path / "never-starts"
    never.write_text("#!/bin/sh\nexec sleep 600\n")
    never.chmod(0o755)
    home = tmp_path / "home"
    (home / "agents").mkdir(parents=True)
    (home / "agents" / "plain.md").write_text("---\nmodel: scripted/script.yaml\ntools: [read]\n---\nPlain.\n")
    (tmp_path / "script.yaml").write_text(json.dumps([{"text": "done"}]))
    script = textwrap.dedent(f"""
        import sys
        sys.executable = {str(never)!r}
        from rienda_kernel.engine import NonInteractiveUI, Rienda
        result = Rienda(home={str(home)!r}, workdir={str(tmp_path)!r}).conversation("plain").run("go", NonInteractiveUI())
        print(result.reason, result.text, flush=True)
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "end_turn done\n"), done.stderr


def test_a_stop_that_overtakes_its_job_still_stops_it():
    """The stop travels on the control channel, the job on the data channel: a stop sent
    just after its job can reach the worker first, and must stop the job when it starts."""
    from rienda_kernel.engine.sandbox.worker_handle import Worker

    worker = Worker(LIMIT, stop_grace=60)
    try:
        worker.wait_ready(60)
        worker.stop(1)  # the first job's id, before the job is sent
        time.sleep(0.2)
        message = ["call", "/virtual/tools/probe/index.js", "module.exports = { run: () => { while (true) {} } };",
                   "run", "[]", []]
        reply = worker.run(message, lambda op, args: None, CancelToken(), deadline=30)
        assert reply["error"]["type"] == "Interrupted"
    finally:
        worker.kill()


def test_workers_exit_after_a_quiet_period_and_come_back_for_the_next_invocation():
    sandbox = Sandbox(memory_limit=LIMIT, idle_release=1.0)
    try:
        assert call(sandbox, "module.exports = { run: () => 'first' };").value == "first"
        idle, busy = wait_for(lambda: sandbox.pool.pids(), what="workers")
        pids = idle + busy
        wait_for(lambda: sandbox.pool.pids() == ([], []), what="the workers to be released")
        assert all(wait_exit(pid) for pid in pids)
        assert call(sandbox, "module.exports = { run: () => 'again' };").value == "again"
    finally:
        sandbox.close()


@pytest.fixture
def pool():
    """A pool of the test's own whose spare replacing a taken worker waits 0.3 s."""
    from rienda_kernel.engine.sandbox.pool import WorkerPool

    made = WorkerPool(LIMIT, spares=1, spare_delay=0.3, idle_release=None)
    yield made
    made.close()


def test_a_worker_back_from_a_short_job_is_not_replaced_by_a_spare(pool):
    """The spare that replaces a taken worker waits spare_delay; the worker was back by then
    (a short job), so no second process boots (0.1 CPU-s and a V8 heap, after each turn of a
    kernel or a chat)."""
    pool.release(pool.acquire(CancelToken()))
    time.sleep(0.3)  # the spare's delay: it decides then
    wait_for(lambda: pool.starting == 0, what="the spare's decision")
    assert (pool.started, pool.idle) == (1, 1)


def test_a_worker_still_busy_after_the_delay_gets_its_spare(pool):
    worker = pool.acquire(CancelToken())
    wait_for(lambda: pool.started == 2, what="the spare")
    assert pool.idle == 1
    pool.release(worker)
