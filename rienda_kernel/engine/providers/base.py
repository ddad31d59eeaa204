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
from typing import Literal

from ..cancel import CancelToken
from ..common.json_value import JSON, JSONObject
from ..errors import ConfigError
from ..sessions.messages import Message, ToolCall, Usage
from .window import Window, configured_window, known_window

__all__ = [
    "Chunk",
    "ModelRequest",
    "NoticeChunk",
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
    parameters: Mapping[str, JSON]  # the tool's JSON Schema, as its extension or server gave it

    def as_function(self) -> JSONObject:
        """The definition OpenAI's and Ollama's APIs take: ``{"type": "function", ...}``."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)}}


@dataclass(frozen=True)
class ModelRequest:
    """One model turn: ``model`` is the part of ``provider/model`` after the first ``/``;
    ``options`` are the agent's (front matter ``options:``), checked by
    :meth:`Provider.preflight`, overriding the endpoint's own. ``purpose`` is ``turn`` (an
    agent's model turn) or ``compaction`` (the summariser's request, :mod:`..runtime.compactor`)."""

    model: str
    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    workdir: Path = Path(".")
    options: Mapping[str, JSON] = field(default_factory=dict)
    purpose: Literal["turn", "compaction"] = "turn"


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

    state: Mapping[str, JSON]


@dataclass(frozen=True)
class NoticeChunk:
    """Something the user should hear about while waiting, e.g. ``title`` "HTTP 503:
    Loading model", ``body`` "retrying (1/3) in 1 s". ``source`` names the endpoint."""

    source: str
    title: str
    body: str


Chunk = TextChunk | ThinkingChunk | ToolCallChunk | UsageChunk | VendorStateChunk | NoticeChunk


class Provider(ABC):
    """One model vendor (or the scripted model). Instances may be reused across turns."""

    def preflight(self, model: str, options: Mapping[str, JSON], where: str, *, workdir: Path) -> None:
        """Check, before a run saves anything, whatever can fail before the first request:
        the key is set and fits in a header, the URL is one, a file the model names (the
        scripted model's script, relative to ``workdir``) can be read, the agent's
        ``options`` (read from ``where``, e.g. the agent file) are known and well formed.
        Raises :class:`ConfigError` naming ``where`` and the option (or the file, the
        setting), or :class:`ProviderError` naming the key's variable."""
        if options:
            raise ConfigError(f"{where}: options: this model takes no options "
                              f"(got {', '.join(sorted(options))})")

    def context_window(self, model: str, options: Mapping[str, JSON]) -> Window | None:
        """``model``'s context window (:mod:`.window`): ``context_window`` in the agent's
        ``options`` (checked by :meth:`preflight`), else the table's; None when unknown.
        Never raises; an endpoint that asks its server bounds the wait."""
        return configured_window(options) or known_window(model)

    @abstractmethod
    def stream(self, request: ModelRequest, cancel: CancelToken) -> Iterator[Chunk]:
        """Yield the response's chunks as they arrive."""
