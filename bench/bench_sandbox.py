"""How much a sandboxed hook costs on the critical path, against the alternatives.

    python bench/bench_sandbox.py            # full run (about a minute on 2 cores)
    python bench/bench_sandbox.py --quick    # CI smoke (about 20 s)

Measures, in one run, for both sandboxes (``workers``: the product's ``Sandbox``, V8 in
worker processes; ``in-process``: ``InProcessSandbox``, V8 in this process, as the engine
did before workers), and prints one table:

1. One ``afterToolExecute`` invocation of the docs' upper-casing hook through
   ``HookChain.after_tool_execute`` (a fresh V8 isolate per call, as the engine does):
   *paced* (a short untimed idle gap between calls, so the isolate pool has refilled:
   the realistic critical path, held to the 1.5 ms target) and *back-to-back* (the pool
   may be drained and isolates created inline). The same for a hook making two ``ctx``
   host calls (``ctx.log`` and ``ctx.file.exists``), ``Sandbox.call`` alone (no
   HookChain bookkeeping), and the host-call round trip (``ctx.file.exists``, from the
   difference between a call making 50 of them and one making none).
2. The same hook run by a fresh ``node`` process per call (what process-per-hook systems pay).
3. A plain Python function doing the same upper-casing (the floor).
4. Ratios, and 5. VmRSS (the host process's, and the workers') after a warm-up, after 500
   paced and after 500 back-to-back invocations (measured first, so no earlier burst sets
   the baseline).

Standard library only (plus Rienda and ``node`` on PATH for row 2). Exits 1 only if a
hook returns a wrong result; a missed target is reported, not fatal (CI machines vary).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from rienda_kernel.engine import CancelToken, ExtensionLoader, NonInteractiveUI, Sandbox, ToolResult
from rienda_kernel.engine.ctx.host import Host, RunContext
from rienda_kernel.engine.hooks import HookChain
from rienda_kernel.engine.sandbox.inprocess import InProcessSandbox

TARGET_MS = 1.5
PACE_S = 0.005  # idle gap between paced calls (not timed): an agent turn is never back-to-back

UPPER_JS = (
    "module.exports = { afterToolExecute: function (ctx, call, result) "
    "{ return { text: result.text.toUpperCase() }; } };\n"
)
UPPER_HOST_JS = """\
module.exports = {
  afterToolExecute: function (ctx, call, result) {
    ctx.log("upper-casing the result of " + call.name);
    if (!ctx.file.exists("notes.txt")) throw new Error("notes.txt should exist");
    return { text: result.text.toUpperCase() };
  },
};
"""
# What a process-per-hook system runs: require the hook, payload on stdin, JSON on stdout.
NODE_RUNNER_JS = """\
const fs = require("fs");
const hook = require(process.argv[2]);
const payload = JSON.parse(fs.readFileSync(0, "utf8"));
const ctx = { log: () => {}, file: { exists: () => true } };
const out = hook.afterToolExecute(ctx, payload.call, payload.result);
process.stdout.write(JSON.stringify(out));
"""

ROUND_TRIPS_JS = """\
module.exports = {
  afterToolExecute: function (ctx) {
    for (let i = 0; i < %d; i++) ctx.file.exists("notes.txt");
  },
};
"""

CALL = {"id": "c1", "name": "read", "arguments": {"path": "notes.txt"}}
TEXT = "some text"
EXPECTED = TEXT.upper()


@dataclass(frozen=True)
class Plan:
    paced: int
    back_to_back: int
    host_calls: int
    raw_call: int
    node: int
    python: int
    rss_warmup: int = 50
    rss_calls: int = 500


FULL = Plan(paced=1000, back_to_back=1000, host_calls=500, raw_call=500, node=30, python=200_000)
QUICK = Plan(paced=80, back_to_back=80, host_calls=50, raw_call=50, node=8, python=20_000,
             rss_warmup=20, rss_calls=100)
ROUND_TRIPS = 50  # ctx.file.exists calls in one invocation, for the round-trip row


# -- measuring ---------------------------------------------------------------------------
@dataclass
class Row:
    label: str
    samples_ms: list[float]
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.samples_ms)

    @property
    def p95(self) -> float:
        return percentile(self.samples_ms, 95)


def percentile(samples: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


def timed(
    fn: Callable[[], Any], n: int, pace_s: float = 0.0, check: Callable[[Any], None] | None = None
) -> list[float]:
    """Per-call wall time in ms of ``n`` calls of ``fn``; ``pace_s`` of untimed sleep before each."""
    samples = []
    clock = time.perf_counter
    gc.collect()
    gc.disable()
    try:
        for _ in range(n):
            if pace_s:
                time.sleep(pace_s)
            start = clock()
            out = fn()
            samples.append((clock() - start) * 1000.0)
            if check is not None:
                check(out)
    finally:
        gc.enable()
    return samples


def rss_mb(pid: int | str = "self") -> float | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def v8_contexts() -> int | None:
    try:
        from py_mini_racer import _context  # private, informational only

        return _context.context_count()
    except Exception:  # noqa: BLE001 - optional diagnostic
        return None


@dataclass(frozen=True)
class PoolState:
    ready: int | None  # prepared isolates
    target: int | None  # how many the worker keeps ready
    pending: int | None  # frees (and refills) the worker has not done yet
    misses: int | None  # acquires that found the pool empty, if the pool counts them


def workers_rss_mb(sandbox: Any) -> float | None:
    """The summed VmRSS of a worker sandbox's processes (None for the in-process one)."""
    pool = getattr(sandbox, "pool", None)
    if pool is None:
        return None
    idle, busy = pool.pids()
    sizes = [rss_mb(pid) for pid in idle + busy]
    return sum(size for size in sizes if size is not None)


