"""Model providers, keyed by the part of ``model`` before the first ``/``.

``provider_for("scripted/demo.yaml", config)`` returns the provider and the model name it
gets (``demo.yaml``); ``config`` is config.yaml's :class:`~..home.config.Config` (its
``providers``), or a mapping of the same settings. A ``providers:`` entry is checked when a
model uses it: its unknown key is named (with "did you mean") before anything it leaves
missing (``ap: openai`` is not reported as an ``api`` missing). Built-in providers
register exactly like any other, in :data:`PROVIDERS`. Each built-in's module is imported
when a provider of its kind is first made: a run against an OpenAI-compatible endpoint
never loads the Anthropic one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ..common.hints import LEADING_HINT, did_you_mean
from ..common.json_value import JSON
from ..errors import ConfigError
from ..home.config import Config, provider_endpoints
from .options import CONNECTION_OPTIONS, Checker, check_options
from .base import (
    Chunk,
    ModelRequest,
    NoticeChunk,
    Provider,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    ToolSpec,
    UsageChunk,
    VendorStateChunk,
)

if TYPE_CHECKING:
    from .streaming import HttpProvider

__all__ = [
    "ENDPOINT_APIS",
    "PROVIDERS",
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
    "provider_for",
]


def _scripted() -> type[Provider]:
    from .scripted import ScriptedProvider

    return ScriptedProvider


def _openai() -> type[HttpProvider]:
    from .openai import OpenAIProvider

    return OpenAIProvider


def _anthropic() -> type[HttpProvider]:
    from .anthropic import AnthropicProvider

    return AnthropicProvider


def _ollama() -> type[HttpProvider]:
    from .ollama import OllamaProvider

    return OllamaProvider


# The built-in providers' classes by name, each imported (its module) when first asked for;
# those that speak HTTP are also the ``api:`` of a named endpoint.
_BUILTIN: dict[str, Callable[[], type[Provider]]] = {"scripted": _scripted, "openai": _openai,
                                                    "anthropic": _anthropic, "ollama": _ollama}
_HTTP_APIS: dict[str, Callable[[], type[HttpProvider]]] = {"openai": _openai, "anthropic": _anthropic,
                                                         "ollama": _ollama}


def _default_factory(name: str) -> Callable[[Mapping[str, JSON]], Provider]:
    return lambda endpoints: _BUILTIN[name]()()


def _endpoint_builder(api: str) -> Callable[[Mapping[str, JSON], str], Provider]:
    return lambda options, name: _HTTP_APIS[api]().from_options(options, name)


# name -> factory(endpoints) building the provider; ``endpoints``: config.yaml's ``providers:`` entries by name.
PROVIDERS: dict[str, Callable[[Mapping[str, JSON]], Provider]] = {name: _default_factory(name) for name in _BUILTIN}


# api -> builder(options, name) for named endpoints in config.yaml (``providers: NAME: {api: ...}``).
ENDPOINT_APIS: dict[str, Callable[[Mapping[str, JSON], str], Provider]] = {
    api: _endpoint_builder(api) for api in _HTTP_APIS
}


def provider_for(model_id: str, config: Config | Mapping[str, JSON]) -> tuple[Provider, str]:
    """The provider for ``provider/model`` and the model name; ConfigError if unknown.

    ``providers: NAME: {api, base_url, api_key_env, ...}`` in config.yaml defines a named
    endpoint (``model: NAME/...``), or configures a built-in provider of that name; its
    entry is checked here, when a model uses it. ``config``: the :class:`Config`, or a
    mapping of the same settings (a program's own, read as config.yaml's would be).
    """
    prefix, slash, name = model_id.partition("/")
    if not slash or not prefix or not name:
        raise ConfigError(f"model {model_id!r} must be provider/model, e.g. scripted/script.yaml")
    endpoints = config.providers if isinstance(config, Config) else provider_endpoints(config.get("providers"))
    if prefix in endpoints:
        return _endpoint(prefix, endpoints[prefix]), name
    try:
        factory = PROVIDERS[prefix]
    except KeyError as exc:
        names = sorted(set(PROVIDERS) | set(endpoints))
        hint = did_you_mean(prefix, names, form=LEADING_HINT)
        raise ConfigError(f"model {model_id!r}: no provider named {prefix!r} ({hint}known: {', '.join(names)}; "
                          "add one under providers: in config.yaml)") from exc
    return factory(endpoints), name


def _endpoint(name: str, entry: JSON) -> Provider:
    if not isinstance(entry, Mapping):
        raise ConfigError(f"config.yaml: providers.{name} must be a mapping (api, base_url, api_key_env...)")
    options = dict(entry)
    api = options.pop("api", name)
    if api not in ENDPOINT_APIS and "api" not in entry:  # a misspelt key (ap:) is named before the api it hides
        known: dict[str, Checker] = {"api": str, **CONNECTION_OPTIONS, **{
            option: check for kind in ENDPOINT_APIS for option, check in _HTTP_APIS[kind]().request_options.items()}}
        if set(entry) - set(known):
            check_options(entry, known, f"config.yaml: providers.{name}")  # raises: the unknown, with "did you mean"
    if api not in ENDPOINT_APIS:
        raise ConfigError(f"config.yaml: providers.{name}: api {api!r} is not available "
                          f"(available: {', '.join(sorted(ENDPOINT_APIS))})")
    return ENDPOINT_APIS[api](options, name)
