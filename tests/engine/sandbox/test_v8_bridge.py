"""The V8 bridge itself: synchronous host calls over private mini-racer internals.

If a mini-racer upgrade changes those internals, these tests fail loudly. They run
isolates in the test process (``isolate.Isolate``, ``inprocess.InProcessSandbox``): the layer
each V8 worker process runs.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import threading

import pytest

from rienda_kernel.engine import CancelToken, Interrupted, OutOfMemory, SandboxError, ScriptError
from rienda_kernel.engine.sandbox.inprocess import InProcessSandbox
from rienda_kernel.engine.sandbox.isolate import MAILBOX_BYTES, Isolate, IsolatePool
from rienda_kernel.engine.sandbox.mini_racer_compat import PINNED_VERSION, check_version, installed_version
from rienda_kernel.engine.sandbox.worker_handle import _BOOT, _ROOT

SOURCE = "/virtual/tools/probe/index.js"


def test_mini_racer_is_the_pinned_version():
    assert importlib.metadata.version("mini-racer") == PINNED_VERSION == "0.14.1"
    assert installed_version() == PINNED_VERSION


def test_another_mini_racer_version_is_refused_naming_both():
    with pytest.raises(SandboxError) as caught:
        check_version("0.15.0")
    assert "mini-racer 0.14.1" in str(caught.value) and "mini-racer 0.15.0 is installed" in str(caught.value)


@pytest.fixture
def isolate():
    iso = Isolate(heap_limit=64 * 1024 * 1024)
    yield iso
    iso.close()


@pytest.fixture(scope="module")
def local():
    """The in-process sandbox (what each worker runs)."""
    return InProcessSandbox(memory_limit=64 * 1024 * 1024)


def test_a_host_call_is_synchronous_and_returns_a_value(isolate):
    """JS waits inside the call while Python works, then uses the value at once (not a
    Promise), before its next statement runs."""
    calls = []

    def host(op, args):
        calls.append((op, args))
        return {"exists": True} if op == "file.exists" else None

    isolate.set_host(host)
    outcome = _call(isolate, """
      const value = ctx.file.exists("a");
      ctx.log(String(value instanceof Promise), JSON.stringify(value));
      return value.exists;""")
    assert outcome == {"ok": True, "json": True}
    assert calls == [("file.exists", {"path": "a"}), ("log", {"text": 'false {"exists":true}'})]


def _call(isolate, body: str, export: str = "run") -> dict:
    """Run ``function (ctx) { body }`` through the prelude and return its outcome."""
    script = ("(function () { __rienda.module.exports.run = function (ctx) { " + body + " }; "
              "__rienda.module.exports.other = function () { return 'other'; }; "
              f"return __rienda.call('{export}', '[]', '[]'); }})()")
    return isolate.eval_json(script)


def test_call_runs_the_named_export(isolate):
    assert _call(isolate, "return 'run';", export="run") == {"ok": True, "json": "run"}
    assert _call(isolate, "return 'run';", export="other") == {"ok": True, "json": "other"}


@pytest.mark.parametrize("size", [0, 1000, MAILBOX_BYTES, 5 * 1024 * 1024])
def test_payloads_of_any_size_cross_both_ways_intact(isolate, size):
    text = ("ab€😀\u2028" * (size // 5 + 1))[:size]
    if text and "\ud800" <= text[-1] <= "\udbff":
        text = text[:-1]  # a cut pair would be repaired: tested below
    received = {}

    def host(op, args):
        received["text"] = args["path"]
        return args["path"][::-1].encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")

    isolate.set_host(host)
    outcome = _call(isolate, f"return ctx.file.read({json.dumps(text)});")
    assert received["text"] == text
    assert outcome["json"] == received["text"][::-1].encode("utf-16-le", "surrogatepass").decode(
        "utf-16-le", "replace")


def test_lone_surrogates_coming_out_of_v8_are_repaired(isolate):
    received = {}

    def host(op, args):
        received[op] = args
        return None

    isolate.set_host(host)
    outcome = _call(isolate, "const cut = 'abc😀'.slice(0, 4); ctx.log(cut); return {[cut]: cut};")
    assert received["log"] == {"text": "abc\ufffd"}
    assert outcome["json"] == {"abc\ufffd": "abc\ufffd"}


def test_a_python_exception_is_a_catchable_js_error_named_after_its_class(isolate):
    def host(op, args):
        raise PermissionError("no entry: secret.txt")

    isolate.set_host(host)
    outcome = _call(isolate, """
      try { ctx.file.read("secret.txt"); } catch (e) { return [e instanceof Error, e.name, e.message]; }""")
    assert outcome["json"] == [True, "PermissionError", "no entry: secret.txt"]


def test_await_on_a_synchronous_ctx_call_is_the_value(local):
    source = "module.exports = { run: async function (ctx) { return (await ctx.file.read('x')) + '!'; } };"
    value = local.call(SOURCE, source, "run", [], lambda op, args: "content", CancelToken())
    assert (value.kind, value.value) == ("string", "content!")


def test_a_syntax_error_reports_line_and_caret(isolate):
    with pytest.raises(SandboxError) as caught:
        isolate.eval("let a = 1;\nlet b = ;\n")
    assert ":2: SyntaxError: Unexpected token ';'" in str(caught.value)
    assert "let b = ;\n        ^" in str(caught.value)


def test_terminate_from_another_thread_stops_a_busy_loop_and_frees_the_isolate():
    iso = Isolate()
    threading.Timer(0.2, iso.terminate).start()
    with pytest.raises(Interrupted):
        iso.eval("while (true) { try { } catch (e) { } }")
    iso.close()
    again = Isolate()
    assert again.eval("6 * 7") == 42
    again.close()


def test_memory_bomb_raises_out_of_memory_and_a_new_isolate_works():
    iso = Isolate(heap_limit=32 * 1024 * 1024)
    with pytest.raises(OutOfMemory):
        iso.eval("const a = []; while (true) a.push(new Array(50000).fill(Math.random()));")
    iso.close()
    again = Isolate()
    assert again.eval("6 * 7") == 42
    again.close()


def test_out_of_memory_in_an_async_continuation_ends_the_call(local):
    source = """module.exports = { run: function () {
      return new Promise(() => setTimeout(() => { const a = []; while (true) a.push(new Array(50000).fill(1)); }, 5));
    } };"""
    with pytest.raises(OutOfMemory) as caught:
        local.call(SOURCE, source, "run", [], lambda op, args: None, CancelToken())
    assert "run ran out of memory" in str(caught.value)


def test_js_errors_carry_file_line_and_column(local):
    source = "module.exports = {\n  run: function () {\n    return undefinedThing.x;\n  },\n};\n"
    with pytest.raises(ScriptError) as caught:
        local.call(SOURCE, source, "run", [], lambda op, args: None, CancelToken())
    assert caught.value.name == "ReferenceError"
    assert caught.value.location == f"{SOURCE}:3:5"
    assert str(caught.value) == f"ReferenceError: undefinedThing is not defined (at {SOURCE}:3:5)"


def test_columns_on_line_one_are_the_files_own(local):
    with pytest.raises(ScriptError) as caught:
        local.call(SOURCE, "module.exports = { run: () => nope };", "run", [], lambda op, args: None, CancelToken())
    assert caught.value.location == f"{SOURCE}:1:31"


@pytest.mark.parametrize(
    ("source", "returned"),
    [('exports.run = () => "exports.x";', "exports.x"),
     ('module.exports.run = () => "module.exports.x";', "module.exports.x"),
     ('module.exports = { run: () => "replaced" };', "replaced"),
     ('this.run = () => "this";', "this")],
    ids=["exports", "module.exports.x", "module.exports", "this"],
)
def test_commonjs_exports_forms(local, source, returned):
    value = local.call(SOURCE, source, "run", [], lambda op, args: None, CancelToken())
    assert (value.kind, value.value) == ("string", returned)


def test_the_pool_hands_out_isolates_nobody_used():
    pool = IsolatePool(size=2)
    try:
        first = pool.acquire()
        first.eval("globalThis.dirty = true")
        pool.release(first)
        for _ in range(5):
            iso = pool.acquire()
            assert iso is not first
            assert iso.eval("typeof globalThis.dirty") == "undefined"
            pool.release(iso)
    finally:
        pool.shutdown()


def test_first_isolates_created_on_several_threads_at_once_do_not_crash_the_process():
    """Unserialized, this crashed about one process in ten (V8's lazy process-wide init).

    The script loads only the bridge's modules, as a worker process does."""
    script = _BOOT.replace(
        "from rienda_kernel.engine.sandbox.worker_main import main\nmain(sys.argv[2:])\n",
        "import threading\nfrom rienda_kernel.engine.sandbox.isolate import Isolate\n"
        "ts = [threading.Thread(target=lambda: Isolate().close()) for _ in range(3)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]; print('ok')\n")
    processes = [subprocess.Popen([sys.executable, "-c", script, _ROOT], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(12)]
    outcomes = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in processes]
    assert outcomes == [(0, "ok\n", "")] * 12


THREAD_BEFORE_V8 = """
import threading
go, answer = threading.Event(), []
def use_v8():
    go.wait()
    from rienda_kernel.engine.sandbox.isolate import Isolate
    answer.append(Isolate().eval("6 * 7"))
thread = threading.Thread(target=use_v8)
thread.start()  # before V8 is initialized in this process
from rienda_kernel.engine.sandbox.isolate import Isolate
print(Isolate().eval("1 + 1"))
go.set()
thread.join()
print(answer[0])
"""


def test_an_isolate_works_on_a_thread_started_before_v8_was_initialized():
    """Where the CPU has memory protection keys (x86 PKU), V8 keys its code space to the
    threads started after its initialization: a pool's or a kernel's older thread crashed
    the process (SIGSEGV) until V8 ran with --no-memory-protection-keys. On a machine
    without PKU this passes either way."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", THREAD_BEFORE_V8], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "2\n42\n"), done.stderr[-2000:]


def test_a_worker_that_dies_at_start_is_reported_with_how_it_died_and_what_it_said(tmp_path, monkeypatch):
    """The reason reaches the diagnostic (it was masked by 'Bad file descriptor' once)."""
    from rienda_kernel.engine.errors import SandboxError
    from rienda_kernel.engine.sandbox import worker_handle

    monkeypatch.setattr(worker_handle, "_BOOT", "import sys; print('no V8 here', file=sys.stderr); sys.exit(3)")
    worker = worker_handle.Worker(64 * 1024 * 1024, 1.0)
    with pytest.raises(SandboxError) as raised:
        worker.wait_ready(60)
    assert str(raised.value) == "a V8 worker did not start: it exited with status 3; it said: no V8 here"


def test_workers_start_and_say_why_they_died_with_no_usable_temporary_folder(tmp_path, monkeypatch):
    """A worker's stderr is anonymous memory, not a temporary file: with the temporary folder
    gone (or full, or unwritable) a worker still starts and runs a job, and what a dying one
    said still reaches the diagnostic."""
    import tempfile

    from rienda_kernel.engine.sandbox import worker_handle
    from rienda_kernel.engine.sandbox.workers import Sandbox

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-folder"))
    sandbox = Sandbox(memory_limit=64 * 1024 * 1024, spares=0)
    try:
        exports, _ = sandbox.inspect("/x/tool.js", "module.exports = { execute() { return 1; } };", timeout=60)
    finally:
        sandbox.close()
    assert [export.name for export in exports] == ["execute"]
    monkeypatch.setattr(worker_handle, "_BOOT", "import sys; print('no V8 here', file=sys.stderr); sys.exit(3)")
    worker = worker_handle.Worker(64 * 1024 * 1024, 1.0)
    with pytest.raises(SandboxError, match="it said: no V8 here$"):
        worker.wait_ready(60)


def test_a_shadow_realm_is_a_fresh_context_made_through_v8s_own_api():
    """mini_racer_compat assumption 8: with the realm factory installed on the isolate's
    thread, `new ShadowRealm()` is a V8 context of its own (global object, intrinsics)."""
    iso = Isolate(heap_limit=64 * 1024 * 1024, realms=True)
    try:
        seen = iso.eval("""
          Object.prototype.outer = 1; globalThis.outerMark = 1;
          const first = new ShadowRealm();
          first.evaluate("Object.prototype.inner = 1; globalThis.innerMark = 1; Array.prototype.x = 1");
          const second = new ShadowRealm();
          [first.evaluate("typeof outerMark + ' ' + ({}).outer + ' ' + ({}).inner"),
           second.evaluate("typeof innerMark + ' ' + ({}).inner + ' ' + [].x + ' ' + ({}).outer"),
           typeof innerMark + ' ' + ({}).inner].join(' | ')""")
        assert seen == "undefined undefined 1 | undefined undefined undefined undefined | undefined undefined"
    finally:
        iso.close()