def pool_state(sandbox: Sandbox) -> PoolState:
    """The isolate pool's private state, read defensively (diagnostics and pacing only):
    the pool has changed shape before, and the bench must keep running when it does."""
    pool = getattr(sandbox, "_pool", None)
    if pool is None or hasattr(sandbox, "pool"):  # workers: their isolate pools are theirs
        return PoolState(None, None, None, None)

    def size_of(name: str) -> int | None:
        queue_ = getattr(pool, name, None)
        try:
            return queue_.qsize() if queue_ is not None else None
        except Exception:  # noqa: BLE001
            return None

    ready = getattr(pool, "ready", None)
    if not isinstance(ready, int):
        ready = size_of("_ready")
    target = getattr(pool, "target", None)
    if not isinstance(target, int):
        target = getattr(pool, "_size", None)
    queued = [n for n in (size_of("_jobs"), size_of("_to_close")) if n is not None]
    misses = getattr(pool, "misses", None)
    return PoolState(ready, target if isinstance(target, int) else None,
                     sum(queued) if queued else None, misses if isinstance(misses, int) else None)


def settle(sandbox: Sandbox, timeout_s: float = 10.0) -> None:
    """Wait until the pool's worker has caught up (pool full, nothing left to free).

    Used between sections, and before the very first call: an early engine aborted inside
    V8 when its first isolate was created on two threads at once (see bench/README.md).
    Without readable pool state, waits for the count of live V8 contexts to stay put.
    """
    deadline = time.monotonic() + timeout_s
    if hasattr(sandbox, "pool"):  # workers: one idle and none busy; their own pools refill meanwhile
        while time.monotonic() < deadline:
            idle, busy = sandbox.pool.pids()
            if idle and not busy:
                break
            time.sleep(0.002)
        time.sleep(0.02)
        return
    stable_since, last = time.monotonic(), v8_contexts()
    while time.monotonic() < deadline:
        state = pool_state(sandbox)
        if state.ready is not None and state.target is not None:
            if state.ready >= state.target and not state.pending:
                break
        else:
            now, count = time.monotonic(), v8_contexts()
            if count != last:
                stable_since, last = now, count
            elif now - stable_since > 0.2:
                break
        time.sleep(0.002)
    time.sleep(0.01)  # a free just taken off the queue finishes


