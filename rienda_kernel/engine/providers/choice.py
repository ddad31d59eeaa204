"""Which model the built-in ``default`` agent runs when nothing names one.

The first of these that holds decides, the way users of agent tools expect:

1. ``default_model`` in ``config.yaml`` (the agent loader already applied it);
2. ``OPENAI_API_KEY`` set: :data:`OPENAI_MODEL`;
3. ``ANTHROPIC_API_KEY`` set: :data:`ANTHROPIC_MODEL`;
4. an Ollama server answering at ``OLLAMA_HOST`` (default ``127.0.0.1:11434``): its first
   local model.

With none of them :func:`choose_default_model` raises :class:`NoModelError`, whose message
names every way to give Rienda a model; it is raised before any session file exists.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError

__all__ = ["ANTHROPIC_MODEL", "OPENAI_MODEL", "ModelChoice", "NoModelError", "choose_default_model",
           "ollama_models"]

OPENAI_MODEL = "openai/gpt-4o"
ANTHROPIC_MODEL = "anthropic/claude-sonnet-4-5"
_PROBE_TIMEOUT = 1.0  # seconds: a local server answers at once, or is not there


@dataclass(frozen=True)
class ModelChoice:
    """The model chosen and, in a few words, why (shown to the user in one line)."""

    model: str
    reason: str

    def line(self) -> str:
        return (f"the default agent uses {self.model} ({self.reason}; "
                "set default_model in config.yaml to choose another)")


class NoModelError(ConfigError):
    """Nothing gives the default agent a model; the message lists every way to give one.

    ``markdown`` is the same advice for a notebook cell.
    """

    def __init__(self, config_path: Path, ollama_host: str) -> None:
        self.config_path = config_path
        self.ollama_host = ollama_host
        super().__init__(self.text())

    def _ways(self) -> list[tuple[str, str]]:
        return [
            ("export OPENAI_API_KEY=...", f"uses {OPENAI_MODEL}"),
            ("export ANTHROPIC_API_KEY=...", f"uses {ANTHROPIC_MODEL}"),
            ("ollama serve (then ollama pull qwen3)", f"uses the first local model at {self.ollama_host}"),
            (f"default_model: provider/model in {self.config_path}", "e.g. default_model: openai/gpt-4o-mini"),
            (f"a local server entry under providers: in {self.config_path}",
             "llama.cpp, vLLM, LM Studio...; then default_model: NAME/MODEL"),
        ]

    def text(self) -> str:
        lines = ["no model for the default agent; any one of these gives it one:"]
        lines += [f"  - {way}  ({what})" for way, what in self._ways()]
        lines.append("  or try Rienda offline first: rienda demo")
        return "\n".join(lines)

    @property
    def markdown(self) -> str:
        lines = ["**No model for the default agent.** Any one of these gives it one:", ""]
        lines += [f"- `{way}`: {what}" for way, what in self._ways()]
        lines += ["", "Or use an agent whose `model:` names one (`%rienda use AGENT`)."]
        return "\n".join(lines)


def choose_default_model(config_path: Path, environ: Mapping[str, str] | None = None) -> ModelChoice:
    """The model for the default agent when ``default_model`` is not set (see the module
    docstring); :class:`NoModelError` when there is none. Asks the Ollama host only when
    neither key is set."""
    environ = os.environ if environ is None else environ
    if environ.get("OPENAI_API_KEY", "").strip():
        return ModelChoice(OPENAI_MODEL, "OPENAI_API_KEY is set")
    if environ.get("ANTHROPIC_API_KEY", "").strip():
        return ModelChoice(ANTHROPIC_MODEL, "ANTHROPIC_API_KEY is set")
    host = _ollama_host(environ)
    models = ollama_models(host)
    if models:
        return ModelChoice(f"ollama/{models[0]}", f"an Ollama server answers at {host}")
    raise NoModelError(config_path, host)


def ollama_models(host: str) -> list[str]:
    """The local models an Ollama server at ``host`` lists (``GET /api/tags``), in its
    order; empty when nothing answers there, or it answers something else."""
    import httpx

    try:
        response = httpx.get(f"{host}/api/tags", timeout=_PROBE_TIMEOUT)
        models = response.json().get("models") if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return []
    if not isinstance(models, list):
        return []
    return [str(m["name"]) for m in models if isinstance(m, dict) and isinstance(m.get("name"), str) and m["name"]]


def _ollama_host(environ: Mapping[str, str]) -> str:
    from .ollama import DEFAULT_PORT, host_url

    return host_url(environ.get("OLLAMA_HOST") or f"127.0.0.1:{DEFAULT_PORT}")
