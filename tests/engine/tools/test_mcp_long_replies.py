"""An MCP reply past 16 MiB is capped as every tool result is, in bounded memory, and says it
was cut (issue 40: a 50 MB reply was an error, "its reply could not be read: larger than
16 MiB", after the SDK had held it whole and copied it at each of its pieces).

A real stdio server of the tests' own (tests/helpers/mcp_rogue.py) sends 50 MB in pieces;
the call runs in a process of its own that reports its peak resident memory before and
after (the growth is asserted, not a time). The reducer itself is checked piece by piece
against Python's JSON reader on random JSON cut at random places.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rienda_kernel.engine.tools.invoke import OUTPUT_CAP
from rienda_kernel.engine.tools.mcp.long_lines import StdoutLines
from rienda_kernel.engine.tools.mcp.reducer import CUT_KEY, Reducer

from ...helpers.cli import rienda
from ...helpers.mcp_servers import write_config

ROGUE = Path(__file__).parents[2] / "helpers" / "mcp_rogue.py"
MiB = 1024 * 1024
CUT = "\n[rienda: output cut at 256 KiB]"

RUNNER = textwrap.dedent("""\
    import json, resource, sys
    from rienda_kernel.engine import NonInteractiveUI
    from rienda_kernel.engine.runtime.rienda import Rienda

    engine = Rienda(home=sys.argv[1], workdir=sys.argv[1])
    engine.call_tool("mcp__rogue__echo", {"text": "warm"}, NonInteractiveUI(record_events=False))  # started
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    result = engine.call_tool("mcp__rogue__echo", {"text": "hi"}, NonInteractiveUI(record_events=False))
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    engine.close()
    print(json.dumps({"growth": after - before, "text": result.text, "error": result.is_error}))
