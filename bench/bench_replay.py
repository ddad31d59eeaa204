"""Replay throughput: a folder of recorded sessions replayed through hooks.

Records N sessions (200; 24 with --quick) through the real loop with the scripted model, an
agent declaring the documentation's guard, https, upper and redact hooks, three tool calls
per session over two turns; then replays the folder and prints sessions per minute and
hook invocations per second for:
- ``replay_file`` in a loop in this process (the floor: no pytest, no process start);
- ``pytest --rienda-replay DIR`` in one process;
- ``pytest --rienda-replay DIR -n 2`` (pytest-xdist, two worker processes);
and, for both pytest runs, the same command on an empty folder (start-up alone).

    python bench/bench_replay.py [--quick]

Exits 1 if a replay differs from its recording (every session must pass).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from rienda_kernel.engine import NonInteractiveUI
from rienda_kernel.engine.testing.replay import replay_file
from rienda_kernel.engine.runtime.rienda import Rienda

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "home"
HOOKS = ("guard", "https", "upper", "redact")
ECHO = """module.exports = { description: "Echoes.", parameters: { type: "object" },
  execute: (ctx, a) => "got " + JSON.stringify(a) };"""


def make_home(root: Path) -> Rienda:
    home, work = root / "home", root / "work"
    for name in HOOKS:
        shutil.copytree(EXAMPLES / "hooks" / name, home / "hooks" / name)
    (home / "tools" / "echo").mkdir(parents=True)
    (home / "tools" / "echo" / "index.js").write_text(ECHO)
    (home / "agents").mkdir()
    (home / "agents" / "bench.md").write_text(
        f"---\nmodel: scripted/script.yaml\ntools: [echo, shell, http]\nhooks: {list(HOOKS)}\n---\nBench.\n")
    work.mkdir()
    return Rienda(home=home, workdir=work)


def script(index: int) -> list[dict]:
    return [
        {"text": f"Step {index}: card 4111111111111111.", "tool_calls": [
            {"name": "echo", "arguments": {"url": f"http://example.org/{index}"}},
            {"name": "echo", "arguments": {"command": f"ls build-{index}"}}]},
        {"text": "Now the notes.", "tool_calls": [{"name": "echo", "arguments": {"path": f"notes-{index}.txt"}}]},
        {"text": f"Done with {index}."},
    ]


def record(rienda: Rienda, count: int) -> Path:
    for index in range(count):
        (rienda.workdir / "script.yaml").write_text(yaml.safe_dump(script(index)))
        conversation = rienda.conversation("bench")
        result = conversation.run(f"task {index}", NonInteractiveUI(record_events=False))
        conversation.close()
        assert result.reason == "end_turn", result.error
    return rienda.store.directory


def replay_in_process(rienda: Rienda, folder: Path) -> tuple[float, int, bool]:
    """Seconds, hook invocations, and whether every session replayed as recorded."""
    started = time.perf_counter()
    invocations, same = 0, True
    for path in sorted(folder.glob("*.jsonl")):
        report = replay_file(rienda, path)
        invocations += report.hook_calls
        same = same and not report.changed
    return time.perf_counter() - started, invocations, same


def pytest_run(rienda: Rienda, folder: Path, workers: int) -> tuple[float, int]:
    """Wall seconds of one ``pytest --rienda-replay`` process tree, and its exit code."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rienda-replay", str(folder),
               "--rienda-home", str(rienda.home), "--rienda-workdir", str(rienda.workdir)]
    if workers > 1:
        command += ["-n", str(workers)]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder.parent, capture_output=True, text=True,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    return time.perf_counter() - started, done.returncode


def row(label: str, seconds: float, sessions: int, invocations: int) -> str:
    return (f"  {label:34s} {seconds:7.2f} s   {sessions / seconds * 60:8.0f} sessions/min   "
            f"{invocations / seconds:8.0f} hook invocations/s")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer sessions, one repetition (CI smoke run)")
    args = parser.parse_args()
    count, repeats = (24, 1) if args.quick else (200, 3)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rienda = make_home(root)
        started = time.perf_counter()
        folder = record(rienda, count)
        recording = time.perf_counter() - started
        empty = root / "empty"
        empty.mkdir()
        print(f"Replay throughput: {count} recorded sessions, hooks {', '.join(HOOKS)}, 3 tool calls each "
              f"(recorded through the loop in {recording:.1f} s)")
        replay_in_process(rienda, folder)  # warm-up: extension loading, the isolate pool
        runs = [replay_in_process(rienda, folder) for _ in range(repeats)]
        invocations = runs[0][1]
        if not all(same for _, _, same in runs):
            print("  a session no longer replays as recorded", file=sys.stderr)
            return 1
        print(f"  {invocations} hook invocations per pass ({invocations / count:.0f} per session); "
              f"median of {repeats} run(s)")
        print(row("replay_file loop, this process", statistics.median(s for s, _, _ in runs), count, invocations))
        failed = False
        for workers in (1, 2):
            label = "pytest, one process" if workers == 1 else f"pytest -n {workers}"
            timed = [pytest_run(rienda, folder, workers) for _ in range(repeats)]
            failed = failed or any(code != 0 for _, code in timed)
            startup = statistics.median(pytest_run(rienda, empty, workers)[0] for _ in range(repeats))
            seconds = statistics.median(s for s, _ in timed)
            print(row(label, seconds, count, invocations)
                  + f"   (start-up alone {startup:.2f} s; without it {count / max(seconds - startup, 1e-9) * 60:.0f}"
                  " sessions/min)")
        if failed:
            print("  a pytest run did not pass every session", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
