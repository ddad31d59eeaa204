"""What a rewriting hook point saw, kept in the session for replay.

``afterModelResponse`` and ``afterToolExecute`` rewrite what is saved, so the session holds
their output, not their input; replaying the saved text through the same hooks would feed
them their own output (``'raw [audited]' -> 'raw [audited] [audited]'``). The loop keeps the
input in the saved message's ``meta["saw"]`` whenever a hook handles that point: ``{}`` when
the hooks changed nothing, else one entry per field they changed, holding what the chain
was given for it.

What a hook removes is never written (the contract of ``afterModelResponse``: a redacted
card number must not reach the file by another door). So a text field's input is kept
only as pieces of the saved text itself: ``{"of": len(saved), "pieces": [[start, end],
...]}``, possible when the hooks only added to the text (an appended note, a prefix, a
wrapper). When they removed or replaced any of it, the entry is ``None`` (withheld): replay
then says it cannot check that field. A flag (``isError``) is kept as it was.

:func:`saw` builds the entry; :func:`recover` reads one back against the saved text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from difflib import SequenceMatcher
from typing import TYPE_CHECKING

from ..common.json_value import JSON, JSONObject

if TYPE_CHECKING:
    from ..tools.model import Hook

__all__ = ["MIN_PIECE", "WITHHELD", "pieces", "recover", "saw"]

MIN_PIECE = 8  # shorter pieces could spell out what a hook removed, character by character
_DIFF_LIMIT = 64 * 1024  # characters of input and output beyond which only a single piece is looked for
WITHHELD = None


def saw(hooks: Iterable[Hook], point: str, fields: Mapping[str, tuple[JSON, JSON]]) -> JSONObject | None:
    """``meta["saw"]`` for one point: None when no hook in ``hooks`` handles ``point``;
    else an entry for each field whose (input, output) pair in ``fields`` differs."""
    if not any(point in hook.points for hook in hooks):
        return None
    kept: JSONObject = {}
    for name, (given, made) in fields.items():
        if given == made and type(given) is type(made):
            continue
        if isinstance(given, str) and isinstance(made, str):
            found = pieces(given, made)
            kept[name] = WITHHELD if found is None else {"of": len(made), "pieces": found}
        else:
            kept[name] = given
    return kept


def pieces(given: str, made: str) -> list[list[int]] | None:
    """``given`` as ``[start, end]`` slices of ``made`` in order, when ``made`` is ``given``
    with text added (each piece at least :data:`MIN_PIECE` characters, unless it is the
    whole of ``given``); None when anything of ``given`` was removed or replaced."""
    if not given:
        return []
    at = made.find(given)
    if at >= 0:
        return [[at, at + len(given)]]
    if len(given) + len(made) > _DIFF_LIMIT:
        return None
    found: list[list[int]] = []
    for tag, _, _, start, end in SequenceMatcher(None, given, made, autojunk=False).get_opcodes():
        if tag == "equal":
            found.append([start, end])
        elif tag != "insert":
            return None
    if any(end - start < MIN_PIECE for start, end in found):
        return None
    return found


def recover(entry: JSON, saved: str) -> str | None:
    """The input an entry of :func:`saw` describes, read from ``saved``; None when it was
    withheld, or ``saved`` is not the text it was taken from (a scrubbed secret changed it)."""
    if not isinstance(entry, dict) or entry.get("of") != len(saved):
        return None
    found = entry.get("pieces")
    if not isinstance(found, list) or not all(isinstance(p, list) and len(p) == 2 and all(
            isinstance(i, int) and 0 <= i <= len(saved) for i in p) for p in found):
        return None
    return "".join(saved[start:end] for start, end in found)
