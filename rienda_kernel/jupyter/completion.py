"""Completion and Shift-Tab on ``%rienda`` lines, from the one command table.

:func:`complete` and :func:`inspect` answer the Rienda kernel's ``complete_request`` and
``inspect_request``; :func:`rienda_matcher` does the same in any IPython shell (a Python 3
kernel, terminal IPython) through IPython's completer API (a v2 matcher), where
``%%rienda``'s options complete agent names, session ids and models too.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from IPython.core.completer import CompletionContext, SimpleCompletion, SimpleMatcherResult, completion_matcher

from ..engine import RiendaError
from ..commands.vocabulary import (
    CELL_OPTIONS,
    PREFIX,
    CommandOutput,
    after_prefix,
    command_names,
    help_output,
    subcommands,
)
from ..commands.tables import escape
from ..commands.session import TurnSession

__all__ = ["complete", "inspect", "rienda_matcher"]

_LINE_MAGIC = re.compile(r"^\s*(?:[\w.\[\]'\"]+\s*=\s*)?(%rienda\b)")
_CELL_OPTIONS = {option.flag: option.complete for option in CELL_OPTIONS if option.complete is not None}


def rienda_matcher(notebook: Callable[[], TurnSession]) -> Callable[[CompletionContext], SimpleMatcherResult]:
    """A matcher for ``shell.Completer.custom_matchers``; ``notebook()`` gives the state."""

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

    completion_matcher(identifier="rienda", api_version=2)(match)  # marks the function itself (IPython's decorator)
    return match


def _complete(notebook: Callable[[], TurnSession], context: CompletionContext) -> tuple[str, list[str]] | None:
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


def _cell_option(notebook: TurnSession, before: str) -> tuple[str, list[str]]:
    words = before.split()
    word = "" if before.endswith((" ", "\t")) else words[-1]
    previous = words[-1] if word == "" else (words[-2] if len(words) > 1 else "")
    if previous in _CELL_OPTIONS:
        candidates = _CELL_OPTIONS[previous](notebook)
    elif len(words) >= 1:
        candidates = list(_CELL_OPTIONS)
    else:
        candidates = []
    return word, [c for c in candidates if c.startswith(word)]


def complete(session: TurnSession, line: str, cursor: int) -> tuple[list[str], int, int]:
    """Completions for the word at ``cursor`` (an offset into ``line``, the cell or the
    magic's line, with or without ``%rienda``): ``(matches, start, end)``, where
    ``line[start:end]`` is the word each match replaces. Never raises."""
    cursor = max(0, min(cursor, len(line)))
    before = line[:cursor]
    word = _matched(re.search(r"\S*$", before))
    start = cursor - len(word)
    end = cursor + len(_matched(re.match(r"\S*", line[cursor:])))
    line_start = before.rfind("\n") + 1
    head = before[line_start:start]
    rest = after_prefix(head)
    if rest is None:
        if line[:line_start].strip():
            return [], start, end  # not on the command's own line
        if not head.strip() and word.startswith("%"):
            return ([PREFIX] if PREFIX.startswith(word) and word != PREFIX else []), start, end
        rest = head  # a magic's line without %rienda
    try:
        candidates = _candidates(session, rest.split())
    except RiendaError:
        candidates = []
    return [c for c in candidates if c.startswith(word)], start, end


def _matched(found: re.Match[str] | None) -> str:
    """What a pattern that matches every text (``\\S*``) matched."""
    return found.group() if found is not None else ""


def inspect(session: TurnSession, line: str, cursor: int) -> CommandOutput | None:
    """What Shift-Tab shows for the word at ``cursor`` on a command line: a command's
    usage and help, or an agent's description, model, tools and hooks; None otherwise."""
    cursor = max(0, min(cursor, len(line)))
    before = line[:cursor]
    line_start = before.rfind("\n") + 1
    line_end = line.find("\n", cursor)
    text = line[line_start:] if line_end < 0 else line[line_start:line_end]
    offset = cursor - line_start
    rest = after_prefix(text)
    if rest is None:
        return None
    words = [(m.start() + len(text) - len(rest), m.group()) for m in re.finditer(r"\S+", rest)]
    at = [i for i, (start, word) in enumerate(words) if start <= offset <= start + len(word)]
    if not at:
        return None
    index, word = at[0], words[at[0]][1]
    try:
        if index == 0 and word in subcommands():
            return help_output(session, [word])
        if index == 1 and words[0][1] == "use":
            agent, _ = session.rienda.agent(word)
        else:
            return None
    except RiendaError:
        return None
    facts = [f"agent {agent.id}: {agent.description or '(no description)'}", f"model: {agent.model_label}",
             f"tools: {', '.join(agent.tools) or 'none'}", f"hooks: {', '.join(agent.hooks) or 'none'}",
             f"file: {agent.path or 'built-in'}"]
    return CommandOutput("\n".join(facts), "\n\n".join(escape(fact) for fact in facts), agent)


def _candidates(session: TurnSession, words: list[str]) -> list[str]:
    if not words:
        return command_names(session)
    sub = subcommands().get(words[0])
    if len(words) > 1 or sub is None or sub.complete is None:
        return []
    return sub.complete(session)
