"""The measurements behind ``bench_targets.py``, one function per row of issue 24's table.

Each function measures one thing in this process (or in the processes it starts) and
returns plain figures; ``bench_targets.py`` runs them in one go and prints the table. The
other benches hold the machinery (rigs, servers, kernels): this module only composes it.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_loop  # noqa: E402
import bench_sandbox  # noqa: E402
import bench_startup  # noqa: E402

from rienda_kernel.engine import CancelToken  # noqa: E402


# -- processes ----------------------------------------------------------------------------
def cpu_seconds(pid: int) -> float:
    """User + system CPU of every thread of ``pid`` so far, to the nanosecond (schedstat)."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat", encoding="ascii") as stat:
                total += int(stat.read().split()[0])
    except OSError:
        pass
    return total / 1e9


def memory_mb(pid: int) -> tuple[float, float]:
    """(RSS, USS) of ``pid`` in MB (USS: its private pages, what it alone costs)."""
    rss = uss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            for line in rollup:
                fields = line.split()
                if fields[0] == "Rss:":
                    rss = int(fields[1])
                elif fields[0] in ("Private_Clean:", "Private_Dirty:"):
                    uss += int(fields[1])
    except OSError:
        pass
    return rss / 1024, uss / 1024


def children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                    if stat.read().rsplit(") ", 1)[1].split()[1] == str(pid):
                        found.append(int(entry))
            except OSError:
                pass
    return found


