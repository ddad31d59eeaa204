"""The notebook front ends' live paths, measured from a jupyter_client front end.

Prints, in one run:
- latency from ``ctx.log`` in a running tool to the client: the first lines as ``stream``
  messages (target p95 <= 20 ms), against a plain python3 ipykernel cell that prints
  (baseline), and the rest of a flood in the folded display (updated at most every 50 ms);
- a confirm as a person meets it, in the Rienda kernel and in a python3 kernel after
  ``%load_ext rienda_kernel``, with a client that reports widget views as JupyterLab and
  VS Code do: execute request -> buttons displayed (the first confirm of a fresh kernel,
  then later ones), and click -> cell done (idle); and the click's ``comm_msg`` -> tool
  resumed after ``ctx.confirm`` (target <= 50 ms); against an empty cell's execute round
  trip;
- ``%load_ext rienda_kernel`` in a fresh python3 kernel (target well under 1 s), against
  an empty cell there.

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

from rienda_kernel.jupyter.install import install

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

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def start(kernel: str, cwd: Path, env: dict[str, str]):
    km = KernelManager(kernel_name=kernel)
    km.start_kernel(cwd=str(cwd), env={**os.environ, **env})
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc


def stop(km, kc) -> None:
    kc.stop_channels()
    km.shutdown_kernel(now=True)


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


def stamped_latencies(kc, code: str, prefix: str, allow_stdin: bool = False) -> tuple[list[float], list[float]]:
    """Latencies of stamped lines as the client first sees them: in ``stream`` messages,
    and in the display a flood of log lines folds into (updated in place)."""
    streamed: list[float] = []
    folded: list[float] = []
    seen: set[str] = set()

    def on_message(msg, received):
        if msg["msg_type"] == "stream":
            lines, into = msg["content"]["text"].splitlines(), streamed
        elif msg["msg_type"] in ("display_data", "update_display_data") and "-log-" in str(msg["content"]):
            lines, into = msg["content"]["data"]["text/plain"].splitlines(), folded
        else:
            return
        for line in lines:
            if prefix in line and line not in seen:
                seen.add(line)
                into.append(received * 1000 - float(line.split(prefix, 1)[1]))

    messages_until_idle(kc, kc.execute(code, allow_stdin=allow_stdin), on_message)
    return streamed, folded


def confirm_timings(kc, code: str) -> tuple[float, float, float]:
    """One confirm answered like a person with a widget front end: (execute -> buttons,
    click comm_msg -> tool resumed, click -> cell idle), in ms. The client reports the
    view as ipywidgets' WidgetView does (``_view_count``), then clicks Allow."""
    sent = time.time() * 1000
    msg_id = kc.execute(code, allow_stdin=True)
    models: dict[str, dict] = {}
    shown = clicked = resumed = None
    while True:
        msg = kc.get_iopub_msg(timeout=120)
        kind, content = msg["msg_type"], msg["content"]
        if kind == "comm_open":
            models[content["comm_id"]] = content["data"].get("state", {})
        elif kind == "display_data" and WIDGET_VIEW in content["data"] and shown is None:
            shown = time.time() * 1000
            box = content["data"][WIDGET_VIEW]["model_id"]
            kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": box, "data": {
                "method": "update", "state": {"_view_count": 1}, "buffer_paths": []}}))
            allow = next(comm for comm, state in models.items()
                         if state.get("_model_name") == "ButtonModel" and state.get("description") == "Allow")
            clicked = time.time() * 1000
            kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": allow, "data": {
                "method": "custom", "content": {"event": "click"}}}))
        elif kind == "stream" and "resumed=" in content["text"]:
            resumed = float(content["text"].split("resumed=", 1)[1].split()[0])
        elif (msg["parent_header"].get("msg_id") == msg_id and kind == "status"
              and content["execution_state"] == "idle"):
            return shown - sent, resumed - clicked, time.time() * 1000 - clicked


def round_trips(kc, count: int, code: str = "") -> list[float]:
    figures = []
    for _ in range(count):
        started = time.perf_counter()
        msg_id = kc.execute(code)
        while kc.get_shell_msg(timeout=60)["parent_header"].get("msg_id") != msg_id:
            pass
        figures.append((time.perf_counter() - started) * 1000)
    return figures


def summary(figures: list[float]) -> tuple[float, float]:
    ordered = sorted(figures)
    return statistics.median(figures), ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def line(label: str, figures: list[float]) -> str:
    median, p95 = summary(figures)
    return f"  {label:<46} median {median:8.2f} ms  p95 {p95:8.2f} ms  (n={len(figures)})"


PREWARMED = "[t.join() for t in __import__('threading').enumerate() if t.name == 'rienda-prewarm']"


