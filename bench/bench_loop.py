"""The agent loop's own overhead, and resuming a long session.

Prints, in one run:
- the engine's own time per model turn (wall time minus the time spent inside the model
  provider), with six hooks each declared on the six run points and the scripted model
  (target <= 10 ms), against the same turns with no hooks (the baseline), for both
  sandboxes: V8 in worker processes (the product's ``Sandbox``) and V8 in this process
  (``InProcessSandbox``, what the engine did before workers). Two pacings: an instant
  model (turns back to back) and a model that takes 150 ms to answer, as a fast real one
  does; the pause lets the isolate pools refill between turns;
- the time to resume a 10,000-message session (target <= 300 ms), against reading the same
  file's lines with json.loads (the floor).

    python bench/bench_loop.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from rienda_kernel.engine import NonInteractiveUI, Sandbox
from rienda_kernel.engine.sandbox.inprocess import InProcessSandbox
from rienda_kernel.engine.sessions.messages import Message, ToolCall
from rienda_kernel.engine.providers import PROVIDERS, Provider
from rienda_kernel.engine.providers.scripted import ScriptedProvider
from rienda_kernel.engine.runtime.rienda import Rienda
from rienda_kernel.engine.sessions.store import SessionStore

ALL_POINTS_HOOK = """module.exports = {
  beforeRun(ctx, e) {},
  afterRun(ctx, e) {},
  beforeModelRequest(ctx, r) { return { system: r.system + "." }; },
  afterModelResponse(ctx, r) { return { text: r.text }; },
  beforeToolExecute(ctx, call) { return { arguments: call.arguments }; },
  afterToolExecute(ctx, call, result) { return { text: result.text }; },
};
"""


class TimedModel(Provider):
    """The scripted model, answering after ``latency`` seconds; counts the time spent
    inside the provider so the engine's own time can be told apart."""

    def __init__(self) -> None:
        self.inner = ScriptedProvider()
        self.latency = 0.0
        self.seconds = 0.0

    def stream(self, request, cancel):
        started = time.perf_counter()
        time.sleep(self.latency)
        chunks = iter(self.inner.stream(request, cancel))
        while True:
            try:
                chunk = next(chunks)
            except StopIteration:
                self.seconds += time.perf_counter() - started
                return
            self.seconds += time.perf_counter() - started
            yield chunk
            started = time.perf_counter()


MODEL = TimedModel()
PROVIDERS["timed"] = lambda config: MODEL


def make_home(root: Path, hooks: int, sandbox, label: str) -> Rienda:
    home, work = root / f"home{hooks}-{label}", root / f"work{hooks}-{label}"
    names = [f"h{i}" for i in range(hooks)]
    for name in names:
        (home / "hooks" / name).mkdir(parents=True)
        (home / "hooks" / name / "index.js").write_text(ALL_POINTS_HOOK)
    (home / "agents").mkdir(parents=True)
    (home / "agents" / "bench.md").write_text(
        f"---\nmodel: timed/script.yaml\ntools: [read]\nhooks: {json.dumps(names)}\n---\nYou are fast.\n")
    work.mkdir()
    (work / "notes.txt").write_text("some words to read\n")
    return Rienda(home=home, workdir=work, sandbox=sandbox)


def write_script(rienda: Rienda, turns: int, with_tool: bool) -> None:
    item = {"text": "Reading the notes now."}
    if with_tool:
        item["tool_calls"] = [{"name": "read", "arguments": {"path": "notes.txt"}}]
    responses = [item] * (turns - 1) + [{"text": "Done."}]
    (rienda.workdir / "script.yaml").write_text(yaml.safe_dump(responses))


def per_turn_ms(rienda: Rienda, turns: int, with_tool: bool, runs: int, latency: float) -> list[float]:
    """The engine's own milliseconds per model turn, one figure per run (a text-only
    script ends the run at its first answer: one turn)."""
    write_script(rienda, turns, with_tool)
    MODEL.latency = latency
    figures = []
    for _ in range(runs):
        conversation = rienda.conversation("bench")
        time.sleep(max(latency, 0.2))  # the pause before a prompt: the pool refills
        MODEL.seconds = 0.0
        started = time.perf_counter()
        result = conversation.run("go", NonInteractiveUI(record_events=False))
        elapsed = time.perf_counter() - started - MODEL.seconds
        assert result.reason == "end_turn", result.error
        conversation.close()
        model_turns = sum(1 for message in result.messages if message.role == "assistant")
        figures.append(elapsed * 1000 / model_turns)
    return figures