""")


def rogue(home: Path, how: str, megabytes: float = 50) -> Path:
    write_config(home, {"rogue": {"command": sys.executable, "args": [str(ROGUE)],
                                  "env": {"ROGUE": how, "ROGUE_MB": str(megabytes)}, "start_timeout": 600}})
    return home


def test_a_50_mb_text_is_its_first_256_kib_said_cut_in_bounded_memory(tmp_path):
    home = rogue(tmp_path, "huge")
    done = subprocess.run([sys.executable, "-c", RUNNER, str(home)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["growth"] < 48 * MiB, report  # the first 16 MiB of the line, held while it is read
    text = report["text"]
    assert not report["error"]
    assert len(text.encode()) == OUTPUT_CAP and text.endswith(CUT)
    assert text == "hi" + "x" * (OUTPUT_CAP - len(CUT) - 2) + CUT  # what any tool's 50 MB result is


@pytest.mark.parametrize("how, shown", [
    ("huge-items", None),
    ("huge-image", "[image: image/png, 35.8 MiB]\nafter the image\n"),
])
def test_many_items_or_a_huge_image_through_rienda_call(tmp_path, how, shown):
    done = rienda(rogue(tmp_path, how), tmp_path, "call", "mcp__rogue__echo", '{"text": "hi"}')
    assert done.returncode == 0, done.stderr
    if shown is not None:  # the image's size, said (its base64 left out), the text after it whole: nothing cut
        assert done.stdout == shown
        return
    assert done.stdout.startswith(("y" * 100 + "\n") * 100) and done.stdout.endswith(CUT + "\n")
    assert len(done.stdout.encode()) == OUTPUT_CAP + 1  # and print's newline


def test_a_reply_under_the_limit_reads_as_before(tmp_path):
    done = rienda(rogue(tmp_path, "huge", megabytes=15), tmp_path, "call", "mcp__rogue__echo", '{"text": "hi"}')
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hi" + "x" * (OUTPUT_CAP - len(CUT) - 2) + CUT + "\n"  # capped by the engine, as any tool's


# -- the reducer, piece by piece ------------------------------------------------------------------


def reduced(text: str, keep: int, rng: random.Random, pieces: int = 9) -> str:
    reducer = Reducer(keep)
    at = 0
    while at < len(text):
        size = rng.randint(1, pieces)
        reducer.feed(text[at:at + size])
        at += size
    return reducer.close()


def random_json(rng: random.Random, depth: int = 0):
    def text():
        return "".join(rng.choice('ab"\\\n\u00e9\U0001F600\t/ x') for _ in range(rng.randint(0, 12)))
    roll = rng.random()
    if depth > 4 or roll < 0.3:
        return rng.choice([text(), rng.randint(-1000, 1000), rng.random() * 1e6, True, False, None, 1.5e-7])
    if roll < 0.65:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    return {text(): random_json(rng, depth + 1) for _ in range(rng.randint(0, 5))}


def test_within_its_budget_the_reducer_gives_back_the_same_json_whatever_the_pieces():
    rng = random.Random(40)
    for _ in range(2000):
        value = random_json(rng)
        text = json.dumps(value, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1]))
        assert json.loads(reduced(text, 10 ** 9, rng)) == value, text


def test_past_its_budget_a_reply_stays_a_valid_call_result_that_says_what_was_cut():
    rng = random.Random(41)
    for index in range(2000):
        items = [{"type": "text", "text": "ab\\\"é😀\n" * rng.randint(1, 30)} for _ in range(rng.randint(1, 20))]
        items.insert(rng.randint(0, len(items)), {"type": "image", "mimeType": "image/png", "data": "QUJD" * 50})
        reply = {"jsonrpc": "2.0", "id": rng.choice([index, str(index)]),
                 "result": {"content": items, "structuredContent": random_json(rng), "isError": False}}
        keep = rng.randint(1, 300)
        line = reduced(json.dumps(reply, ensure_ascii=rng.random() < 0.5), keep, rng)
        got = json.loads(line)
        assert got["id"] == reply["id"] and got["jsonrpc"] == "2.0", line
        content = got["result"]["content"]
        assert all(item["type"] in ("text", "image") for item in content)
        assert len(line) < 6 * keep + 2000  # bounded, whatever came
        for given, kept in zip(items, content):  # each item kept is the item it was, its text a prefix
            assert given["type"] == kept["type"] and given.get("text", "").startswith(whole(kept.get("text", "")))
        cut = got["result"]["_meta"][CUT_KEY]
        image = next(i for i, item in enumerate(items) if item["type"] == "image")
        if image < len(content):  # base64 past the limit: its size, not its text
            assert content[image]["data"] == "" and cut["sizes"] == {f"content.{image}.data": 200}
        assert "content" in cut["cut"] or [item.get("text") for item in content] == [item.get("text") for item in items]


def whole(text: str) -> str:
    """``text`` without a trailing half of a surrogate pair (a cut may fall between its escapes)."""
    return text[:-1] if text and "\ud800" <= text[-1] <= "\udbff" else text


def test_a_line_that_is_not_json_or_not_a_call_result_is_said_as_before():
    rng = random.Random(42)
    broken = '{"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "abc"}}'
    assert json.loads(reduced(broken, 100, rng))["error"]["message"].startswith(
        "its reply could not be read: not valid JSON: '}' where ',' or the end of the array was expected")
    listing = json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"tools": [{"name": "t" * 500}]}})
    assert json.loads(reduced(listing, 100, rng)) == {"jsonrpc": "2.0", "id": 2, "error": {
        "code": -32700, "message": "its reply could not be read: larger than 16 MiB"}}
    assert reduced("DEBUG " + "x" * 1000, 100, rng) == "DEBUG " + "x" * 194 + "…"  # said skipped by the line reader


def test_the_line_reader_passes_lines_under_its_limit_as_they_came():
    lines = ['{"a": 1}', " " * 40, json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [
        {"type": "text", "text": "x" * 500}]}})]
    reader, out = StdoutLines(limit=50, keep=20), ""
    stream = "\n".join(lines) + "\nunfinished"
    for at in range(0, len(stream), 7):
        out += reader.feed(stream[at:at + 7])
    first, second, third, rest = out.split("\n")
    assert (first, second, rest) == (lines[0], lines[1], "")  # the unfinished line: not yet
    result = json.loads(third)["result"]
    assert result["_meta"][CUT_KEY] == {"characters": len(lines[2]), "cut": ["content"], "sizes": {}}
    assert [item["type"] for item in result["content"]] == ["text"] and len(result["content"][0]["text"]) < 20


def test_a_cut_reply_says_so_even_when_what_is_left_is_short():
    """Text kept within the budget may decode shorter than the cap (escapes): the result
    still says it was cut; an image left out is described by the size it had."""
    from mcp.types import CallToolResult

    from rienda_kernel.engine.tools.mcp.results import result_text

    result = CallToolResult.model_validate({"content": [{"type": "text", "text": "short"},
                                                        {"type": "image", "mimeType": "image/png", "data": ""}],
                                            "_meta": {CUT_KEY: {"characters": 60_000_000, "cut": ["content"],
                                                                "sizes": {"content.1.data": 4_000_000}}}})
    assert result_text(result) == ("short\n[image: image/png, 2.9 MiB]" + CUT, False)
    result = CallToolResult.model_validate({"content": [{"type": "text", "text": "short"}], "structuredContent": {},
                                            "_meta": {CUT_KEY: {"characters": 60_000_000, "cut": ["structuredContent"],
                                                                "sizes": {}}}})
    assert result_text(result) == ("short", False)  # what was cut is not what the model reads
