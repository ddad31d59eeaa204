"""What one ``rienda gate`` decision costs, through the command an agent runs.

An agent starts its hook command once per tool call (through a shell) and waits for it, so
the figure that matters is the wall time of one whole process: start, read the event on a
pipe, decide, answer, exit. The command measured is the one ``rienda gate install
claude-code`` writes into Claude Code's settings (read back from the file), run through
``sh -c`` as the agent runs it. Measured per round, interleaved so that all rows share the
machine's load:

- the installed entry with the home's gate server running (warm: every call but the first);
- the installed entry with no server to ask (the first call: it decides itself, cold; its
  socket folder is made unusable so that it starts none);
- ``rienda gate claude-code`` (the full command, cold), and the same with an agent that
  declares no hook (no V8 worker: the floor of the full command);
- ``python -c pass`` and ``node -e`` doing the same work by hand (read stdin, parse, test
  the regex, print the deny), through ``sh -c`` too.

The event is Claude Code's (``tests/gate/samples``), its command made ``rm -rf build``; the
deciding agent's one hook refuses ``rm -rf`` with a regex. Prints p50 and p95 per row, the
ratios to the baselines and issue 38's targets: warm p95 at most twice ``python -c pass``'s,
the first call at most 1 s.

    python bench/bench_gate.py [--quick] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
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
    """The ``rienda`` script beside this Python, else ``-m``."""
    script = Path(sys.executable).parent / "rienda"
    return [str(script)] if script.exists() else [sys.executable, "-m", "rienda_kernel.cli"]


def installed_entry(home: Path, user: Path) -> str:
    """The PreToolUse command ``rienda gate install claude-code`` writes for ``home``."""
    env = {**ENV, "HOME": str(user)}
    env.pop("CLAUDE_CONFIG_DIR", None)
    done = subprocess.run([*rienda_command(), "--home", str(home), "gate", "install", "claude-code"], env=env,
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"rienda gate install failed: {done.stderr}")
    settings = json.loads((user / ".claude" / "settings.json").read_text())
    return settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]


def timed(command: str, event: bytes, cwd: Path, expect: bytes | None, env: dict[str, str]) -> float:
    """Seconds from start to exit of ``sh -c command`` fed ``event``; its stdout must hold ``expect``."""
    started = time.perf_counter()
    done = subprocess.run(["sh", "-c", command], input=event, capture_output=True, env=env, cwd=cwd, timeout=120)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or (expect is not None and expect not in done.stdout):
        raise SystemExit(f"{command}: exit {done.returncode}, stdout {done.stdout[:300]!r}, stderr {done.stderr[-300:]!r}")
    return elapsed


def p(figures: list[float], q: float) -> float:
    ordered = sorted(figures)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


DENY = b'"permissionDecision": "deny"'


def measure(entry: str, home: Path, data: bytes, folder: Path, runs: int, cold_tmp: Path) -> dict[str, list[float]]:
    """Each row's wall times over ``runs`` interleaved rounds, after one warm-up round."""
    full = shlex.join([*rienda_command(), "--home", str(home), "gate", "claude-code"])
    cold_env = {**ENV, "TMPDIR": str(cold_tmp)}
    rows: dict[str, tuple[str, bytes | None, dict[str, str]]] = {
        "installed entry, warm": (entry, DENY, ENV),
        "installed entry, first call": (entry, DENY, cold_env),
        "rienda gate (full command, cold)": (full, DENY, ENV),
        "rienda gate (cold, no hook)": (full + " --agent bare", b"{}", ENV),
        "python -c pass": (shlex.join([sys.executable, "-c", "pass"]), None, ENV),
    }
    if shutil.which("node"):
        rows["node -e (same regex)"] = (shlex.join(["node", "-e", NODE]), b'"permissionDecision":"deny"', ENV)
    for command, expect, env in rows.values():  # warm-up: compiled modules cached, files in the page cache
        timed(command, data, folder, expect, env)
    figures: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(runs):
        for name, (command, expect, env) in rows.items():
            figures[name].append(timed(command, data, folder, expect, env))
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
        home = make_home(Path(folder)).resolve()
        (Path(folder) / "user").mkdir()
        entry = installed_entry(home, Path(folder) / "user")
        cold_tmp = Path(folder) / "cold"
        (cold_tmp / f"rienda-gate-{os.getuid()}").mkdir(parents=True, mode=0o777)
        (cold_tmp / f"rienda-gate-{os.getuid()}").chmod(0o777)  # not this user's own: never used, no server started
        server = subprocess.Popen([*rienda_command(), "--home", str(home), "gate-server", "--idle", "300"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
        try:
            wait_for(gate_socket(home), server)
            figures = measure(entry, home, data, Path(folder), runs, cold_tmp)
        finally:
            server.terminate()
            server.wait(timeout=60)
    load = os.getloadavg()[0]
    print(f"one decision through the command an agent runs ({entry.split()[0]} ...), {runs} rounds interleaved, "
          f"load average {load:.1f}, {os.cpu_count()} cores")
    for name, values in figures.items():
        print(f"  {name:34} p50 {p(values, 0.5):7.1f} ms   p95 {p(values, 0.95):7.1f} ms   "
              f"mean {statistics.mean(values) * 1000:7.1f} ms")
    for row in ("installed entry, warm", "installed entry, first call", "rienda gate (full command, cold)"):
        for base in ("python -c pass", "node -e (same regex)"):
            if base in figures:
                print(f"  {row} / {base}: p50 x{p(figures[row], 0.5) / p(figures[base], 0.5):.1f}, "
                      f"p95 x{p(figures[row], 0.95) / p(figures[base], 0.95):.1f}")
    warm, floor, first = (p(figures["installed entry, warm"], 0.95), p(figures["python -c pass"], 0.95),
                          p(figures["installed entry, first call"], 0.95))
    print(f"  target: warm p95 at most 2 x python -c pass's p95: {warm:.1f} ms against {2 * floor:.1f} ms: "
          f"{'met' if warm <= 2 * floor else 'MISSED'}")
    print(f"  target: the first call at most 1 s: p95 {first:.0f} ms: {'met' if first <= 1000 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
