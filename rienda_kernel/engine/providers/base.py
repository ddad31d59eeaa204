"""What every model provider implements, and what it streams back.

A provider turns the engine's conversation into its vendor's request and the vendor's
stream back into :data:`Chunk` values, yielded as they arrive. It raises
:class:`ProviderError` (message: what failed and what the server sent) and stops promptly
with :class:`Interrupted` once the cancel token is set.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cancel import CancelToken
from ..messages import Message, ToolCall, Usage

__all__ = [
    "Chunk",
    "ModelRequest",
    "Provider",
    "TextChunk",
    "ThinkingChunk",
    "ToolCallChunk",
    "ToolSpec",
    "UsageChunk",
    "VendorStateChunk",
]


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def as_function(self) -> dict[str, Any]:
        """The definition OpenAI's and Ollama's APIs take: ``{"type": "function", ...}``."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)}}


@dataclass(frozen=True)
class ModelRequest:
    """One model turn: ``model`` is the part of ``provider/model`` after the first ``/``."""

    model: str
    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    workdir: Path = Path(".")


@dataclass(frozen=True)
class TextChunk:
    text: str


@dataclass(frozen=True)
class ThinkingChunk:
    text: str


@dataclass(frozen=True)
class ToolCallChunk:
    """A complete tool call (providers assemble streamed argument pieces themselves)."""

    call: ToolCall


@dataclass(frozen=True)
class UsageChunk:
    usage: Usage


@dataclass(frozen=True)
class VendorStateChunk:
    """What the vendor needs sent back with this turn in later requests, keyed by wire
    format (e.g. ``{"anthropic": {"thinking": [signed blocks]}}``).

    The loop saves it in the assistant message's ``meta["vendor"]``, unless an
    ``afterModelResponse`` hook changed the thinking it vouches for.
    """

    state: Mapping[str, Any]


Chunk = TextChunk | ThinkingChunk | ToolCallChunk | UsageChunk | VendorStateChunk


class Provider(ABC):
    """One model vendor (or the scripted model). Instances may be reused across turns."""

    @abstractmethod
    def stream(self, request: ModelRequest, cancel: CancelToken) -> Iterator[Chunk]:
        """Yield the response's chunks as they arrive."""
