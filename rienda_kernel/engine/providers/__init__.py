"""Model providers, keyed by the part of ``model`` before the first ``/``.

``provider_for("scripted/demo.yaml", config)`` returns the provider and the model name it
gets (``demo.yaml``). Built-in providers register exactly like any other, in
:data:`PROVIDERS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ConfigError
from .base import (
    Chunk,
    ModelRequest,
    Provider,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    ToolSpec,
    UsageChunk,
)
from .openai import OpenAIProvider
from .scripted import ScriptedProvider

__all__ = [
    "PROVIDERS",
    "Chunk",
    "ModelRequest",
    "Provider",
    "TextChunk",
    "ThinkingChunk",
    "ToolCallChunk",
    "ToolSpec",
    "UsageChunk",
    "provider_for",
]

# name -> factory(config) building the provider from the user's configuration.
PROVIDERS: dict[str, Callable[[Mapping[str, Any]], Provider]] = {
    "scripted": lambda config: ScriptedProvider(),
    "openai": lambda config: OpenAIProvider(),
}


def provider_for(model_id: str, config: Mapping[str, Any]) -> tuple[Provider, str]:
    """The provider for ``provider/model`` and the model name; ConfigError if unknown."""
    prefix, slash, name = model_id.partition("/")
    if not slash or not prefix or not name:
        raise ConfigError(f"model {model_id!r} must be provider/model, e.g. scripted/script.yaml")
    try:
        factory = PROVIDERS[prefix]
    except KeyError:
        known = ", ".join(sorted(PROVIDERS))
        raise ConfigError(f"model {model_id!r}: no provider named {prefix!r} (known: {known})") from None
    return factory(config), name
