"""An MCP ``CallToolResult`` as what the model reads: text, and whether it is an error.

- Text items are joined with newlines, as they are.
- Every other item is described in one line, never dropped silently: ``[image: image/png,
  12 bytes]``, ``[audio: audio/wav, 3 KiB]``, ``[resource file:///a.txt (text/plain): 120
  characters]``, ``[resource link: file:///b.txt (b.txt)]``.
- No content but structured content: the structured content as JSON.
- ``isError`` is the server's ``isError``.
- A reply the line reader cut (past 16 MiB: :mod:`.reducer`, ``_meta["rienda/cut"]``) says so
  as every capped result says it (``[rienda: output cut at 256 KiB]``, at the end of what
  the model reads), and an item whose base64 was left out is described with its size.

Works on the SDK's pydantic models by attribute, so nothing here imports the SDK (its
types only for the checker). The cap (256 KiB) and the scrubbing are the engine's, as for
every tool.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING

from ...common.json_value import JSON, JSONObject
from ..invoke import CUT_NOTE
from .reducer import CUT_KEY

if TYPE_CHECKING:
    from mcp.types import CallToolResult, ContentBlock

__all__ = ["result_text"]


def result_text(result: CallToolResult) -> tuple[str, bool]:
    """``(text, is_error)`` for a ``CallToolResult``."""
    cut = _cut(result)
    given = cut.get("sizes")
    sizes: JSONObject = given if isinstance(given, dict) else {}
    parts = [_item(item, f"content.{index}", sizes)
             for index, item in enumerate(getattr(result, "content", None) or [])]
    structured = getattr(result, "structured_content", None)
    used = "content"
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
        used = "structuredContent"
    text = "\n".join(parts)
    if used in (cut.get("cut") or ()):  # what the model reads was cut in the reply: it says so
        text += CUT_NOTE
    return text, bool(getattr(result, "is_error", False))


def _cut(result: CallToolResult) -> JSONObject:
    """What the line reader cut of this reply (``_meta["rienda/cut"]``); {} for nothing."""
    meta = getattr(result, "meta", None)
    cut = meta.get(CUT_KEY) if isinstance(meta, dict) else None
    return cut if isinstance(cut, dict) else {}


def _item(item: ContentBlock, where: str, sizes: JSONObject) -> str:
    if item.type == "text":
        return str(item.text)
    if item.type in ("image", "audio"):
        size = _size(getattr(item, "data", ""), sizes.get(f"{where}.data"))
        return f"[{item.type}: {getattr(item, 'mime_type', None) or 'unknown type'}, {size}]"
    if item.type == "resource":
        resource = item.resource
        mime = getattr(resource, "mime_type", None)
        text = getattr(resource, "text", None)
        what = (f"{len(text)} characters" if isinstance(text, str)
                else _size(getattr(resource, "blob", ""), sizes.get(f"{where}.resource.blob")))
        return f"[resource {resource.uri}{f' ({mime})' if mime else ''}: {what}]"
    if item.type == "resource_link":
        return f"[resource link: {item.uri} ({item.name})]"
    return f"[{getattr(item, 'type', None) or type(item).__name__} item]"  # a kind this SDK version added


def _size(data: str, left_out: JSON = None) -> str:
    """The size of base64 ``data`` once decoded, for a person; ``left_out``: how many
    characters of base64 the line reader left out instead (then about 3 bytes for 4)."""
    if isinstance(left_out, int):
        size = left_out * 3 // 4
    else:
        try:
            size = len(base64.b64decode(data, validate=False))
        except (binascii.Error, ValueError):
            size = len(data)
    if size < 1024:
        return f"{size} bytes"
    return f"{size / 1024:.0f} KiB" if size < 1024 * 1024 else f"{size / 1024 / 1024:.1f} MiB"
