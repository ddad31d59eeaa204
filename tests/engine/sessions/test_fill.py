"""How full the model's window is (``sessions/fill.py``): the last turn's reported tokens plus
an estimate of what came after; shown on ``rienda run``'s last line when the window is known.
(The estimate against llama.cpp's own token count: ``test_real_model.py``.)"""

from __future__ import annotations

import pytest

from rienda_kernel.engine.sessions.fill import (
    MESSAGE_OVERHEAD,
    ContextFill,
    context_fill,
    estimate_message,
    estimate_tokens,
)
from rienda_kernel.engine.sessions.messages import Message, MessageMeta, ToolCall, Usage
from rienda_kernel.frontend.terminal import usage_summary

from ...helpers.cli import rienda
from ...helpers.homes import write_agent_file, write_script


@pytest.mark.parametrize("text, tokens", [
    ("", 0), ("hello", 1), ("hello world", 3), ("1234", 4), ("{}", 2), ("über", 2), ("   \n\t ", 0),
])
def test_the_estimate_counts_characters_by_kind(text, tokens):
    assert estimate_tokens(text) == tokens


def test_a_message_counts_its_text_thinking_calls_and_the_template():
    call = ToolCall("c1", "read", {"path": "notes.txt"})
    message = Message("assistant", "Reading.", "Think.", (call,))
    parts = ["Reading.", "Think.", "read", '{"path": "notes.txt"}']
    assert estimate_message(message) == sum(map(estimate_tokens, parts)) + MESSAGE_OVERHEAD


def test_the_fill_is_the_last_reported_turn_plus_an_estimate_of_what_came_after():
    call = ToolCall("c1", "read", {"path": "a"})
    history = [Message.user("Hi"), Message("assistant", "x", usage=Usage(100, 10)), Message.user("Read a"),
               Message("assistant", "", tool_calls=(call,), usage=Usage(150, 20)),
               Message.tool_result(call, "one two three " * 50, False), Message("assistant", "cut", meta=MessageMeta(error=True))]
    after = estimate_message(history[4]) + estimate_message(history[5])
    assert context_fill(history, 8192) == ContextFill(150 + 20 + after, 8192, after)


def test_a_session_without_reported_usage_is_estimated_whole():
    history = [Message.user("Hi"), Message("assistant", "Hello.")]
    whole = sum(map(estimate_message, history)) + estimate_tokens("Be brief.")
    fill = context_fill(history, None, ["Be brief."])
    assert fill == ContextFill(whole, None, whole) and fill.percent is None


def test_the_usage_line_says_how_full_a_known_window_is():
    usages = [Usage(4000, 10), Usage(5000, 20)]
    assert usage_summary(usages, ContextFill(5020, 8192)) == (
        "usage: 9000 in, 30 out over 2 model turns · context 61 % of 8,192")
    assert usage_summary(usages, ContextFill(5020, None)) == "usage: 9000 in, 30 out over 2 model turns"
    assert usage_summary([None], ContextFill(700, 1000)) == "usage: none reported by the model (1 model turn) · context 70 % of 1,000"


def test_rienda_run_and_each_chat_turn_show_the_fill_of_the_configured_window(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    write_agent_file(home, "long", "---\ndescription: A long talker.\nmodel: scripted/script.yaml\ntools: []\n"
                                   "options: {context_window: 8192}\n---\nBe brief.\n")
    write_script(work, [{"text": "Done.", "usage": {"input_tokens": 4990, "output_tokens": 10}},
                        {"text": "Again.", "usage": {"input_tokens": 7000, "output_tokens": 372}}])
    done = rienda(home, work, "run", "--agent", "long", "Hi")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1].endswith("· usage: 4990 in, 10 out over 1 model turn · context 61 % of 8,192")
    chat = rienda(home, work, "chat", "--resume", "last", input="Hi again\n")
    assert chat.returncode == 0, chat.stderr
    assert "· usage: 7000 in, 372 out over 1 model turn · context 90 % of 8,192" in chat.stderr


def test_the_fast_count_is_the_rule_character_for_character():
    """estimate_tokens counts by bytes; the rule is these regular expressions: random texts
    of ASCII, accented, wide and non-ASCII white space characters give the same count."""
    import random
    import re

    from rienda_kernel.engine.sessions.fill import LETTERS_PER_TOKEN, PUNCTUATION_TOKENS, WIDE_TOKENS, estimate_tokens

    def by_rule(text):
        letters, digits = len(re.findall(r"[A-Za-z]", text)), len(re.findall(r"[0-9]", text))
        spaces, wide = len(re.findall(r"\s", text)), len(re.findall(r"[^\x00-\x7f]", text))
        rest = len(text) - letters - digits - spaces - wide
        return round(letters / LETTERS_PER_TOKEN + digits + PUNCTUATION_TOKENS * rest + WIDE_TOKENS * wide)

    pool = [chr(i) for i in range(128)] + list("éüß→€中文\u00a0\u2003\u3000\u2028\U0001F600")
    rng = random.Random(30)
    for _ in range(5000):
        text = "".join(rng.choice(pool) for _ in range(rng.randrange(0, 80)))
        assert estimate_tokens(text) == by_rule(text), repr(text)
