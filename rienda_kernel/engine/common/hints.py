"""The "did you mean" hint: the one way Rienda names the closest of the words it knows.

Every message about a word it does not know (a setting, a key, a hook point, a command, an
agent) adds the closest known word the same way: :func:`did_you_mean` gives
``" (did you mean 'x'?)"``, or ``""`` when no known word is close enough (difflib's ratio
below ``cutoff``). :func:`closest` gives the words themselves, for a message that lists
them its own way.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable

__all__ = ["CUTOFF", "HINT", "LEADING_HINT", "closest", "did_you_mean"]

CUTOFF = 0.6  # difflib's own: how alike two words must be (0 to 1) for one to be suggested
HINT = " (did you mean {}?)"  # after the word it is about
LEADING_HINT = "did you mean {}? "  # opening a parenthesis that goes on (``(did you mean 'x'? known: ...)``)


def closest(word: object, choices: Iterable[str], *, n: int = 1, cutoff: float = CUTOFF) -> list[str]:
    """Up to ``n`` of ``choices`` most like ``word`` (as text), best first; none below ``cutoff``."""
    return difflib.get_close_matches(str(word), list(choices), n=n, cutoff=cutoff)


def did_you_mean(word: object, choices: Iterable[str], *, cutoff: float = CUTOFF,
                 shown: Callable[[str], str] = repr, form: str = HINT) -> str:
    """``form`` (:data:`HINT` unless given) around the choice closest to ``word``, as
    ``shown`` writes it (quoted unless given); ``""`` when none is close enough."""
    found = closest(word, choices, cutoff=cutoff)
    return form.format(shown(found[0])) if found else ""
