"""Recordings: a recorded 20-turn notebook session re-run from its recording, and matching
one request against a recording of 1,000 exchanges.

1. Per replayed turn: 20 turns (a prompt, a call to the ``read`` tool, its answer) recorded
   through the real loop against an OpenAI-wire server on 127.0.0.1, then run again from the
   recording in ``replay`` mode (the server stopped), against the same 20 turns answered by
   the scripted model (the same texts and calls) as the baseline, in the same run. Target:
   ≤ 1.2× the scripted turn.
2. Matching: a request (a 20-message conversation) found in a recording of 1,000 exchanges,
   from its form to the recorded answer (``request_form``, ``form_key``, ``take``); and, for
   the record, what a miss costs (the nearest request and its first difference). Target:
   ≤ 5 ms per match.

    python bench/bench_recordings.py [--quick]

Exits 1 when a replayed turn's answer differs from the recorded one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rienda_kernel.engine import NonInteractiveUI  # noqa: E402
from rienda_kernel.engine.providers import ModelRequest  # noqa: E402
from rienda_kernel.engine.providers.recordings import Recording  # noqa: E402
from rienda_kernel.engine.providers.recordings.canonical import form_key, request_form  # noqa: E402
from rienda_kernel.engine.providers.recordings.records import RecordedExchange  # noqa: E402
from rienda_kernel.engine.providers.base import TextChunk  # noqa: E402
from rienda_kernel.engine.runtime.rienda import Rienda  # noqa: E402
from rienda_kernel.engine.sessions.messages import Message, Usage  # noqa: E402
from tests.helpers.recording_server import echo_server  # noqa: E402

TURNS = 20


def home(root: Path, model: str, url: str = "http://127.0.0.1:9/v1") -> Rienda:
    (root / "home" / "agents").mkdir(parents=True, exist_ok=True)
    (root / "work").mkdir(exist_ok=True)
    (root / "home" / "config.yaml").write_text(yaml.safe_dump({"providers": {"local": {"api": "openai",
                                                                                         "base_url": url}}}))
    (root / "home" / "agents" / "a.md").write_text(f"---\nmodel: {model}\ntools: [read]\n---\nBe brief.\n")
    for index in range(TURNS):
        (root / "work" / f"note{index}.txt").write_text(f"note number {index}")
    return Rienda(home=root / "home", workdir=root / "work")


def run_turns(engine: Rienda) -> tuple[float, list[str]]:
    """The 20 turns in one conversation: seconds per turn, and the answers."""
    conversation = engine.conversation("a")
    answers = []
    start = time.perf_counter()
    for index in range(TURNS):
        result = conversation.run(f"read: note{index}.txt", NonInteractiveUI(record_events=False))
        answers.append(result.text)
    return (time.perf_counter() - start) / TURNS, answers


def per_turn(root: Path, rounds: int) -> tuple[float, float, bool]:
    server = echo_server()
    try:
        recorded = home(root / "recorded", "local/echo", server.url)
        recorded.record("bench.rec.jsonl", "auto")
        _, live_answers = run_turns(recorded)
    finally:
        server.close()
    script = [item for index in range(TURNS) for item in (
        {"text": "", "tool_calls": [{"name": "read", "arguments": {"path": f"note{index}.txt"}}],
         "usage": {"input_tokens": 10, "output_tokens": 5}},
        {"text": f"The tool said: note number {index}", "usage": {"input_tokens": 12, "output_tokens": 6}})]
    scripted = home(root / "scripted", "scripted/script.yaml")
    (root / "scripted" / "work" / "script.yaml").write_text(yaml.safe_dump(script))
    replays, baselines, same = [], [], True
    for _ in range(rounds):
        engine = home(root / "recorded", "local/echo", server.url)
        engine.record("bench.rec.jsonl", "replay")
        seconds, answers = run_turns(engine)
        replays.append(seconds)
        same = same and answers == live_answers
        baselines.append(run_turns(home(root / "scripted", "scripted/script.yaml"))[0])
    return statistics.median(replays), statistics.median(baselines), same


def matching(root: Path, count: int, tries: int) -> tuple[float, float]:
    """Median ms to find a request in a recording of ``count`` exchanges, and to explain a miss."""
    path = root / "big.rec.jsonl"
    history: list[Message] = []
    exchanges = []
    for index in range(count):
        history = history[-18:] + [Message.user(f"question {index}: " + "words " * 40)]
        request = ModelRequest("echo", "Be brief.", list(history))
        exchanges.append(RecordedExchange(request_form("local/echo", request), (TextChunk(f"answer {index}"),),
                                          Usage(100, 10)))
        history.append(Message("assistant", f"answer {index} " + "more " * 40))
    recording = Recording(path, path.name, "auto")
    for exchange in exchanges:
        recording.add(exchange)
    wanted = exchanges[count // 2].request
    messages = [Message.from_dict({"role": m["role"], "text": m["text"]}) for m in wanted["messages"]]
    request = ModelRequest("echo", "Be brief.", messages)
    found, missed = [], []
    for _ in range(tries):
        recording = Recording(path, path.name, "auto")
        start = time.perf_counter()
        form = request_form("local/echo", request)
        hit = recording.take(form_key(form))
        found.append((time.perf_counter() - start) * 1000)
        assert hit is not None and hit[0] == count // 2 + 1
        other = ModelRequest("echo", "Be brief.", [*messages[:-1], Message.user("an edited question")])
        start = time.perf_counter()
        form = request_form("local/echo", other)
        assert recording.take(form_key(form)) is None
        recording.miss(form, (), None)
        missed.append((time.perf_counter() - start) * 1000)
    return statistics.median(found), statistics.median(missed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round, fewer tries (CI)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rienda-bench-recordings-") as folder:
        root = Path(folder)
        replayed, scripted, same = per_turn(root, 1 if args.quick else 5)
        found, missed = matching(root, 1000, 5 if args.quick else 30)
    print(f"per replayed turn (a tool call and an answer, 2 requests): {replayed * 1000:.1f} ms; "
          f"the same turn with the scripted model: {scripted * 1000:.1f} ms; ratio {replayed / scripted:.2f}x "
          f"(target <= 1.2x)")
    print(f"matching a request in a recording of 1,000 exchanges: {found:.2f} ms (target <= 5 ms); "
          f"a miss with its nearest request and first difference: {missed:.1f} ms")
    if not same:
        print("a replayed turn's answer differs from the recorded one", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
