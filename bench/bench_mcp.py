"""What Rienda adds to an MCP tool call, against the same call made with the SDK's client
in this process (the baseline, measured in the same run), and what a server's start, an
interrupt and a close cost.

    python bench/bench_mcp.py            # 300 calls per row, 5 starts (about a minute)
    python bench/bench_mcp.py --quick    # 50 calls, 2 starts

The server is tests/helpers/mcp_lab.py over stdio; the call is ``double {n: 21}``.
The four rows are measured in turn, call by call. Rows (median, p95, in ms):

1. the SDK alone: ``await session.call_tool(...)`` on the very session (and server) Rienda
   uses, timed inside its event loop (the baseline);
2. Rienda, no hooks: what a run does per call (the ``beforeToolExecute`` chain, arguments
   checked against the inputSchema, the call on Rienda's MCP loop waited on from the run's
   thread, the result as text, the ``afterToolExecute`` chain);
3. Rienda, one ``beforeToolExecute`` hook (JavaScript that returns nothing);
4. that hook alone (the chain with no tool call): its own cost, to subtract from row 3.

Then: a server's start (spawn to tools listed), an interrupt during a slow call (cancel
to the call returning), and ``Rienda.close()`` of an idle server and of a busy one.
Target: row 2 minus row 1 at most 1 ms; row 3 minus row 4 minus row 1 the same.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

from rienda_kernel.engine import CancelToken, Interrupted, NonInteractiveUI, Rienda
from rienda_kernel.engine.ctx.host import RunContext
from rienda_kernel.engine.hooks import HookChain
from rienda_kernel.engine.tools.invoke import invoke_tool

LAB = Path(__file__).resolve().parents[1] / "tests" / "helpers" / "mcp_lab.py"
NOTHING_HOOK = "module.exports = { beforeToolExecute(ctx, call) { } };"


def summary(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"{name:<52} median {statistics.median(ordered):8.3f} ms   p95 {p95:8.3f} ms   (n={len(ordered)})"


def sdk_call(rienda: Rienda) -> float:
    """One ``await session.call_tool(...)`` on the SDK's session Rienda holds, timed inside
    its event loop: the same server and client, without Rienda around the call."""
    servers = rienda._mcp  # noqa: SLF001 - the bench reaches the SDK session Rienda's call goes through
    session = servers._connections["lab"].session  # noqa: SLF001

    async def timed() -> float:
        started = time.perf_counter()
        await session.call_tool("double", {"n": 21})
        return (time.perf_counter() - started) * 1000

    return asyncio.run_coroutine_threadsafe(timed(), servers._loop).result(30)  # noqa: SLF001


class Path_:
    """What a run does for one call (:func:`rienda_kernel.engine.runtime.loop._tool_call`, without
    the events): the ``beforeToolExecute`` chain, ``invoke_tool``, ``afterToolExecute``."""

    def __init__(self, rienda: Rienda, hooks: list) -> None:
        self.rienda = rienda
        self.tool = rienda.catalog(tools=["mcp__lab__double"], hooks=[h.name for h in hooks]).tools["mcp__lab__double"]
        self.run = RunContext(rienda.workdir, NonInteractiveUI(record_events=False))
        self.chain = HookChain(hooks, rienda.sandbox, self.run)
        self.calls = 0

    def __call__(self, call_tool: bool = True) -> float:
        self.calls += 1
        cancel, call_id = CancelToken(), f"call-{self.calls}"
        started = time.perf_counter()
        gate = self.chain.before_tool_execute(call_id, self.tool.name, {"n": 21}, cancel)
        if call_tool:
            result = invoke_tool(self.tool, gate.arguments, self.run, self.rienda.sandbox, cancel)
            result = self.chain.after_tool_execute(call_id, self.tool.name, gate.arguments, result, cancel)
            assert result.text == "42", result
        return (time.perf_counter() - started) * 1000


def setup(root: Path, lab_dir: Path) -> Rienda:
    home = root / "home"
    (home / "hooks" / "nothing").mkdir(parents=True)
    (home / "hooks" / "nothing" / "index.js").write_text(NOTHING_HOOK)
    (home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": {"lab": {
        "command": sys.executable, "args": [str(LAB)], "env": {"LAB_DIR": str(lab_dir)}}}}))
    return Rienda(home, root)


def starts(root: Path, lab_dir: Path, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        rienda = setup(Path(tempfile.mkdtemp(dir=root)), lab_dir)
        started = time.perf_counter()
        rienda.catalog(tools=["mcp__lab__double"], hooks=[])
        samples.append((time.perf_counter() - started) * 1000)
        rienda.close()
    return samples


def interrupt_and_close(root: Path, lab_dir: Path, count: int) -> tuple[list[float], list[float], list[float]]:
    stops, idle, busy = [], [], []
    for _ in range(count):
        rienda = setup(Path(tempfile.mkdtemp(dir=root)), lab_dir)
        run = RunContext(rienda.workdir, NonInteractiveUI(record_events=False))
        rienda.catalog(tools=["mcp__lab__double"], hooks=[])
        started = time.perf_counter()
        rienda.close()
        idle.append((time.perf_counter() - started) * 1000)
        catalog = rienda.catalog(tools=["mcp__lab__slow", "mcp__lab__stubborn"], hooks=[])  # started again
        for name in ("mcp__lab__slow", "mcp__lab__stubborn"):
            cancel, done = CancelToken(), {}
            started_file = lab_dir / "started"
            started_file.unlink(missing_ok=True)

            def call() -> None:
                try:
                    invoke_tool(catalog.tools[name], {"seconds": 60}, run, rienda.sandbox, cancel)
                except Interrupted:
                    done["at"] = time.perf_counter()

            worker = threading.Thread(target=call, daemon=True)
            worker.start()
            deadline = time.monotonic() + 30
            while not started_file.exists():
                if time.monotonic() > deadline:
                    raise SystemExit(f"bench_mcp: {name} never started")
                time.sleep(0.005)
            cancelled = time.perf_counter()
            cancel.cancel()
            worker.join(10)
            if "at" not in done:
                raise SystemExit(f"bench_mcp: cancelling {name} did not interrupt it")
            if name == "mcp__lab__slow":
                stops.append((done["at"] - cancelled) * 1000)
        started = time.perf_counter()
        rienda.close()  # stubborn still sleeps in its tool: the server is busy
        busy.append((time.perf_counter() - started) * 1000)
    return stops, idle, busy


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    quick = parser.parse_args().quick
    rounds, count = (50, 2) if quick else (300, 5)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (other work on the machine widens every row)")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        lab_dir = root / "lab"
        lab_dir.mkdir()
        rienda = setup(root, lab_dir)
        try:
            hook = rienda.catalog(tools=[], hooks=["nothing"]).hooks["nothing"]
            plain, hooked = Path_(rienda, []), Path_(rienda, [hook])
            rows: dict[str, list[float]] = {"sdk": [], "none": [], "hook": [], "alone": []}
            for index in range(rounds + 10):  # the four in turn, call by call: a noisy neighbour hits each alike
                samples = (sdk_call(rienda), plain(), hooked(), hooked(call_tool=False))
                if index >= 10:  # the first calls warm jsonschema, the V8 worker, the server
                    for key, sample in zip(rows, samples):
                        rows[key].append(sample)
        finally:
            rienda.close()
        print(summary("1. the SDK alone (baseline)", rows["sdk"]))
        print(summary("2. Rienda, no hooks", rows["none"]))
        print(summary("3. Rienda, one beforeToolExecute hook", rows["hook"]))
        print(summary("4. that hook alone (no tool call)", rows["alone"]))
        added = [n - b for n, b in zip(rows["none"], rows["sdk"])]  # paired: each call with the baseline beside it
        hooked_added = [h - a - b for h, a, b in zip(rows["hook"], rows["alone"], rows["sdk"])]
        print(summary("Rienda adds, no hooks (2 - 1, call by call)", added))
        print(summary("Rienda adds beyond the hook's own cost (3 - 4 - 1)", hooked_added))
        print("target: Rienda adds at most 1 ms (medians)")
        print(summary("server start: spawn to tools listed", starts(root, lab_dir, count)))
        stops, idle, busy = interrupt_and_close(root, lab_dir, count)
        print(summary("interrupt during a slow call: cancel to return", stops))
        print(summary("Rienda.close(), the server idle", idle))
        print(summary("Rienda.close(), the server busy in a call", busy))
    return 0


if __name__ == "__main__":
    sys.exit(main())
