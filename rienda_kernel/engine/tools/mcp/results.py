"""An MCP ``CallToolResult`` as what the model reads: text, and whether it is an error.

- Text items are joined with newlines, as they are.
- Every other item is described in one line, never dropped silently: ``[image: image/png,
  12 bytes]``, ``[audio: audio/wav, 3 KiB]``, ``[resource file:///a.txt (text/plain): 120
  characters]``, ``[resource link: file:///b.txt (b.txt)]``.
- No content but structured content: the structured content as JSON.
- ``isError`` is the server's ``isError``.

Works on the SDK's pydantic models by attribute, so nothing here imports the SDK (its
types only for the checker). The cap (256 KiB) and the scrubbing are the engine's, as for
every tool.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp.types import CallToolResult, ContentBlock

__all__ = ["result_text"]


def result_text(result: CallToolResult) -> tuple[str, bool]:
    """``(text, is_error)`` for a ``CallToolResult``."""
    parts = [_item(item) for item in (getattr(result, "content", None) or [])]
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts), bool(getattr(result, "is_error", False))


def _item(item: ContentBlock) -> str:
    if item.type == "text":
        return str(item.text)
    if item.type in ("image", "audio"):
        return f"[{item.type}: {getattr(item, 'mime_type', None) or 'unknown type'}, {_size(getattr(item, 'data', ''))}]"
    if item.type == "resource":
        resource = item.resource
        mime = getattr(resource, "mime_type", None)
        text = getattr(resource, "text", None)
        what = f"{len(text)} characters" if isinstance(text, str) else _size(getattr(resource, "blob", ""))
        return f"[resource {resource.uri}{f' ({mime})' if mime else ''}: {what}]"
    if item.type == "resource_link":
        return f"[resource link: {item.uri} ({item.name})]"
    return f"[{getattr(item, 'type', None) or type(item).__name__} item]"  # a kind this SDK version added


def _size(data: str) -> str:
    """The size of base64 ``data`` once decoded, for a person."""
    try:
        size = len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        size = len(data)
    if size < 1024:
        return f"{size} bytes"
    return f"{size / 1024:.0f} KiB" if size < 1024 * 1024 else f"{size / 1024 / 1024:.1f} MiB"
