"""How many tokens a model's context window holds: :class:`Window`, and where it is read.

The first of these that knows decides (:meth:`.base.Provider.context_window`):

1. ``context_window: N`` in the agent's ``options:`` or the endpoint's ``providers:`` entry
   (the agent's wins); for Ollama also its own ``options: {num_ctx: N}``;
2. the server, where it says: llama.cpp's server reports its ``n_ctx`` at ``GET /props``
   (:func:`llama_props`, asked of an OpenAI- or Anthropic-format endpoint whose base URL
   is not the vendor's own); Ollama's ``POST /api/show`` gives the Modelfile's ``num_ctx``
   and the model's trained ``context_length`` (:func:`ollama_show`);
3. :data:`KNOWN_WINDOWS`, the windows of the OpenAI and Anthropic models, by name;
4. else unknown (None).

Asking a server is bounded (:data:`PROBE_TIMEOUT` to connect and to read): a server that
does not answer, answers an error or answers something else is "unknown", never a hang
and never an error for the run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..common.json_value import JSON

__all__ = ["KNOWN_WINDOWS", "OLLAMA_WINDOW", "PROBE_TIMEOUT", "Window", "configured_window", "known_window",
           "llama_props", "ollama_show"]

PROBE_TIMEOUT = 2.0  # seconds to connect, and to read the answer: a server asked for its window answers at once

OLLAMA_WINDOW = 8192  # the num_ctx Rienda sends Ollama when nothing sets one (the model's own length if smaller)

# Context windows (tokens) of the vendors' models, by name; a dated snapshot
# (gpt-4o-2024-08-06, claude-sonnet-4-5-20250929) matches its longest listed prefix.
KNOWN_WINDOWS: Mapping[str, int] = {
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "gpt-5-nano": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    "claude-": 200_000,  # every Claude model (the 1M-token beta needs a header Rienda does not send)
}


@dataclass(frozen=True)
class Window:
    """A model's context window: ``tokens``, and ``source``, where that figure came from
    (``config``, ``server``, ``table``, or for Ollama ``default``: the num_ctx Rienda chose)."""

    tokens: int
    source: str


def configured_window(options: Mapping[str, JSON]) -> Window | None:
    """The ``context_window`` these (checked) options set, or None."""
    tokens = _positive(options.get("context_window"))
    return Window(tokens, "config") if tokens else None


def known_window(model: str) -> Window | None:
    """The window :data:`KNOWN_WINDOWS` gives ``model`` (its longest matching prefix that
    ends at a ``-`` or the name's end), or None."""
    best = ""
    for name in KNOWN_WINDOWS:
        fits = model == name or (model.startswith(name) and (name.endswith("-") or model[len(name)] == "-"))
        if fits and len(name) > len(best):
            best = name
    return Window(KNOWN_WINDOWS[best], "table") if best else None


def llama_props(base_url: str) -> int | None:
    """The ``n_ctx`` a llama.cpp server at ``base_url`` (an OpenAI ``.../v1`` base or its
    origin) reports at ``GET /props`` (``default_generation_settings.n_ctx``: one slot's
    window); None when nothing answers that within the bound."""
    origin = re.sub(r"/v1/?$", "", base_url.rstrip("/"))
    data = _answer("GET", origin + "/props", {})
    settings = data.get("default_generation_settings") if isinstance(data, dict) else None
    return _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None


def ollama_show(host: str, model: str, headers: Mapping[str, str]) -> tuple[int | None, int | None]:
    """What an Ollama server at ``host`` says of ``model`` (``POST /api/show``): the
    ``num_ctx`` its Modelfile sets and the ``context_length`` it was trained for (each
    None when not said, or when the server does not answer within the bound)."""
    data = _answer("POST", host + "/api/show", dict(headers), json={"model": model})
    if not isinstance(data, dict):
        return None, None
    num_ctx = None
    parameters = data.get("parameters")
    if isinstance(parameters, str):
        found = re.search(r"^\s*num_ctx\s+(\d+)\s*$", parameters, re.M)
        num_ctx = int(found.group(1)) if found else None
    info = data.get("model_info")
    length = None
    if isinstance(info, dict):
        architecture = info.get("general.architecture")
        length = _positive(info.get(f"{architecture}.context_length"))
    return _positive(num_ctx), length


def _answer(method: str, url: str, headers: dict[str, str], json: JSON = None) -> JSON:
    """The JSON a 200 answer holds, or None (no answer in time, another status, not JSON)."""
    from .. import http  # here: a run whose model needs no HTTP never imports httpx

    timeout = http.httpx.Timeout(PROBE_TIMEOUT)
    try:
        response = http.client().request(method, url, headers=headers, timeout=timeout, json=json)
        return response.json() if response.status_code == 200 else None
    except (http.httpx.HTTPError, ValueError):  # no server, a timeout, a broken answer: unknown
        return None


def _positive(value: JSON) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
