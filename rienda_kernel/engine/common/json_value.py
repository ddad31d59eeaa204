"""JSON from outside, as one alias: the only place Rienda's code says ``Any``.

What a file, a model, an extension, an MCP server or another agent sends is parsed JSON of
unknown shape until it is checked; :data:`JSON` names such a value and :data:`JSONObject`
a JSON object. Everything past the check is a type of its own (a record, a message, a
setting), never an ``Any``.
"""

from __future__ import annotations

from typing import Any, TypeAlias

__all__ = ["JSON", "JSONObject"]

JSON: TypeAlias = Any  # a value parsed from JSON from outside, not yet checked
JSONObject: TypeAlias = dict[str, JSON]  # a JSON object from outside, not yet checked