@contextmanager
def busy_cores() -> Iterator[None]:
    """Every core busy (a spinning process per core) for the block."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait(timeout=10)


# -- the sandbox rows ---------------------------------------------------------------------------
def sandbox_rows(sandbox: Any, root: Path, quick: bool) -> dict[str, Any]:
    """One hook invocation through HookChain (paced), Sandbox.call alone, the host-call
    round trip; and what preparation costs besides: CPU per invocation in the processes
    that run V8 (for workers: the workers, background included), and memory."""
    plan = bench_sandbox.QUICK if quick else bench_sandbox.FULL
    rig = bench_sandbox.Rig(root, sandbox)
    upper = bench_sandbox.chain_call(rig.chain("upper"), rig.ui)
    hook = rig.hooks["upper"]
    payload = [bench_sandbox.CALL, bench_sandbox.ToolResult(bench_sandbox.TEXT).to_js()]

    def raw() -> Any:
        return sandbox.call(hook.path, hook.source, "afterToolExecute", payload, lambda op, args: None, CancelToken())

    for _ in range(30):
        upper()
    bench_sandbox.settle(sandbox)
    pool = getattr(sandbox, "pool", None)
    pids = (lambda: sum(pool.pids(), [])) if pool is not None else (lambda: [os.getpid()])
    before = {pid: cpu_seconds(pid) for pid in pids()}
    host_before = memory_mb(os.getpid())
    paced = bench_sandbox.timed(upper, plan.paced, bench_sandbox.PACE_S, bench_sandbox.expect_upper)
    time.sleep(3.0)  # the background catches up: its CPU counts
    after = {pid: cpu_seconds(pid) for pid in pids()}
    cpu = sum(after.get(pid, 0.0) - before.get(pid, 0.0) for pid in after) / plan.paced
    workers_mem = [memory_mb(pid) for pid in pids()] if pool is not None else []
    bench_sandbox.settle(sandbox)
    alone = bench_sandbox.timed(raw, plan.raw_call, bench_sandbox.PACE_S)
    bench_sandbox.settle(sandbox)
    trip = bench_sandbox.bench_round_trip(rig, plan).samples_ms
    return {"paced": paced, "call": alone, "round_trip": trip, "cpu_ms": cpu * 1000,
            "host_mb": (host_before, memory_mb(os.getpid())), "workers_mb": workers_mem}


def turn_rows(sandbox: Any, root: Path, label: str, quick: bool) -> dict[str, list[float]]:
    """Engine time per turn, six hooks on all points + a tool call, for an instant model
    and one answering in 150 ms; and the same with no hooks (the baseline)."""
    runs, turns = (3, 5) if quick else (8, 10)
    six, none = bench_loop.make_home(root, 6, sandbox, label), bench_loop.make_home(root, 0, sandbox, label)
    bench_loop.per_turn_ms(six, 3, True, 1, 0.0)  # warm-up: extension loading, prepared runtimes
    figures = {}
    for latency in (0.15, 0.0):
        figures[f"six {latency}"] = bench_loop.per_turn_ms(six, turns, True, runs, latency)
        figures[f"none {latency}"] = bench_loop.per_turn_ms(none, turns, True, runs, latency)
    return figures


def resume_rows(root: Path, quick: bool) -> tuple[list[float], list[float]]:
    return bench_loop.resume_ms(root, 10_000, 3 if quick else 7)


# -- start-up ------------------------------------------------------------------------------------
def startup_rows(quick: bool) -> dict[str, float]:
    """``rienda run``'s first token over the server's own, without and with a JS tool."""
    runs = 3 if quick else 8
    out = {}
    with tempfile.TemporaryDirectory() as folder, bench_startup.server(False, Path(folder)) as url:
        import httpx

        client = httpx.Client()
        bench_startup.raw_first_token(client, url)
        for name, with_js in (("no JS", False), ("a JS tool", True)):
            home = bench_startup.make_home(Path(folder), url, with_js)
            bench_startup.run_first_token(sys.executable, home)  # warm-up: caches compiled modules
            rienda = [bench_startup.run_first_token(sys.executable, home)[0] for _ in range(runs)]
            raw = [bench_startup.raw_first_token(client, url) for _ in range(runs)]
            out[name] = (statistics.median(rienda) - statistics.median(raw)) * 1000
    return out


# -- the floors ---------------------------------------------------------------------------------
ECHO = "import os, sys\nwhile True:\n    b = os.read(0, 1)\n    if not b: break\n    os.write(1, b)\n"


def floor_rows(quick: bool) -> dict[str, list[float]]:
    """What the machine charges for the hops an invocation cannot avoid, paced as the
    invocation rows are (5 ms untimed gap, so the other side sleeps): a round trip to a
    sleeping thread (two wake-ups), to a sleeping process over pipes (two wake-ups), and
    one ``eval("1")`` on V8's own thread (mini-racer's hop, in this process)."""
    import queue
    import threading

    from rienda_kernel.engine.sandbox.isolate import Isolate

    n = 200 if quick else 600
    to_thread, back = queue.SimpleQueue(), queue.SimpleQueue()
    echo = threading.Thread(target=lambda: [back.put(x) for x in iter(to_thread.get, None)], daemon=True)
    echo.start()
    out = {"thread": bench_sandbox.timed(lambda: (to_thread.put(1), back.get()), n, bench_sandbox.PACE_S)}
    to_thread.put(None)
    child = subprocess.Popen([sys.executable, "-c", ECHO], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        def ping() -> None:
            os.write(child.stdin.fileno(), b"x")
            os.read(child.stdout.fileno(), 1)

        out["process"] = bench_sandbox.timed(ping, n, bench_sandbox.PACE_S)
    finally:
        child.stdin.close()
        child.wait(timeout=10)
        child.stdout.close()
    isolate = Isolate()
    try:
        out["eval"] = bench_sandbox.timed(lambda: isolate.eval("1"), n, bench_sandbox.PACE_S)
    finally:
        isolate.close()
    return out


# -- the kernel rows ---------------------------------------------------------------------------
def kernel_rows(quick: bool) -> dict[str, Any]:
    """ctx.log to the client against a python3 kernel's print (idle, then every core
    busy); a Rienda kernel idle after a turn: CPU over 30 s and memory (with its workers,
    then after their quiet-period release), against a python3 kernel's."""
    import yaml

    import bench_kernel
    from rienda_kernel.jupyter.install import install

    logs = 40 if quick else 120
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        install(prefix=str(root / "prefix"))
        home, work = root / "home", root / "work"
        (home / "tools" / "logger").mkdir(parents=True)
        (home / "tools" / "logger" / "index.js").write_text(bench_kernel.LOGGER.replace("N;", f"{logs};"))
        (home / "agents").mkdir()
        (home / "agents" / "default.md").write_text("---\nmodel: scripted/logs.yaml\ntools: [logger]\n---\nGo.\n")
        work.mkdir()
        (work / "logs.yaml").write_text(yaml.safe_dump(
            [{"text": "", "tool_calls": [{"name": "logger", "arguments": {}}]}, {"text": "done"}] * 30))
        env = {"JUPYTER_PATH": str(root / "prefix" / "share" / "jupyter"), "RIENDA_HOME": str(home),
               "IPYTHONDIR": str(root / "ipython")}
        os.environ["JUPYTER_PATH"] = env["JUPYTER_PATH"]
        printing = (f"import time\nfor i in range({logs}):\n    print(f't={{time.time() * 1000}}', flush=True)\n"
                    "    time.sleep(0.005)\n")
        km, kc = bench_kernel.start("rienda", work, env)
        try:
            bench_kernel.stamped_latencies(kc, "log", "t=", allow_stdin=True)  # warm-up turn
            pid = km.provisioner.process.pid
            out["log idle"] = _stamped(bench_kernel, kc, "log", True, 3)
            with busy_cores():
                out["log busy"] = _stamped(bench_kernel, kc, "log", True, 3)
            time.sleep(2)
            out["rienda mem turn"] = [memory_mb(p) for p in [pid] + children(pid)]
            out["rienda idle cpu"] = idle_cpu(pid, 30.0)
            time.sleep(6)  # past the workers' quiet period (30 s) and their exit
            out["rienda mem quiet"] = [memory_mb(p) for p in [pid] + children(pid)]
        finally:
            bench_kernel.stop(km, kc)
        km, kc = bench_kernel.start("python3", work, {})
        try:
            out["print idle"] = _stamped(bench_kernel, kc, printing, False, 3)
            with busy_cores():
                out["print busy"] = _stamped(bench_kernel, kc, printing, False, 3)
            pid = km.provisioner.process.pid
            out["python3 mem"] = memory_mb(pid)
            out["python3 idle cpu"] = idle_cpu(pid, 30.0)
        finally:
            bench_kernel.stop(km, kc)
    return out


def idle_cpu(pid: int, seconds: float) -> float:
    """CPU seconds ``pid`` and its children spend over ``seconds``, sampled each second
    (a child that exits meanwhile, a worker released when quiet, counts until its last
    sample)."""
    last: dict[int, float] = {}
    spent = 0.0
    end = time.monotonic() + seconds
    while True:
        for member in [pid] + children(pid):
            now = cpu_seconds(member)
            if member in last:
                spent += max(0.0, now - last[member])
            last[member] = now
        if time.monotonic() >= end:
            return spent
        time.sleep(min(1.0, max(0.0, end - time.monotonic())))


def _stamped(bench_kernel: Any, kc: Any, code: str, allow_stdin: bool, repeats: int) -> list[float]:
    figures: list[float] = []
    for _ in range(repeats):
        streamed, _ = bench_kernel.stamped_latencies(kc, code, "t=", allow_stdin=allow_stdin)
        figures += streamed
    return figures


def p95(samples: list[float]) -> float:
    return bench_sandbox.percentile(samples, 95)

