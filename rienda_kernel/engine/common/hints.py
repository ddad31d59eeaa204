"""The "did you mean" hint: the one way Rienda names the closest of the words it knows;
and :func:`shown`, the one way a message names a value of the wrong kind.

Every message about a word it does not know (a setting, a key, a hook point, a command, an
agent) adds the closest known word the same way: :func:`did_you_mean` gives
``" (did you mean 'x'?)"``, or ``""`` when no known word is close enough (difflib's ratio
below ``cutoff``). :func:`closest` gives the words themselves, for a message that lists
them its own way.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable

__all__ = ["CUTOFF", "HINT", "LEADING_HINT", "closest", "did_you_mean", "shown"]

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


_KINDS: dict[type, str] = {str: "the string", bool: "the boolean", int: "the number", float: "the number",
                           list: "a list", dict: "a mapping", type(None): "nothing"}


def shown(value: object) -> str:
    """A value of the wrong kind as a message names it: ``the string '5'``, ``the number
    5``, ``the boolean True``, ``a list``, ``a mapping``, ``nothing``."""
    kind = _KINDS.get(type(value), type(value).__name__)
    return f"{kind} {value!r:.60}" if isinstance(value, (str, bool, int, float)) else kind
