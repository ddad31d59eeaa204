"""``compaction:`` in config.yaml: when a session is compacted, and what is kept.

    compaction:
      auto: true                # compact before a request would pass window - reserve
      reserve: 4096             # tokens left for the answer (default: a quarter of the window, at most 16,384)
      keep_recent_tokens: 8000  # recent messages kept verbatim (default: a quarter of the window, at most 20,000)
      model: openai/gpt-4o-mini # the summariser (default: the agent's own model)

``compaction: false`` is ``auto: false``: no automatic compaction, and a request the model
refuses for its length ends the run (manual compaction still works). Anything else is a
:class:`ConfigError` naming the file and the key (with the closest known key).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...common.hints import did_you_mean
from ...common.json_value import JSON
from ...errors import ConfigError

__all__ = ["CompactionSettings", "compaction_settings"]

_KEYS = ("auto", "reserve", "keep_recent_tokens", "model")


@dataclass(frozen=True)
class CompactionSettings:
    """How a session is compacted (see the module docstring); None: the default for the window."""

    auto: bool = True
    reserve: int | None = None
    keep_recent_tokens: int | None = None
    model: str | None = None

    def threshold(self, window: int) -> int:
        """The fill past which a request is compacted first: ``window - reserve``."""
        return window - self.reserve_for(window)

    def reserve_for(self, window: int) -> int:
        return self.reserve if self.reserve is not None else min(16_384, window // 4)

    def keep_recent_for(self, window: int | None) -> int:
        if self.keep_recent_tokens is not None:
            return self.keep_recent_tokens
        return 20_000 if window is None else min(20_000, window // 4)


def compaction_settings(value: JSON, where: str) -> CompactionSettings:
    """The settings of ``compaction:`` (``value``, None when absent) read from ``where``."""
    if value is None or value is True:
        return CompactionSettings()
    if value is False:
        return CompactionSettings(auto=False)
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: compaction must be false, or a mapping of {', '.join(_KEYS)}; got {value!r:.60}")
    for key in value:
        if key not in _KEYS:
            raise ConfigError(f"{where}: compaction: unknown key {key!r}{did_you_mean(key, _KEYS)}; "
                              f"known: {', '.join(_KEYS)}")
    auto = value.get("auto", True)
    if not isinstance(auto, bool):
        raise ConfigError(f"{where}: compaction.auto must be true or false, got {auto!r:.40}")
    counts = {key: _count(value.get(key), f"{where}: compaction.{key}") for key in ("reserve", "keep_recent_tokens")}
    model = value.get("model")
    if model is not None and not (isinstance(model, str) and "/" in model.strip("/")):
        raise ConfigError(f"{where}: compaction.model must be provider/model, e.g. openai/gpt-4o-mini; got {model!r:.60}")
    return CompactionSettings(auto, counts["reserve"], counts["keep_recent_tokens"], model)


def _count(value: JSON, where: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"{where} must be a whole number of tokens (0 or more), got {value!r:.40}")
    return value
