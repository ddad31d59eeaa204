"""A server's refusal of a request for its length, recognised in each vendor's words
(:func:`overflow`), and the one line a run ends with then (:func:`overflow_line`).

- OpenAI: HTTP 400, ``error.code: context_length_exceeded`` ("This model's maximum context
  length is 128000 tokens. However, your messages resulted in 130523 tokens..."; vLLM says
  the same with "you requested N tokens");
- Anthropic: HTTP 400, ``invalid_request_error`` "prompt is too long: 208310 tokens > 200000
  maximum" (or "input length and `max_tokens` exceed context limit: A + B > W");
- llama.cpp's server: HTTP 400, ``error.type: exceed_context_size_error`` with
  ``n_prompt_tokens`` and ``n_ctx`` ("request (831 tokens) exceeds the available context
  size (512 tokens), try increasing it").

Such a refusal is never retried: the same request would be refused again. An answer
cut off at a length limit when the request and the answer filled the window (llama.cpp's
server ends it with ``finish_reason: length`` at ``n_ctx``) is an overflow too
(:func:`filled`), not a ``max_tokens`` to raise.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from ..common import bounded
from ..common.json_value import JSON
from ..errors import AnswerCutOff, ContextOverflow, ProviderError
from .window import Window

__all__ = ["filled", "overflow", "overflow_line"]

_FIGURES = (  # (pattern, group of the request's tokens, group of the window), in the vendors' words
    (re.compile(r"maximum context length is (\d+) tokens.*?(?:resulted in|requested) (\d+) tokens", re.S), 2, 1),
    (re.compile(r"prompt is too long: (\d+) tokens > (\d+) maximum"), 1, 2),
    (re.compile(r"exceed context limit: (\d+) \+ \d+ > (\d+)"), 1, 2),
    (re.compile(r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)"), 1, 2),
)
_WORDS = re.compile(r"context_length_exceeded|exceed_context_size_error|prompt is too long|exceeds? (?:the )?"
                    r"(?:available |maximum )?context (?:size|length|limit|window)|maximum context length", re.I)


def overflow(text: str) -> tuple[int | None, int | None] | None:
    """``(tokens, window)`` when the error body ``text`` says the request is too long for
    the model's context (each None when the server does not give it); None when it says
    something else."""
    data = _json(text)
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("type") == "exceed_context_size_error":
        return _whole(error.get("n_prompt_tokens")), _whole(error.get("n_ctx"))
    said = " ".join(str(error.get(field) or "") for field in ("code", "type", "message")) \
        if isinstance(error, dict) else str(error or text)
    if not _WORDS.search(said):
        return None
    for pattern, tokens, window in _FIGURES:
        found = pattern.search(said)
        if found:
            return int(found.group(tokens)), int(found.group(window))
    return None, None


def filled(error: ProviderError, url: str, window: Callable[[], Window | None]) -> ProviderError:
    """``error``, raised while a stream from ``url`` was read, as the run ends with it: named
    by the URL; a :class:`ContextOverflow` (kept as one, or an :class:`AnswerCutOff` whose
    request and answer reached the ``window()``, asked only then)."""
    if isinstance(error, ContextOverflow):
        return ContextOverflow(f"{url}: {error}", tokens=error.tokens, window=error.window)
    if isinstance(error, AnswerCutOff) and error.tokens:
        found = window()
        if found is not None and error.tokens >= found.tokens:
            return ContextOverflow(f"{url}: the answer was cut off when the request and the answer filled the "
                                   f"context window ({error.tokens} of {found.tokens} tokens)",
                                   tokens=error.tokens, window=found.tokens)
    if isinstance(error, AnswerCutOff):  # still one: a summariser keeps what it wrote before the cut
        return AnswerCutOff(f"{url}: {error}", tokens=error.tokens)
    return ProviderError(f"{url}: {error}")


def overflow_line(model_id: str, session_id: str, tokens: int | None, window: int | None, estimated: bool,
                  said: str, tried: str = "") -> str:
    """The one line a run refused for its length ends with: the fill, the window, what
    compaction did (``tried``: "even after compacting it once", "and compaction is off..."),
    the session kept, what to do, and what the server said."""
    fill = f"{'about ' if estimated else ''}{tokens:,} tokens" if tokens else "more tokens than it holds"
    held = f"a window of {window:,}" if window else "a window of unknown size"
    return (f"the conversation no longer fits {model_id}'s context window{', ' + tried if tried else ''}: {fill} "
            f"against {held}; session {session_id} is kept: compact it (rienda compact {session_id}, or %rienda "
            f"compact), or resume it once the window is larger (context_window, or the server's own setting) or on "
            f"a model with a larger one; the server said: {said}")


def _json(text: str) -> JSON:
    try:
        return bounded.loads(text)
    except (ValueError, TypeError):  # not JSON: its words are read as text
        return None


def _whole(value: JSON) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