# -- setup -------------------------------------------------------------------------------
class Rig:
    def __init__(self, root: Path, sandbox: Sandbox) -> None:
        self.home = root / "home"
        self.workdir = root / "work"
        self.workdir.mkdir(parents=True)
        (self.workdir / "notes.txt").write_text("hello\n", encoding="utf-8")
        for name, source in (("upper", UPPER_JS), ("upper-host", UPPER_HOST_JS)):
            folder = self.home / "hooks" / name
            folder.mkdir(parents=True)
            (folder / "index.js").write_text(source, encoding="utf-8")
        self.sandbox = sandbox
        catalog = ExtensionLoader(sandbox).discover(self.home)
        missing = {"upper", "upper-host"} - set(catalog.hooks)
        if missing:
            sys.exit(f"hooks not loaded: {sorted(missing)}: {[d.message for d in catalog.diagnostics]}")
        self.hooks = catalog.hooks
        self.ui = NonInteractiveUI()
        self.run = RunContext(workdir=self.workdir, ui=self.ui)
        self.round_trips = self._hook("round-trips", ROUND_TRIPS_JS % ROUND_TRIPS)
        self.no_trips = self._hook("no-trips", ROUND_TRIPS_JS % 0)

    def _hook(self, name: str, source: str) -> Any:
        folder = self.home / "hooks" / name
        folder.mkdir(parents=True)
        (folder / "index.js").write_text(source, encoding="utf-8")
        return ExtensionLoader(self.sandbox).discover(self.home, hooks=[name]).hooks[name]

    def chain(self, name: str) -> HookChain:
        return HookChain([self.hooks[name]], self.sandbox, self.run)


def expect_upper(result: ToolResult) -> None:
    if result.text != EXPECTED or result.is_error:
        raise SystemExit(f"wrong hook result: {result!r}")


def chain_call(chain: HookChain, ui: NonInteractiveUI) -> Callable[[], ToolResult]:
    def call() -> ToolResult:
        out = chain.after_tool_execute(CALL["id"], CALL["name"], CALL["arguments"], ToolResult(TEXT), CancelToken())
        ui.events.clear()  # the ledger would otherwise grow for the whole bench
        return out

    return call


# -- the rows ----------------------------------------------------------------------------
def bench_sandbox(rig: Rig, plan: Plan) -> dict[str, Row]:
    upper = chain_call(rig.chain("upper"), rig.ui)
    host = chain_call(rig.chain("upper-host"), rig.ui)
    hook = rig.hooks["upper"]
    payload = [CALL, ToolResult(TEXT).to_js()]

    def refuse(op: str, args: Any) -> Any:
        raise RuntimeError(f"unexpected host call {op}")

    def raw() -> Any:
        return rig.sandbox.call(hook.path, hook.source, "afterToolExecute", payload, refuse, CancelToken())

    def check_raw(value: Any) -> None:
        if value.kind != "object" or value.value.get("text") != EXPECTED:
            raise SystemExit(f"wrong Sandbox.call result: {value!r}")

    for _ in range(20):  # warm-up: imports, JIT of the Python paths, first isolates
        expect_upper(upper())
        expect_upper(host())
    rows = {}
    gap = f"{PACE_S * 1000:g} ms gap"

    settle(rig.sandbox)
    rows["paced"] = Row("sandbox, HookChain, paced", timed(upper, plan.paced, PACE_S, expect_upper), gap)
    settle(rig.sandbox)
    misses_before, target_before = pool_state(rig.sandbox).misses, pool_state(rig.sandbox).target
    empty = ""
    if misses_before is None:
        empty = drained_fraction(rig.sandbox, upper, plan.back_to_back)  # old pools: count in a pre-pass
        settle(rig.sandbox)
    samples = timed(upper, plan.back_to_back, 0, expect_upper)
    after = pool_state(rig.sandbox)
    if misses_before is not None and after.misses is not None:
        empty = f"{after.misses - misses_before}/{plan.back_to_back} acquires (inline create)"
    if after.target is not None and target_before is not None:
        empty += f"; pool target {target_before}" + (f"->{after.target}" if after.target != target_before else "")
    rows["b2b"] = Row("sandbox, HookChain, back-to-back", samples, f"pool empty at {empty}" if empty else "no gap")
    settle(rig.sandbox)
    rows["host_paced"] = Row("  + 2 ctx host calls, paced", timed(host, plan.host_calls, PACE_S, expect_upper),
                             "ctx.log + ctx.file.exists")
    settle(rig.sandbox)
    rows["host_b2b"] = Row("  + 2 ctx host calls, back-to-back", timed(host, plan.host_calls, 0, expect_upper),
                           "ctx.log + ctx.file.exists")
    settle(rig.sandbox)
    rows["raw"] = Row("Sandbox.call only, paced", timed(raw, plan.raw_call, PACE_S, check_raw),
                      "no HookChain / Host / ledger")
    settle(rig.sandbox)
    rows["round_trip"] = bench_round_trip(rig, plan)
    settle(rig.sandbox)
    return rows


