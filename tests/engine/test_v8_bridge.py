"""The V8 bridge itself: synchronous host calls over private mini-racer internals.

If a mini-racer upgrade changes those internals, these tests fail loudly.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import threading
import time

import pytest

from rienda_kernel.engine import CancelToken, Interrupted, OutOfMemory, SandboxError, ScriptError
from rienda_kernel.engine.v8 import MAILBOX_BYTES, Isolate, IsolatePool

SOURCE = "/virtual/tools/probe/index.js"


def test_mini_racer_is_the_pinned_version():
    assert importlib.metadata.version("mini-racer") == "0.14.1"


@pytest.fixture
def isolate():
    iso = Isolate(memory_limit=64 * 1024 * 1024)
    yield iso
    iso.close()


def test_a_host_call_is_synchronous_and_returns_a_value(isolate):
    """JS waits inside the call while Python works, then uses the value at once."""
    calls = []

    def host(op, args):
        calls.append((op, args))
        time.sleep(0.05)
        return {"exists": True}

    isolate.set_host(host)
    outcome = _call(isolate, """
      const before = Date.now();
      const value = ctx.file.exists("a");
      return [value, Date.now() - before >= 50];""")
    assert outcome == {"ok": True, "result": {"kind": "array", "value": [{"exists": True}, True]}}
    assert calls == [("file.exists", {"path": "a"})]


def _call(isolate, body: str) -> dict:
    """Run ``function (ctx) { body }`` through the prelude and return its outcome."""
    script = ("(function () { __rienda.module.exports.run = function (ctx) { " + body + " }; "
              "return __rienda.call('run', [], []); })()")
    return json.loads(isolate.eval(script))


@pytest.mark.parametrize("size", [0, 1000, MAILBOX_BYTES, 5 * 1024 * 1024])
def test_payloads_of_any_size_cross_both_ways_intact(isolate, size):
    text = ("ab€😀\u2028" * (size // 5 + 1))[:size]
    received = {}

    def host(op, args):
        received["text"] = args["path"]
        return args["path"][::-1]

    isolate.set_host(host)
    outcome = _call(isolate, f"return ctx.file.read({json.dumps(text)});")
    assert received["text"] == text
    assert outcome["result"]["value"] == text[::-1]


def test_a_python_exception_is_a_catchable_js_error_named_after_its_class(isolate):
    def host(op, args):
        raise PermissionError("no entry: secret.txt")

    isolate.set_host(host)
    outcome = _call(isolate, """
      try { ctx.file.read("secret.txt"); } catch (e) { return [e instanceof Error, e.name, e.message]; }""")
    assert outcome["result"]["value"] == [True, "PermissionError", "no entry: secret.txt"]


def test_await_on_a_synchronous_ctx_call_works(isolate):
    isolate.set_host(lambda op, args: "content")
    script = ("(function () { __rienda.module.exports.run = async function (ctx) { "
              "return (await ctx.file.read('x')) + '!'; }; return __rienda.call('run', [], []); })()")
    assert json.loads(isolate.eval(script)) == {"pending": True}


def test_a_syntax_error_reports_line_and_caret(isolate):
    with pytest.raises(SandboxError) as caught:
        isolate.eval("let a = 1;\nlet b = ;\n")
    assert ":2: SyntaxError: Unexpected token ';'" in str(caught.value)


def test_terminate_from_another_thread_stops_a_busy_loop_and_frees_the_isolate():
    iso = Isolate()
    threading.Timer(0.2, iso.terminate).start()
    started = time.perf_counter()
    with pytest.raises(Interrupted):
        iso.eval("while (true) { try { } catch (e) { } }")
    assert time.perf_counter() - started < 5
    iso.close()


def test_memory_bomb_raises_out_of_memory_and_a_new_isolate_works():
    iso = Isolate(memory_limit=32 * 1024 * 1024)
    with pytest.raises(OutOfMemory):
        iso.eval("const a = []; while (true) a.push(new Array(50000).fill(Math.random()));")
    iso.close()
    again = Isolate()
    assert again.eval("6 * 7") == 42
    again.close()


def test_out_of_memory_in_an_async_continuation_ends_the_call(sandbox, tmp_path):
    source = """module.exports = { run: function () {
      return new Promise(() => setTimeout(() => { const a = []; while (true) a.push(new Array(50000).fill(1)); }, 5));
    } };"""
    with pytest.raises(OutOfMemory):
        sandbox.call(SOURCE, source, "run", [], lambda op, args: None, CancelToken())


def test_js_errors_carry_file_line_and_column(sandbox):
    source = "module.exports = {\n  run: function () {\n    return undefinedThing.x;\n  },\n};\n"
    with pytest.raises(ScriptError) as caught:
        sandbox.call(SOURCE, source, "run", [], lambda op, args: None, CancelToken())
    assert caught.value.name == "ReferenceError"
    assert caught.value.location == f"{SOURCE}:3:5"
    assert str(caught.value) == f"ReferenceError: undefinedThing is not defined (at {SOURCE}:3:5)"


def test_commonjs_exports_forms(sandbox):
    for source in ['exports.run = () => "exports.x";',
                   'module.exports.run = () => "module.exports.x";',
                   'module.exports = { run: () => "replaced" };',
                   'this.run = () => "this";']:
        value = sandbox.call(SOURCE, source, "run", [], lambda op, args: None, CancelToken())
        assert value.kind == "string"


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
    """Unserialized, this crashed about one process in ten (V8's lazy process-wide init)."""
    script = ("import threading\nfrom rienda_kernel.engine.v8 import Isolate\n"
              "ts = [threading.Thread(target=lambda: Isolate().close()) for _ in range(3)]\n"
              "[t.start() for t in ts]; [t.join() for t in ts]; print('ok')\n")
    processes = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(12)]
    outcomes = [(p.wait(timeout=60), p.stdout.read()) for p in processes]
    assert outcomes == [(0, "ok\n")] * 12
