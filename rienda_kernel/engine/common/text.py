"""Text that crosses into the engine is valid Unicode.

JavaScript strings and JSON may hold lone surrogates (``'abc😀'.slice(0, 4)``, a
``"\\ud83d"`` escape from a server); Python keeps them in ``str`` but cannot encode them as
UTF-8, so a terminal, a session file or a notebook would fail on them later. Every
boundary where foreign text enters (the V8 bridge, a provider's stream) passes it through
:func:`repair` once; everything past that point may assume well-formed text.
"""

from __future__ import annotations

import re
from typing import overload

from .json_value import JSON

__all__ = ["REPLACEMENT", "repair"]

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile(r"[\ud800-\udfff]")


@overload
def repair(value: str) -> str: ...
@overload
def repair(value: JSON) -> JSON: ...
def repair(value: JSON) -> JSON:
    """``value`` with every lone surrogate in its strings (dict keys included, deeply through
    dicts, lists and tuples) replaced by U+FFFD, and surrogate pairs joined. Well-formed text is returned as is (the
    same object), so the common case costs one regex scan."""
    if isinstance(value, str):
        if _SURROGATE.search(value) is None:
            return value
        # Through UTF-16: a pair split in two Python code points joins again, a lone one
        # becomes U+FFFD.
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, dict):
        return {repair(key): repair(item) for key, item in value.items()}
    if isinstance(value, list):
        return [repair(item) for item in value]
    if isinstance(value, tuple):
        return tuple(repair(item) for item in value)
    return value
