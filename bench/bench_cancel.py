"""How long a stop takes: from ``CancelToken.cancel()`` (or a command's timeout) to the
call returning. The tests assert that these stops happen; this measures how soon.

    python bench/bench_cancel.py            # 20 rounds each (about 15 s)
    python bench/bench_cancel.py --quick    # 3 rounds each

Rows, each the time from the stop to the interrupted call having returned (median, p95, max):

1. the floor: another thread waiting on the token wakes up (``CancelToken.wait``);
2. ``fetch`` during a response the server holds back (a real server on 127.0.0.1);
3. ``run_command`` of ``sleep 100 & wait`` (the process group is killed);
4. ``run_command`` that ignores SIGTERM, from its ``timeout_ms`` passing to its return
   (SIGTERM, the grace period, then SIGKILL);
5. a JavaScript tool in a busy loop (``invoke_tool``: the isolate is terminated).

Standard library plus Rienda. Exits 1 only if a stop does not interrupt the call.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from rienda_kernel.engine import CancelToken, ExtensionLoader, Interrupted, NonInteractiveUI, Sandbox
from rienda_kernel.engine.ctx.host import RunContext
from rienda_kernel.engine.tools.invoke import invoke_tool
from rienda_kernel.engine.ctx.http import fetch
from rienda_kernel.engine.ctx.processes import run_command

BUSY_TOOL = ('module.exports = { description: "Spins.", parameters: { type: "object" },'
             ' execute(ctx) { ctx.log("ready"); while (true) {} } };')


def stop_ms(start: Callable[[CancelToken, threading.Event], None]) -> float:
    """Run ``start(token, ready)`` on a thread; once it sets ``ready``, cancel and time
    how long until it returns. ``start`` must raise Interrupted."""
    token, ready, outcome = CancelToken(), threading.Event(), {}

    def target() -> None:
        try:
            start(token, ready)
        except Interrupted:
            outcome["interrupted"] = True
        outcome["at"] = time.perf_counter()

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    if not ready.wait(30):
        raise SystemExit("bench_cancel: the call never got going")
    cancelled = time.perf_counter()
    token.cancel()
    worker.join(30)
    if not outcome.get("interrupted"):
        raise SystemExit("bench_cancel: the stop did not interrupt the call")
    return (outcome["at"] - cancelled) * 1000


def floor(token: CancelToken, ready: threading.Event) -> None:
    ready.set()
    token.wait()
    raise Interrupted("stopped")


class HeldBack(BaseHTTPRequestHandler):
    """Answers nothing until the server is closed."""

    entered: threading.Event
    closing = threading.Event()

    def do_GET(self) -> None:
        type(self).entered.set()
        self.closing.wait()

    def log_message(self, *args) -> None:
        pass


def fetch_stop(url: str) -> Callable[[CancelToken, threading.Event], None]:
    def start(token: CancelToken, ready: threading.Event) -> None:
        HeldBack.entered = ready
        fetch(url, cancel=token)
    return start


def command_stop(workdir: Path) -> Callable[[CancelToken, threading.Event], None]:
    def start(token: CancelToken, ready: threading.Event) -> None:
        run_command("sleep 100 & echo started; wait", cwd=workdir, cancel=token,
                    on_output=lambda stream, text: ready.set())
    return start


def escalation_ms(workdir: Path, timeout_ms: int = 100) -> float:
    """From the timeout passing to run_command returning, for a command ignoring SIGTERM."""
    started = time.perf_counter()
    result = run_command("trap '' TERM; sleep 30", cwd=workdir, timeout_ms=timeout_ms)
    if result.code != 137:
        raise SystemExit(f"bench_cancel: expected SIGKILL (137), got {result.code}")
    return (time.perf_counter() - started) * 1000 - timeout_ms


def tool_stop(workdir: Path, sandbox: Sandbox) -> Callable[[CancelToken, threading.Event], None]:
    home = workdir / "home"
    (home / "tools" / "spin").mkdir(parents=True, exist_ok=True)
    (home / "tools" / "spin" / "index.js").write_text(BUSY_TOOL)
    tool = ExtensionLoader(sandbox).discover(home).tools["spin"]

    def start(token: CancelToken, ready: threading.Event) -> None:
        ui = NonInteractiveUI(sink=lambda event: ready.set(), record_events=False)
        run = RunContext(workdir=workdir, ui=ui, session={"id": None}, agent={"id": None}, config={})
        invoke_tool(tool, {}, run, sandbox, token)
    return start


def row(name: str, figures: list[float]) -> str:
    ordered = sorted(figures)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"{name:<46} {statistics.median(ordered):>9.2f} {p95:>9.2f} {ordered[-1]:>9.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds each instead of 20")
    rounds = 3 if parser.parse_args().quick else 20
    server = ThreadingHTTPServer(("127.0.0.1", 0), HeldBack)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/held"
    sandbox = Sandbox()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        rows = [
            ("floor: a waiting thread wakes on the token", lambda: stop_ms(floor)),
            ("fetch, response held back by the server", lambda: stop_ms(fetch_stop(url))),
            ("run_command, sleep 100 & wait", lambda: stop_ms(command_stop(workdir))),
            ("run_command ignoring SIGTERM, after timeout", lambda: escalation_ms(workdir)),
            ("JS tool in a busy loop (isolate terminated)", lambda: stop_ms(tool_stop(workdir, sandbox))),
        ]
        print(f"{'stop (ms from the stop to the return)':<46} {'median':>9} {'p95':>9} {'max':>9}")
        for name, measure in rows:
            print(row(name, [measure() for _ in range(rounds)]), flush=True)
    HeldBack.closing.set()
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
