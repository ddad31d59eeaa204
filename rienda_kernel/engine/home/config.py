"""Where Rienda's files live, and the user's configuration (``config.yaml``).

``RIENDA_HOME`` (default ``~/.rienda``) holds ``tools/``, ``hooks/``, ``agents/``,
``sessions/`` and ``config.yaml``. Extensions are read from there only, never from a
workspace.

``config.yaml`` is a mapping of the settings in :data:`SETTINGS`. A setting of the wrong
type, or a key given twice (at any depth), is a :class:`ConfigError` naming the file and
line; an unknown key is a
:class:`Diagnostic` (with the closest known key) and is ignored; a setting left empty is
not set. ``providers`` entries are checked by the provider registry when a model uses them;
``mcp_servers`` entries here, with their lines (:mod:`..tools.mcp.settings`).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from ..events import Diagnostic
from ..sessions.compaction.settings import compaction_settings
from . import yaml_file

__all__ = ["SETTINGS", "load_config", "read_config", "rienda_home", "yaml_problem"]

CONFIG_SOURCE = "config"


@dataclass(frozen=True)
class Setting:
    """One top-level key of ``config.yaml``: ``accepts(value)`` says whether ``value``
    fits; ``expected`` says what does, for the error message."""

    accepts: Callable[[Any], bool]
    expected: str


def _model_id(value: Any) -> bool:
    provider, slash, name = value.partition("/") if isinstance(value, str) else ("", "", "")
    return bool(slash and provider.strip() and name.strip())


def _positive_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


SETTINGS: dict[str, Setting] = {
    "default_model": Setting(_model_id, "provider/model, e.g. openai/gpt-4o"),
    # The confirm policy: the same three words as --confirm, $RIENDA_CONFIRM and %rienda confirm.
    "confirm": Setting(lambda v: v in ("ask", "allow", "deny"), "one of ask, allow, deny"),
    # The older spelling of confirm: true is allow, false is deny (confirm wins when both are set).
    "auto_approve": Setting(lambda v: isinstance(v, bool), "true or false (a YAML boolean, without quotes)"),
    "providers": Setting(lambda v: isinstance(v, dict), "a mapping of provider names to their settings"),
    "max_turns": Setting(lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0,
                         "a positive whole number of model turns"),
    "load_timeout": Setting(_positive_number, "a positive number of seconds"),
    "mcp_servers": Setting(lambda v: isinstance(v, dict), "a mapping of MCP server names to their settings"),
    # rienda gate: which agent decides, its bound in seconds, its confirm policy (checked by engine/gate).
    "gate": Setting(lambda v: isinstance(v, dict), "a mapping of agent, timeout and confirm"),
    # How many levels of sub-agents (the agent tool) may run below a top-level run; 0: none.
    "max_depth": Setting(lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                         "a whole number of sub-agent levels (0 or more)"),
    # When a long session is compacted (sessions/compaction/settings.py checks the mapping).
    "compaction": Setting(lambda v: isinstance(v, (bool, dict)),
                          "false, or a mapping of auto, reserve, keep_recent_tokens and model"),
}


def rienda_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The Rienda home: ``home`` if given, else ``$RIENDA_HOME``, else ``~/.rienda``."""
    chosen = home if home is not None else os.environ.get("RIENDA_HOME") or "~/.rienda"
    return Path(chosen).expanduser().resolve()


def load_config(home: Path) -> dict[str, Any]:
    """The settings of ``home/config.yaml`` (an empty dict when absent); see :func:`read_config`."""
    return read_config(home)[0]


def read_config(home: Path) -> tuple[dict[str, Any], list[Diagnostic]]:
    """Parse and check ``home/config.yaml``: its settings, and a diagnostic per unknown key.

    Raises :class:`ConfigError` naming the file and line for malformed YAML, a document
    that is not a mapping, or a setting of the wrong type. Unknown keys are kept in the
    settings (a front end may read its own), empty ones are dropped.
    """
    path = home / "config.yaml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, []
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    data, lines = _parse(path, text)
    diagnostics = []
    for key, value in list(data.items()):
        line = lines.get(key, 1)
        setting = SETTINGS.get(key)
        if setting is None:
            diagnostics.append(_unknown(path, line, key))
        elif value is None:
            del data[key]
        elif not setting.accepts(value):
            raise ConfigError(f"{path}:{line}: {key} must be {setting.expected}, got {_shown(value)}")
        elif key == "mcp_servers":
            from ..tools.mcp.settings import check_mcp_servers

            diagnostics += check_mcp_servers(path, text, value)
        elif key == "compaction":
            compaction_settings(value, f"{path}:{line}")
    return data, diagnostics


def _parse(path: Path, text: str) -> tuple[dict[Any, Any], dict[Any, int]]:
    """The document as a dict and the 1-based line of each top-level key (read by
    :func:`.yaml_file.load`: no key twice, bounded depth and size)."""
    try:
        data, node, lines = yaml_file.load(text)
    except yaml_file.YAMLProblem as exc:
        raise ConfigError(f"{path}:{exc.line or '?'}: {exc.problem}") from exc
    if data is None:
        return {}, {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings, got {type(data).__name__}")
    return data, lines


def _unknown(path: Path, line: int, key: Any) -> Diagnostic:
    close = difflib.get_close_matches(str(key), SETTINGS, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return Diagnostic(CONFIG_SOURCE, f"{path}:{line}: unknown setting {key!r}{hint}; ignored "
                      f"(the settings are {', '.join(SETTINGS)})", path=str(path), line=line)


def _shown(value: Any) -> str:
    kind = {str: "the string", bool: "the boolean", int: "the number", float: "the number",
            list: "a list", dict: "a mapping"}.get(type(value), type(value).__name__)
    return f"{kind} {value!r:.60}" if not isinstance(value, (list, dict)) else kind


def yaml_problem(exc: yaml.YAMLError) -> tuple[int | None, str]:
    """The 0-based line a YAML error points at (None if unknown) and what is wrong."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return (mark.line if mark else None), (getattr(exc, "problem", None) or str(exc))
