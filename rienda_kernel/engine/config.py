"""Where Rienda's files live, the user's configuration, and redaction of secrets.

``RIENDA_HOME`` (default ``~/.rienda``) holds ``tools/``, ``hooks/``, ``agents/``,
``sessions/`` and ``config.yaml``. Extensions are read from there only, never from a
workspace.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError

__all__ = ["REDACTED", "load_config", "redact", "rienda_home", "yaml_problem"]

REDACTED = "[redacted]"
_SECRET_KEY = re.compile(r"(api[_-]?key|token|secret|password|passwd|authorization|credential)", re.I)


def rienda_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The Rienda home: ``home`` if given, else ``$RIENDA_HOME``, else ``~/.rienda``."""
    chosen = home if home is not None else os.environ.get("RIENDA_HOME") or "~/.rienda"
    return Path(chosen).expanduser().resolve()


def load_config(home: Path) -> dict[str, Any]:
    """Parse ``home/config.yaml`` (an empty dict when absent).

    Raises :class:`ConfigError` naming the file and line for malformed YAML or a
    document that is not a mapping.
    """
    path = home / "config.yaml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        line, problem = yaml_problem(exc)
        raise ConfigError(f"{path}:{line + 1 if line is not None else '?'}: malformed YAML: {problem}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings, got {type(data).__name__}")
    return data


def yaml_problem(exc: yaml.YAMLError) -> tuple[int | None, str]:
    """The 0-based line a YAML error points at (None if unknown) and what is wrong."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return (mark.line if mark else None), (getattr(exc, "problem", None) or str(exc))


def redact(value: Any) -> Any:
    """A deep copy of ``value`` in which every secret-looking key's value is replaced.

    A key is secret-looking when its name mentions a key, token, secret, password,
    authorization or credential, unless it ends in ``_env`` (the *name* of a variable).
    """
    if isinstance(value, dict):
        return {
            key: REDACTED if _is_secret(key, item) else redact(item) for key, item in value.items()
        }
    if isinstance(value, list):
        return [redact(item) for item in value]
    return value


def _is_secret(key: Any, value: Any) -> bool:
    name = str(key)
    return bool(_SECRET_KEY.search(name)) and not name.lower().endswith("_env") and value is not None