def bench_round_trip(rig: Rig, plan: Plan) -> Row:
    """One host call's round trip: (a call making ROUND_TRIPS - the median call making none) / ROUND_TRIPS."""
    host = Host(rig.run, "hook:round-trips", CancelToken())

    def invoke(hook: Any) -> Callable[[], Any]:
        return lambda: rig.sandbox.call(hook.path, hook.source, "afterToolExecute", [], host, CancelToken())

    empty = statistics.median(timed(invoke(rig.no_trips), plan.raw_call, PACE_S))
    samples = [(ms - empty) / ROUND_TRIPS for ms in timed(invoke(rig.round_trips), plan.raw_call, PACE_S)]
    return Row("host call round trip", samples, f"ctx.file.exists; {ROUND_TRIPS} per call, less an empty call")


def drained_fraction(sandbox: Sandbox, fn: Callable[[], Any], n: int) -> str:
    """Share of back-to-back calls that found the pool empty (diagnostic, untimed run)."""
    if pool_state(sandbox).ready is None:
        return ""
    empty = 0
    for _ in range(n):
        if pool_state(sandbox).ready == 0:
            empty += 1
        fn()
    return f"{empty}/{n} acquires (inline create)"


def bench_node(rig: Rig, plan: Plan, scratch: Path) -> Row | str:
    node = shutil.which("node")
    if node is None:
        return "node not on PATH: skipped"
    runner = scratch / "run-hook.js"
    runner.write_text(NODE_RUNNER_JS, encoding="utf-8")
    hook_path = str(rig.hooks["upper"].path)
    payload = json.dumps({"call": CALL, "result": ToolResult(TEXT).to_js()})

    def call() -> str:
        done = subprocess.run([node, str(runner), hook_path], input=payload, capture_output=True,
                              text=True, check=True)
        return done.stdout

    def check(out: str) -> None:
        if json.loads(out).get("text") != EXPECTED:
            raise SystemExit(f"wrong node result: {out!r}")

    call()  # warm the page cache
    return Row("node process per call", timed(call, plan.node, 0, check), f"{plan.node} spawns")


