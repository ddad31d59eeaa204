"""What one ``rienda gate`` decision costs, through the command an agent runs.

An agent starts its hook command once per tool call and waits for it, so the figure that
matters is the wall time of one whole process: start, read the event on a pipe, decide,
answer, exit. Measured per round, interleaved so that all rows share the machine's load:

- ``rienda gate claude-code`` on Claude Code's event (``tests/gate/samples``, its command
  made ``rm -rf build``), the deciding agent's one hook refusing ``rm -rf`` with a regex;
- the same with an agent that declares no hook (no V8 worker started: the floor of the
  command itself);
- ``python -c pass`` (the floor of any Python hook command);
- ``node -e`` doing the same work by hand (read stdin, parse, test the regex, print the deny).

Prints p50 and p95 per row and the gate's ratios to the baselines.

    python bench/bench_gate.py [--quick] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "gate" / "samples" / "claude-pretooluse.json"
HOOK = """module.exports = { beforeToolExecute(ctx, call) {
  if (call.name === "shell" && /\\brm\\s+-rf\\b/.test(call.arguments.command)) return { allow: false, reason: "no rm -rf" };
} };"""
NODE = r"""let data = ""; process.stdin.on("data", (c) => data += c); process.stdin.on("end", () => {
  const e = JSON.parse(data); const c = (e.tool_input || {}).command || "";
  if (e.tool_name === "Bash" && /\brm\s+-rf\b/.test(c)) process.stdout.write(JSON.stringify({hookSpecificOutput: {
    hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "no rm -rf"}}) + "\n");
});"""
# As on a user's machine: compiled modules cached (this workplace sets PYTHONDONTWRITEBYTECODE).
ENV = {name: value for name, value in os.environ.items() if name not in ("PYTHONDONTWRITEBYTECODE", "RIENDA_HOME")}


def make_home(directory: Path) -> Path:
    """A home with agent ``gate`` (the rm -rf hook) and agent ``bare`` (no hook)."""
    home = directory / "home"
    (home / "hooks" / "no-rm").mkdir(parents=True)
    (home / "hooks" / "no-rm" / "index.js").write_text(HOOK)
    (home / "agents").mkdir()
    (home / "agents" / "gate.md").write_text("---\nmodel: openai/unused\nhooks: [no-rm]\n---\nPolicy.\n")
    (home / "agents" / "bare.md").write_text("---\nmodel: openai/unused\nhooks: []\n---\nNo policy.\n")
    return home


def rienda_command() -> list[str]:
    """The ``rienda`` script beside this Python (what an agent's hook entry runs), else ``-m``."""
    script = Path(sys.executable).parent / "rienda"
    return [str(script)] if script.exists() else [sys.executable, "-m", "rienda_kernel.cli"]


def timed(command: list[str], event: bytes, cwd: Path, expect: bytes | None) -> float:
    """Seconds from start to exit of ``command`` fed ``event``; its stdout must hold ``expect``."""
    started = time.perf_counter()
    done = subprocess.run(command, input=event, capture_output=True, env=ENV, cwd=cwd, timeout=120)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or (expect is not None and expect not in done.stdout):
        raise SystemExit(f"{command}: exit {done.returncode}, stdout {done.stdout[:300]!r}, stderr {done.stderr[-300:]!r}")
    return elapsed


def p(figures: list[float], q: float) -> float:
    ordered = sorted(figures)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


def measure(gate: list[str], data: bytes, folder: Path, runs: int) -> dict[str, list[float]]:
    """Each row's wall times over ``runs`` interleaved rounds, after one warm-up round."""
    script = Path(sys.executable).parent / "rienda-gate"
    lean = [str(script)] if script.exists() else [sys.executable, "-m", "rienda_kernel.engine.gate.client"]
    rows: dict[str, tuple[list[str], bytes | None]] = {
        "rienda gate (one JS hook)": (gate, b'"permissionDecision": "deny"'),
        "rienda gate --warm": ([*gate, "--warm", "300"], b'"permissionDecision": "deny"'),
        "rienda-gate (warm)": ([*lean, "claude-code", "--home", gate[gate.index("--home") + 1], "--idle", "300"],
                               b'"permissionDecision": "deny"'),
        "rienda gate (no hook)": ([*gate, "--agent", "bare"], b"{}"),
        "python -c pass": ([sys.executable, "-c", "pass"], None),
    }
    if shutil.which("node"):
        rows["node -e (same regex)"] = (["node", "-e", NODE], b'"permissionDecision":"deny"')
    for command, expect in rows.values():  # warm-up: compiled modules cached, files in the page cache
        timed(command, data, folder, expect)
    figures: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(runs):
        for name, (command, expect) in rows.items():
            figures[name].append(timed(command, data, folder, expect))
    return figures


def wait_for(path: Path, process: subprocess.Popen) -> None:
    """Until the server listens at ``path`` (SystemExit if it ended, or after 60 s)."""
    deadline = time.monotonic() + 60
    while not path.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the gate server did not start")
        time.sleep(0.05)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="5 rounds (CI smoke run)")
    parser.add_argument("--runs", type=int, default=30, help="rounds (default 30)")
    args = parser.parse_args()
    runs = 5 if args.quick else args.runs
    event = json.loads(SAMPLE.read_text())
    event["tool_input"]["command"] = "rm -rf build"
    data = json.dumps(event).encode()
    sys.path.insert(0, str(ROOT))
    from rienda_kernel.engine.gate.server import gate_socket

    with tempfile.TemporaryDirectory() as folder:
        home = make_home(Path(folder))
        gate = [*rienda_command(), "--home", str(home), "gate", "claude-code"]
        server = subprocess.Popen([*rienda_command(), "--home", str(home), "gate-server", "--idle", "300"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
        try:
            wait_for(gate_socket(home.resolve()), server)
            figures = measure(gate, data, Path(folder), runs)
        finally:
            server.terminate()
            server.wait(timeout=60)
    load = os.getloadavg()[0]
    print(f"one decision through the command, {runs} rounds interleaved, load average {load:.1f}, {os.cpu_count()} cores")
    for name, values in figures.items():
        print(f"  {name:28} p50 {p(values, 0.5):7.1f} ms   p95 {p(values, 0.95):7.1f} ms   "
              f"mean {statistics.mean(values) * 1000:7.1f} ms")
    for gate_row in ("rienda gate (one JS hook)", "rienda gate --warm", "rienda-gate (warm)"):
        for base in ("python -c pass", "node -e (same regex)"):
            if base in figures:
                print(f"  {gate_row} / {base}: p50 x{p(figures[gate_row], 0.5) / p(figures[base], 0.5):.1f}, "
                      f"p95 x{p(figures[gate_row], 0.95) / p(figures[base], 0.95):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
