"""The Rienda kernel's live paths, measured from a jupyter_client front end.

Prints, in one run:
- latency from ``ctx.log`` in a running tool to the ``stream`` message at the client
  (target p95 <= 20 ms), against a plain python3 ipykernel cell that prints (baseline);
- latency from sending the Allow click (a ``comm_msg``) to the tool resuming after
  ``ctx.confirm`` (target <= 50 ms), against an empty cell's execute round trip.

Timestamps: the JS side stamps with ``Date.now()`` (milliseconds), the client with
``time.time()``; same machine, same clock, so figures are good to about 1 ms.

    python bench/bench_kernel.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import queue
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml
from jupyter_client.manager import KernelManager

from rienda_kernel.install import install

LOGGER = """module.exports = { description: "Logs timestamps.", parameters: { type: "object" },
  execute(ctx) {
    for (let i = 0; i < N; i++) {
      ctx.log("t=" + Date.now());
      const until = Date.now() + 5; while (Date.now() < until) {}
    }
    return "logged";
  } };"""

ASKER = """module.exports = { description: "Asks.", parameters: { type: "object" },
  execute(ctx) { ctx.confirm({ title: "Go?", body: "bench" }); ctx.log("resumed=" + Date.now()); return "ok"; } };"""


def start(kernel: str, cwd: Path, env: dict[str, str]):
    km = KernelManager(kernel_name=kernel)
    km.start_kernel(cwd=str(cwd), env={**os.environ, **env})
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc


def messages_until_idle(kc, msg_id: str, on_message=None, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        received = time.time()
        if on_message is not None:
            on_message(msg, received)
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
                and msg["content"]["execution_state"] == "idle"):
            return
    raise RuntimeError("the kernel did not go idle")


def stamped_latencies(kc, code: str, prefix: str) -> list[float]:
    latencies: list[float] = []

    def on_message(msg, received):
        if msg["msg_type"] == "stream":
            for line in msg["content"]["text"].splitlines():
                if prefix in line:
                    latencies.append(received * 1000 - float(line.split(prefix, 1)[1]))

    messages_until_idle(kc, kc.execute(code), on_message)
    return latencies


def click_latencies(kc, cells: int) -> list[float]:
    control = kc.session.msg("comm_open", {"comm_id": "control", "target_name": "jupyter.widget.control",
                                           "data": {}}, metadata={"version": "1.0.0"})
    kc.shell_channel.send(control)
    figures = []
    for _ in range(cells):
        msg_id = kc.execute("ask", allow_stdin=True)
        sent_at = None
        resumed = None
        while resumed is None:
            msg = kc.get_iopub_msg(timeout=60)
            state = msg["content"].get("data", {}).get("state", {}) if msg["msg_type"] == "comm_open" else {}
            if state.get("_model_name") == "ButtonModel" and state.get("description") == "Allow":
                click = kc.session.msg("comm_msg", {"comm_id": msg["content"]["comm_id"],
                                                    "data": {"method": "custom", "content": {"event": "click"}}})
                sent_at = time.time() * 1000
                kc.shell_channel.send(click)
            if msg["msg_type"] == "stream" and "resumed=" in msg["content"]["text"]:
                resumed = float(msg["content"]["text"].split("resumed=", 1)[1].split()[0])
        messages_until_idle(kc, msg_id)
        figures.append(resumed - sent_at)
    return figures


def round_trips(kc, count: int) -> list[float]:
    figures = []
    for _ in range(count):
        started = time.perf_counter()
        msg_id = kc.execute("")
        while kc.get_shell_msg(timeout=30)["parent_header"].get("msg_id") != msg_id:
            pass
        figures.append((time.perf_counter() - started) * 1000)
    return figures


def summary(figures: list[float]) -> tuple[float, float]:
    ordered = sorted(figures)
    return statistics.median(figures), ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    logs, cells = (60, 5) if args.quick else (300, 25)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        install(prefix=str(root / "prefix"))
        home, work = root / "home", root / "work"
        for name, source in (("logger", LOGGER.replace("N;", f"{logs};")), ("asker", ASKER)):
            (home / "tools" / name).mkdir(parents=True)
            (home / "tools" / name / "index.js").write_text(source)
        (home / "agents").mkdir()
        (home / "agents" / "default.md").write_text("---\nmodel: scripted/script.yaml\ntools: [logger, asker]\n---\nGo.\n")
        work.mkdir()
        script = [{"text": "", "tool_calls": [{"name": "logger", "arguments": {}}]}, {"text": "done"}]
        for _ in range(cells):
            script += [{"text": "", "tool_calls": [{"name": "asker", "arguments": {}}]}, {"text": "done"}]
        (work / "script.yaml").write_text(yaml.safe_dump(script))
        env = {"JUPYTER_PATH": str(root / "prefix" / "share" / "jupyter"), "RIENDA_HOME": str(home)}
        os.environ["JUPYTER_PATH"] = env["JUPYTER_PATH"]

        km, kc = start("rienda", work, env)
        try:
            log_figures = stamped_latencies(kc, "log", "t=")
            click_figures = click_latencies(kc, cells)
            trip_figures = round_trips(kc, cells * 4)
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)

        km, kc = start("python3", work, {})
        try:
            code = (f"import time\nfor i in range({logs}):\n    print(f't={{time.time() * 1000}}', flush=True)\n"
                    "    time.sleep(0.005)\n")
            baseline = stamped_latencies(kc, code, "t=")
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)

    log_median, log_p95 = summary(log_figures)
    base_median, base_p95 = summary(baseline)
    click_median, click_p95 = summary(click_figures)
    trip_median, trip_p95 = summary(trip_figures)
    print(f"Rienda kernel live paths ({'quick' if args.quick else 'full'}; nproc {os.cpu_count()})")
    print(f"  ctx.log -> iopub stream at the client   median {log_median:6.2f} ms  p95 {log_p95:6.2f} ms  (n={len(log_figures)})")
    print(f"  python3 kernel print -> client (base)   median {base_median:6.2f} ms  p95 {base_p95:6.2f} ms  (n={len(baseline)})")
    print(f"  target p95 <= 20 ms: {'PASS' if log_p95 <= 20 else 'MISS'}; "
          f"{log_p95 / max(base_p95, 0.01):.1f}x the baseline p95")
    print(f"  click comm_msg -> tool resumed          median {click_median:6.2f} ms  p95 {click_p95:6.2f} ms  (n={len(click_figures)})")
    print(f"  empty cell execute round trip (base)    median {trip_median:6.2f} ms  p95 {trip_p95:6.2f} ms  (n={len(trip_figures)})")
    print(f"  target <= 50 ms: {'PASS' if click_p95 <= 50 else 'MISS'} (p95); "
          f"{click_median / max(trip_median, 0.01):.1f}x an empty round trip")
    return 0


if __name__ == "__main__":
    sys.exit(main())