def bench_python(plan: Plan) -> Row:
    def upper_hook(ctx: Any, call: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        return {"text": result["text"].upper()}

    result = ToolResult(TEXT).to_js()

    def call() -> dict[str, Any]:
        return upper_hook(None, CALL, result)

    if call()["text"] != EXPECTED:
        raise SystemExit("wrong python result")
    return Row("plain Python function", timed(call, plan.python), "incl. ~0.05 us timer overhead")


def bench_rss(rig: Rig, plan: Plan) -> dict[str, Any]:
    """VmRSS after a warm-up, after ``rss_calls`` paced calls, then after as many back-to-back.

    Run before anything else so that the baseline is not an earlier burst's high-water mark.
    """
    upper = chain_call(rig.chain("upper"), rig.ui)
    for _ in range(plan.rss_warmup):
        upper()
        time.sleep(PACE_S)

    def snapshot() -> tuple[float | None, int | None]:
        settle(rig.sandbox)
        gc.collect()
        workers = workers_rss_mb(rig.sandbox)
        return rss_mb(), workers if workers is not None else v8_contexts()

    marks = {"warm": snapshot()}
    for mode, pace in (("paced", PACE_S), ("b2b", 0.0)):
        started = time.perf_counter()
        peak_contexts = 0
        for _ in range(plan.rss_calls):
            upper()
            if pace:
                time.sleep(pace)
            if not hasattr(rig.sandbox, "pool"):
                peak_contexts = max(peak_contexts, v8_contexts() or 0)
        marks[mode] = snapshot() + (time.perf_counter() - started, peak_contexts)
    marks["target"] = pool_state(rig.sandbox).target
    return marks


# -- reporting ---------------------------------------------------------------------------
def fmt_ms(value: float) -> str:
    if value < 0.01:
        return f"{value * 1000:.2f} us"
    return f"{value:.3f} ms"


def verdict(value: float) -> str:
    return "PASS" if value <= TARGET_MS else "MISS"


def machine_info() -> list[str]:
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    import rienda_kernel

    repo = Path(__file__).resolve().parent.parent
    package = Path(rienda_kernel.__file__).resolve().parent
    engine = str(package)  # imported from elsewhere (PYTHONPATH): name it
    if package == repo / "rienda_kernel" and shutil.which("git") and (repo / ".git").exists():
        git = ["git", "--no-optional-locks", "-C", str(repo)]  # read-only: never refreshes the index
        head = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(git + ["diff", "--quiet", "HEAD", "--", "rienda_kernel"]).returncode != 0
        engine = f"{head}{' + uncommitted engine changes' if dirty else ''}" if head else "unknown"
    node = shutil.which("node")
    node_version = "not on PATH"
    if node:
        node_version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    return [
        f"machine   : {platform.platform()}; {cpu or platform.machine()}",
        f"cpus      : nproc {usable} (os.cpu_count {os.cpu_count()})",
        f"python    : {platform.python_implementation()} {platform.python_version()}",
        f"mini-racer: {version('mini-racer')}; rienda {version('rienda')} at {engine}; node {node_version}",
    ]


def print_report(mode: str, plan: Plan, results: dict[str, dict[str, Any]], node: Row | str, python: Row,
                 setup_s: float, total_s: float) -> None:
    print(f"Rienda sandbox benchmark ({mode})")
    for line in machine_info():
        print("  " + line)
    print()
    header = (f"{'invocation of the upper-casing hook':48} {'n':>6} {'median':>10} {'mean':>10} {'p95':>10} "
              f"{'max':>10}  note")
    print(header)
    print("-" * len(header))
    ordered = [Row(f"{label}: {row.label}", row.samples_ms, row.note)
               for label, result in results.items() for row in result["rows"].values()]
    ordered += ([node] if isinstance(node, Row) else []) + [python]
    for row in ordered:
        print(f"{row.label:48} {len(row.samples_ms):>6} {fmt_ms(row.median):>10} {fmt_ms(row.mean):>10} "
              f"{fmt_ms(row.p95):>10} {fmt_ms(max(row.samples_ms)):>10}  {row.note}")
    if isinstance(node, str):
        print(f"{'node process per call':48} {node}")
    print()

    print(f"Target: one sandboxed hook invocation on the critical path (paced, HookChain) <= {TARGET_MS} ms")
    for label, result in results.items():
        paced, b2b = result["rows"]["paced"], result["rows"]["b2b"]
        print(f"  {label:10}: median {fmt_ms(paced.median)}: {verdict(paced.median)}    "
              f"p95 {fmt_ms(paced.p95)}: {verdict(paced.p95)}    (back-to-back: median {fmt_ms(b2b.median)}, "
              f"mean {fmt_ms(b2b.mean)}, p95 {fmt_ms(b2b.p95)})")
    print("  (back-to-back is bimodal: a prepared isolate or one made inline, so when the pool is")
    print("   empty at about half the acquires the mean says more than the median)")
    print()

    rows, local = results["workers"]["rows"], results["in-process"]["rows"]
    paced = rows["paced"]
    print("Ratios and differences (medians)")
    if isinstance(node, Row):
        print(f"  node-per-call / workers paced          : {node.median / paced.median:8.1f}x")
    print(f"  workers paced / python                 : {paced.median / python.median:8.0f}x")
    for key, what in (("paced", "hook invocation, paced"), ("host_paced", "hook with 2 ctx calls, paced"),
                      ("raw", "Sandbox.call only, paced"), ("round_trip", "host call round trip")):
        print(f"  workers - in-process, {what:28}: {rows[key].median - local[key].median:+8.3f} ms "
              f"({rows[key].median / local[key].median:.2f}x)")
    print(f"  HookChain - Sandbox.call (workers)     : {paced.median - rows['raw'].median:+8.3f} ms "
          "(Host, ledger, result typing)")
    print()

    print(f"Memory: VmRSS after {plan.rss_warmup} warm-up HookChain invocations, then after "
          f"{plan.rss_calls} more paced ones, then {plan.rss_calls} back-to-back")
    for label, result in results.items():
        print_rss(label, plan, result["rss"])
    print()
    print(f"setup {setup_s:.2f} s, total {total_s:.1f} s")


def print_rss(label: str, plan: Plan, rss: dict[str, Any]) -> None:
    warm_rss, warm_other = rss["warm"]
    if warm_rss is None:
        print("  VmRSS not available (/proc/self/status)")
        return
    workers = label == "workers"
    other = (lambda value: f"workers' VmRSS {value:6.1f} MB") if workers else (
        lambda value: f"V8 contexts alive {value}")
    print(f"  {label}")
    print(f"    {'after warm-up':28} host {warm_rss:7.1f} MB  {other(warm_other)}")
    previous = warm_rss
    for mode, text in (("paced", f"+{plan.rss_calls} paced"), ("b2b", f"+{plan.rss_calls} back-to-back")):
        after, value, elapsed, peak = rss[mode]
        growth = after - previous
        peak_note = "" if workers else f" (peak {peak}, sampled between calls)"
        print(f"    {text:28} host {after:7.1f} MB  growth {growth:+6.1f} MB ({growth * 1024 / plan.rss_calls:+6.1f} "
              f"KB/call)  {other(value)}{peak_note}  {elapsed:.1f} s")
        previous = after
    if rss.get("target") is not None:
        print(f"    pool target afterwards: {rss['target']} prepared isolates")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations (CI smoke)")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    started = time.perf_counter()
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="rienda-bench-") as tmp:
        scratch = Path(tmp)
        setup_s = 0.0
        for label, make in (("workers", Sandbox), ("in-process", InProcessSandbox)):
            began = time.perf_counter()
            sandbox = make()
            settle(sandbox)  # never race the pool's first isolate (see settle)
            rig = Rig(scratch / label, sandbox)
            setup_s += time.perf_counter() - began
            rss = bench_rss(rig, plan)  # first: its baseline must not be a burst's high-water mark
            results[label] = {"rows": bench_sandbox(rig, plan), "rss": rss, "rig": rig}
        node = bench_node(results["workers"]["rig"], plan, scratch)
        python = bench_python(plan)
    print_report("--quick" if args.quick else "full", plan, results, node, python, setup_s,
                 time.perf_counter() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
