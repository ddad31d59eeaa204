"""Tab completion of ``%rienda`` and ``%%rienda`` lines in any IPython shell (a Python 3
kernel, terminal IPython), through IPython's completer API (a v2 matcher).

The words come from the same table as the Rienda kernel's completion
(:func:`rienda_kernel.jupyter.commands.complete`); ``%%rienda``'s options complete agent names,
session ids and models.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from IPython.core.completer import CompletionContext, SimpleCompletion, SimpleMatcherResult, completion_matcher

from rienda_kernel.jupyter.commands import PREFIX, agent_names, complete, model_names, session_names
from rienda_kernel.jupyter.session import NotebookSession

__all__ = ["rienda_matcher"]

_LINE_MAGIC = re.compile(r"^\s*(?:[\w.\[\]'\"]+\s*=\s*)?(%rienda\b)")
_CELL_OPTIONS = {"--agent": agent_names, "--session": session_names, "--model": model_names}


def rienda_matcher(notebook: Callable[[], NotebookSession]) -> Callable[[CompletionContext], SimpleMatcherResult]:
    """A matcher for ``shell.Completer.custom_matchers``; ``notebook()`` gives the state."""

    @completion_matcher(identifier="rienda", api_version=2)
    def match(context: CompletionContext) -> SimpleMatcherResult:
        try:
            found = _complete(notebook, context)
        except Exception:  # noqa: BLE001 - a completer never breaks the shell
            found = None
        if found is None:
            return {"completions": [], "suppress": False}
        word, matches = found
        # IPython replaces its own token (split on more characters than spaces): offer the
        # part of each match that follows what the token leaves out of the word.
        token = context.token
        head = word[:-len(token)] if token and word.endswith(token) else word
        fitting = [m[len(head):] for m in matches if m.startswith(head)] if token else matches
        return {"completions": [SimpleCompletion(m) for m in fitting], "suppress": True,
                "matched_fragment": word[len(head):] if token else ""}

    return match


def _complete(notebook: Callable[[], NotebookSession], context: CompletionContext) -> tuple[str, list[str]] | None:
    """(the word being completed, its matches), or None when not on a Rienda line."""
    line, before = context.line_with_cursor, context.text_until_cursor
    if context.cursor_line == 0 and (line.lstrip().startswith(f"%{PREFIX} ") or line.strip() == f"%{PREFIX}"):
        return _cell_option(notebook(), before)
    magic = _LINE_MAGIC.match(line)
    if magic is None or len(before) < magic.end(1):
        return None
    start = magic.start(1)
    matches, word_start, _ = complete(notebook(), line[start:], len(before) - start)
    return before[start + word_start:], matches


def _cell_option(notebook: NotebookSession, before: str) -> tuple[str, list[str]]:
    words = before.split()
    word = "" if before.endswith((" ", "\t")) else words[-1]
    previous = words[-1] if word == "" else (words[-2] if len(words) > 1 else "")
    if previous in _CELL_OPTIONS:
        candidates: list[Any] = _CELL_OPTIONS[previous](notebook)
    elif len(words) >= 1:
        candidates = list(_CELL_OPTIONS)
    else:
        candidates = []
    return word, [c for c in candidates if c.startswith(word)]
