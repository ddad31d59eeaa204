"""How full a model's context window is: :func:`context_fill`, a :class:`ContextFill`.

The fill is what the next request would hold: the last model turn's reported input
tokens (the whole request it was: system prompt, tool definitions, history) plus its
reported output tokens (its answer, now in the history), plus an estimate of every message
saved after it (tool results, a next prompt). A session with no reported usage yet is
estimated whole, with the system prompt and the tool definitions.

The estimate (:func:`estimate_tokens`) counts characters by kind, measured against
llama.cpp's own count (``/tokenize``, SmolLM2's tokenizer) on prose, Python, JavaScript,
JSON, shell output, YAML and German/French text: one token per
:data:`LETTERS_PER_TOKEN` ASCII letters, one per digit, :data:`PUNCTUATION_TOKENS` per
punctuation mark or symbol, :data:`WIDE_TOKENS` per non-ASCII character, none for white
space; plus :data:`MESSAGE_OVERHEAD` tokens per message for the chat template. Its error on
600-character pieces of those texts averages 7 % (characters / 4: 23 %, and up to 56 % too
low on shell output); the fill of a next request made of a reported turn and 900 to 2,600
tokens of shell output, Python, JSON or prose after it came within -1 % to +7 % of the
server's own count. The tokenizers of OpenAI's and Anthropic's models take fewer tokens for
the same text, so there it errs high, the safe side for a window.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterable
from dataclasses import dataclass

from ..common.json_value import JSON, JSONObject
from .messages import Message

__all__ = ["LETTERS_PER_TOKEN", "MESSAGE_OVERHEAD", "PUNCTUATION_TOKENS", "WIDE_TOKENS", "ContextFill",
           "context_fill", "estimate_message", "estimate_tokens"]

LETTERS_PER_TOKEN = 3.5
PUNCTUATION_TOKENS = 0.8
WIDE_TOKENS = 1.5
MESSAGE_OVERHEAD = 5  # the chat template's tokens around one message (measured: 5 to 6 with SmolLM2's)

_WIDE_SPACES = re.compile(r"[^\S\x00-\x7f]")  # white space beyond ASCII


@dataclass(frozen=True)
class ContextFill:
    """``tokens`` the next request would hold, of which ``estimated`` are Rienda's estimate
    (the rest the model's server reported); ``window`` the model's context window (None:
    unknown)."""

    tokens: int
    window: int | None
    estimated: int = 0

    @property
    def percent(self) -> int | None:
        """How full the window is, in whole percent (None when the window is unknown)."""
        return None if not self.window else round(100 * self.tokens / self.window)

    def to_dict(self) -> JSONObject:
        return {"tokens": self.tokens, "window": self.window, "estimated": self.estimated}

    def line(self) -> str:
        """``context 61 % of 8,192`` as every front end shows it; "" when the window is unknown."""
        return f"context {self.percent} % of {self.window:,}" if self.window else ""


def _classes() -> bytes:
    """A table mapping each ASCII byte to its kind: ``a`` letter, ``0`` digit, `` `` white
    space (what str's ``\\s`` matches below 128), ``.`` anything else."""
    table = bytearray(b"." * 256)
    for kind, members in ((b"a", string.ascii_letters), (b"0", string.digits), (b" ", " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f")):
        for member in members.encode("ascii"):
            table[member] = kind[0]
    return bytes(table)


_ASCII_CLASSES = _classes()


def estimate_tokens(text: str) -> int:
    """About how many tokens ``text`` is (see the module docstring for the rule): letters
    ``[A-Za-z]``, digits ``[0-9]``, white space ``\\s``, wide ``[^\\x00-\\x7f]`` (white space
    beyond ASCII is both) and the rest punctuation, counted by mapping each ASCII byte to its
    kind (those regular expressions' count at a sixth of their time on mixed text, a
    fifteenth on ASCII)."""
    if not text:
        return 0
    ascii_part = text.encode("ascii", "ignore")
    kinds = ascii_part.translate(_ASCII_CLASSES)
    letters, digits, spaces = kinds.count(b"a"), kinds.count(b"0"), kinds.count(b" ")
    wide = len(text) - len(ascii_part)
    if wide:
        spaces += len(_WIDE_SPACES.findall(text))  # white space beyond ASCII counts as both, as \s and [^\x00-\x7f]
    punctuation = len(text) - letters - digits - spaces - wide
    return round(letters / LETTERS_PER_TOKEN + digits + PUNCTUATION_TOKENS * punctuation + WIDE_TOKENS * wide)


def estimate_message(message: Message) -> int:
    """About how many tokens ``message`` takes in a request: its text, thinking, tool calls
    (name and arguments) and the template's :data:`MESSAGE_OVERHEAD`."""
    calls = sum(estimate_tokens(call.name) + estimate_tokens(_arguments(call.arguments))
                for call in message.tool_calls)
    return estimate_tokens(message.text) + estimate_tokens(message.thinking) + calls + MESSAGE_OVERHEAD


def context_fill(messages: list[Message], window: int | None, sent_besides: Iterable[str] = ()) -> ContextFill:
    """The fill of the next request made of ``messages`` (see the module docstring);
    ``sent_besides``: what every request carries besides them (the system prompt, the tool
    definitions as JSON), estimated only when no model turn reported its usage."""
    for index in range(len(messages) - 1, -1, -1):
        usage = messages[index].usage
        if messages[index].role == "assistant" and usage is not None and usage.input_tokens > 0:
            after = sum(estimate_message(message) for message in messages[index + 1:])
            return ContextFill(usage.input_tokens + usage.output_tokens + after, window, after)
    whole = sum(estimate_message(m) for m in messages) + sum(estimate_tokens(text) for text in sent_besides)
    return ContextFill(whole, window, whole)


def _arguments(arguments: JSON) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