def confirm_rows(kernel: str, work: Path, env: dict[str, str], cells: int, setup: list[str], code: str) -> dict:
    """Fresh kernels: the first confirm of each (cold, right after ``setup``) and ``cells``
    more in the last one."""
    cold, warm, resume, done = [], [], [], []
    for fresh in range(2):
        km, kc = start(kernel, work, env)
        try:
            for cell in setup:
                round_trips(kc, 1, cell)
            timings = [confirm_timings(kc, code) for _ in range(1 + (cells if fresh else 0))]
        finally:
            stop(km, kc)
        cold.append(timings[0][0])
        warm += [t[0] for t in timings[1:]]
        resume += [t[1] for t in timings]
        done += [t[2] for t in timings]
    return {"cold": cold, "warm": warm, "resume": resume, "done": done}


def load_ext_times(work: Path, env: dict[str, str], count: int) -> tuple[list[float], list[float]]:
    loads, empties = [], []
    for _ in range(count):
        km, kc = start("python3", work, env)
        try:
            empties += round_trips(kc, 1)
            loads += round_trips(kc, 1, "%load_ext rienda_kernel")
        finally:
            stop(km, kc)
    return loads, empties


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    logs, cells, loads = (60, 3, 2) if args.quick else (300, 15, 5)
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
        script = [{"text": "", "tool_calls": [{"name": "asker", "arguments": {}}]}, {"text": "done"}] * (cells + 2)
        (work / "script.yaml").write_text(yaml.safe_dump(script))
        (work / "logs.yaml").write_text(yaml.safe_dump([{"text": "", "tool_calls": [{"name": "logger",
                                                                                     "arguments": {}}]}, {"text": "done"}] * 2))
        env = {"JUPYTER_PATH": str(root / "prefix" / "share" / "jupyter"), "RIENDA_HOME": str(home),
               "IPYTHONDIR": str(root / "ipython")}
        os.environ["JUPYTER_PATH"] = env["JUPYTER_PATH"]

        km, kc = start("rienda", work, env)
        try:
            round_trips(kc, 1, "%rienda model scripted/logs.yaml")
            stamped_latencies(kc, "log", "t=", allow_stdin=True)  # warm-up: the kernel's first turn and imports
            log_figures, folded_figures = stamped_latencies(kc, "log", "t=", allow_stdin=True)
            trip_figures = round_trips(kc, cells * 4)
        finally:
            stop(km, kc)
        rienda = confirm_rows("rienda", work, env, cells, [], "ask")
        python = confirm_rows("python3", work, env, cells, ["%load_ext rienda_kernel"], "%rienda ask go")
        prewarmed = confirm_rows("python3", work, env, 0, ["%load_ext rienda_kernel", PREWARMED], "%rienda ask go")
        load_figures, empty_python = load_ext_times(work, env, loads)

        km, kc = start("python3", work, {})
        try:
            code = (f"import time\nfor i in range({logs}):\n    print(f't={{time.time() * 1000}}', flush=True)\n"
                    "    time.sleep(0.005)\n")
            baseline, _ = stamped_latencies(kc, code, "t=")
        finally:
            stop(km, kc)

    log_p95, base_p95 = summary(log_figures)[1], summary(baseline)[1]
    click_p95 = summary(rienda["resume"])[1]
    load_median = summary(load_figures)[0]
    print(f"Notebook front ends' live paths ({'quick' if args.quick else 'full'}; nproc {os.cpu_count()}, "
          f"load {os.getloadavg()[0]:.1f})")
    print(line("ctx.log -> iopub stream (first 12 lines)", log_figures))
    print(line("ctx.log -> folded log display (the rest)", folded_figures))
    print(line("python3 kernel print -> client (baseline)", baseline))
    print(f"  target p95 <= 20 ms: {'PASS' if log_p95 <= 20 else 'MISS'}; {log_p95 / max(base_p95, 0.01):.1f}x the baseline p95")
    for label, rows in (("Rienda kernel", rienda), ("python3 + %load_ext", python)):
        print(f"  {label}: a confirm with a widget front end")
        print(line("  run -> buttons, first confirm of a kernel", rows["cold"]))
        if rows is python:
            print(line("  ... once %load_ext's background imports ended", prewarmed["cold"]))
        print(line("  run -> buttons, later confirms", rows["warm"]))
        print(line("  click comm_msg -> tool resumed", rows["resume"]))
        print(line("  click -> cell done", rows["done"]))
    print(line("empty cell execute round trip (baseline)", trip_figures))
    print(f"  target click -> resumed <= 50 ms: {'PASS' if click_p95 <= 50 else 'MISS'} (p95, Rienda kernel)")
    print(line("%load_ext rienda_kernel in a fresh python3 kernel", load_figures))
    print(line("empty cell in a fresh python3 kernel (baseline)", empty_python))
    print(f"  target %load_ext < 1000 ms: {'PASS' if load_median < 1000 else 'MISS'} (median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