def resume_ms(root: Path, messages: int, repeats: int) -> tuple[list[float], list[float]]:
    store = SessionStore(root / "resume-home")
    writer = store.create("default", "scripted/x.yaml")
    for i in range(messages // 3):
        call = ToolCall(f"c{i}", "read", {"path": f"file{i}.txt"})
        writer.append_message(Message.user(f"question {i} " + "words " * 20))
        writer.append_message(Message("assistant", "answer " * 30, tool_calls=(call,)))
        writer.append_message(Message.tool_result(call, "content " * 40, False))
    writer.close()
    rienda = Rienda(home=root / "resume-home", workdir=root)
    loads, floor = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        conversation = rienda.conversation(session_id=writer.id)
        loads.append((time.perf_counter() - started) * 1000)
        assert len(conversation.messages) == messages // 3 * 3
        started = time.perf_counter()
        with writer.path.open(encoding="utf-8") as f:
            [json.loads(line) for line in f]
        floor.append((time.perf_counter() - started) * 1000)
    return loads, floor


def summary(figures: list[float]) -> str:
    ordered = sorted(figures)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"median {statistics.median(figures):7.2f} ms   p95 {p95:7.2f} ms   (n={len(figures)})"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (CI smoke run)")
    args = parser.parse_args()
    runs, turns = (3, 5) if args.quick else (12, 10)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sandboxes = {"workers": Sandbox(), "in-process": InProcessSandbox()}
        print("Engine time per model turn (scripted model; six hooks, each on the six run points)")
        medians = {}
        for label, sandbox in sandboxes.items():
            six, none = make_home(root, 6, sandbox, label), make_home(root, 0, sandbox, label)
            per_turn_ms(six, 3, True, 1, 0.0)  # warm-up: V8 start, extension loading, pool growth
            per_turn_ms(none, 3, True, 1, 0.0)
            print(f"  sandbox: {label}")
            for latency in (0.0, 0.15):
                pacing = "instant model" if latency == 0 else f"model answers in {latency * 1000:.0f} ms"
                print(f"    {pacing}")
                for name, rienda in (("six hooks", six), ("no hooks (baseline)", none)):
                    for with_tool in (True, False):
                        figures = per_turn_ms(rienda, turns, with_tool, runs, latency)
                        medians[(label, latency, name, with_tool)] = statistics.median(figures)
                        kind = "turn + 1 tool call" if with_tool else "turn, text only  "
                        print(f"      {name:20s} {kind}  {summary(figures)}")
        for label in sandboxes:
            for latency in (0.0, 0.15):
                six_tool = medians[(label, latency, "six hooks", True)]
                base = medians[(label, latency, "no hooks (baseline)", True)]
                print(f"  {label:10s} target <= 10 ms per turn, six hooks + a tool call, latency "
                      f"{latency * 1000:3.0f} ms: {'PASS' if six_tool <= 10 else 'MISS'} ({six_tool:.2f} ms; "
                      f"{six_tool / base:.1f}x the no-hook baseline; 24 hook invocations per turn)")
        for latency in (0.0, 0.15):
            workers = medians[("workers", latency, "six hooks", True)]
            local = medians[("in-process", latency, "six hooks", True)]
            print(f"  workers - in-process, six hooks + a tool call, latency {latency * 1000:3.0f} ms: "
                  f"{workers - local:+.2f} ms per turn ({(workers - local) / 24 * 1000:+.0f} us per hook invocation)")
        idle, busy = sandboxes["workers"].pool.pids()
        print(f"  worker pool: {len(idle)} idle, {len(busy)} busy, {sandboxes['workers'].pool.started} started")
        sandboxes["workers"].close()

        loads, floor = resume_ms(root, 10_000 if not args.quick else 3_000, 3 if args.quick else 7)
        print(f"\nResume a {'10,000' if not args.quick else '3,000'}-message session")
        print(f"  Rienda.conversation(session_id=...)  {summary(loads)}")
        print(f"  json.loads of every line (floor)      {summary(floor)}")
        print(f"  target <= 300 ms: {'PASS' if statistics.median(loads) <= 300 else 'MISS'}; "
              f"{statistics.median(loads) / statistics.median(floor):.1f}x the floor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
