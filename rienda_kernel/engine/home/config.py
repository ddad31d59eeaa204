"""Where Rienda's files live, and the user's configuration (``config.yaml``).

``RIENDA_HOME`` (default ``~/.rienda``) holds ``tools/``, ``hooks/``, ``agents/``,
``sessions/`` and ``config.yaml``. Extensions are read from there only, never from a
workspace.

``config.yaml`` is a mapping of the settings in :data:`SETTINGS`, read once into a
:class:`Config` (:func:`check_config`) whose parts every reader uses: the providers'
endpoints, compaction, the gate, the MCP servers, the limits, the confirm policy, the
default model. A setting of the wrong type, or a key given twice (at any depth), is a
:class:`ConfigError` naming the file and line; an unknown key is a :class:`Diagnostic`
(with the closest known key) and is ignored; a setting left empty is not set.
``providers`` entries are checked by the provider registry when a model uses them;
``gate`` by a gate when it reads it (:func:`..gate.decision.gate_settings`);
``compaction`` and ``mcp_servers`` here, with their lines
(:mod:`..sessions.compaction.settings`, :mod:`..tools.mcp.settings`). Checking has no side effect: the MCP servers' secrets
become the process's where config.yaml is read to be used (:func:`read_config`,
``Rienda.config()``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..common.hints import did_you_mean, shown
from ..common.json_value import JSON, JSONObject
from ..errors import ConfigError
from ..events import Diagnostic
from ..secrets import redact_config
from ..sessions.compaction.settings import CompactionSettings, compaction_settings
from ..tools.mcp.settings import ServerSpec, parse_mcp_servers, remember_secrets
from ..ui import CONFIRM_POLICIES, ConfirmPolicy
from . import yaml_file

__all__ = ["DEFAULT_GATE_TIMEOUT", "SETTINGS", "Config", "GateConfig", "Limits", "check_config", "load_config",
           "provider_endpoints", "read_config", "rienda_home", "yaml_problem"]

CONFIG_SOURCE = "config"
DEFAULT_GATE_TIMEOUT = 10.0  # seconds; below every agent's own hook timeout (a hook it kills fails open in three)


@dataclass(frozen=True)
class Setting:
    """One top-level key of ``config.yaml``: ``accepts(value)`` says whether ``value``
    fits; ``expected`` says what does, for the error message."""

    accepts: Callable[[JSON], bool]
    expected: str


def _model_id(value: JSON) -> bool:
    provider, slash, name = value.partition("/") if isinstance(value, str) else ("", "", "")
    return bool(slash and provider.strip() and name.strip())


def _positive_number(value: JSON) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


SETTINGS: dict[str, Setting] = {
    "default_model": Setting(_model_id, "provider/model, e.g. openai/gpt-4o"),
    # The confirm policy: the same three words as --confirm, $RIENDA_CONFIRM and %rienda confirm.
    "confirm": Setting(lambda v: v in CONFIRM_POLICIES, f"one of {', '.join(CONFIRM_POLICIES)}"),
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


@dataclass(frozen=True)
class Limits:
    """How far a run may go; None: not set in config.yaml (the agent's, else the default)."""

    max_turns: int | None = None  # model turns in one run
    max_depth: int | None = None  # levels of sub-agents below a top-level run
    load_timeout: float | None = None  # seconds an extension file may take to load


@dataclass(frozen=True)
class GateConfig:
    """``gate:`` as written, checked only when a gate reads it, with the options of its
    command (:func:`..gate.decision.gate_settings`): ``agent`` (None: not set), ``timeout``
    and ``confirm`` (what the file says, the gate's defaults when absent), and the keys it
    does not know."""

    agent: str | None = None
    timeout: JSON = DEFAULT_GATE_TIMEOUT
    confirm: JSON = "ask"
    unknown: tuple[str, ...] = ()


@dataclass(frozen=True)
class Config:
    """``config.yaml``, read and checked once (:func:`check_config`), in the parts its
    readers use. ``confirm`` is ``confirm:``, else the older ``auto_approve:`` (true:
    ``allow``, false: ``deny``), else None. ``providers`` maps each endpoint's name to its
    entry, checked by the provider registry when a model uses it. ``diagnostics``: its
    unknown keys. ``raw``: the settings as written (unknown keys kept), for
    :meth:`for_extensions` only. ``path``: the file (an absent one is an empty Config)."""

    path: Path
    default_model: str | None = None
    confirm: ConfirmPolicy | None = None
    providers: Mapping[str, JSON] = field(default_factory=dict)
    compaction: CompactionSettings = CompactionSettings()
    gate: GateConfig = GateConfig()
    mcp_servers: Mapping[str, ServerSpec] = field(default_factory=dict)
    limits: Limits = Limits()
    diagnostics: tuple[Diagnostic, ...] = ()
    raw: JSONObject = field(default_factory=dict)

    def for_extensions(self) -> JSONObject:
        """What ``ctx.config`` shows: the settings as written, secrets redacted
        (:func:`..secrets.redact_config`)."""
        shown: JSONObject = redact_config(self.raw)
        return shown


def rienda_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The Rienda home: ``home`` if given, else ``$RIENDA_HOME``, else ``~/.rienda``."""
    chosen = home if home is not None else os.environ.get("RIENDA_HOME") or "~/.rienda"
    return Path(chosen).expanduser().resolve()


def load_config(home: Path) -> JSONObject:
    """The settings of ``home/config.yaml`` as written (an empty dict when absent); see :func:`read_config`."""
    return read_config(home)[0]


def read_config(home: Path) -> tuple[JSONObject, list[Diagnostic]]:
    """``home/config.yaml`` read to be used, for a program that wants the mapping: its
    settings as written (unknown keys kept, a front end may read its own; empty ones
    dropped) and a diagnostic per unknown key. ConfigError as for :func:`check_config`.
    From now on the MCP servers' secrets are the process's
    (:func:`..tools.mcp.settings.remember_secrets`)."""
    config = check_config(home)
    remember_secrets(config.mcp_servers.values())
    return config.raw, list(config.diagnostics)


def check_config(home: Path) -> Config:
    """Read and check ``home/config.yaml`` (an empty :class:`Config` when absent), with
    no side effect.

    Raises :class:`ConfigError` naming the file and line for malformed YAML, a document
    that is not a mapping, a setting of the wrong type, or a wrong ``compaction`` or
    ``mcp_servers`` entry.
    """
    path = home / "config.yaml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Config(path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    data, root, lines = _parse(path, text)
    diagnostics: list[Diagnostic] = []
    servers: dict[str, ServerSpec] = {}
    compaction = CompactionSettings()
    for key, value in list(data.items()):  # in the file's order: its first mistake is the one named
        line = lines.get(key, 1)
        setting = SETTINGS.get(key)
        if setting is None:
            diagnostics.append(_unknown(path, line, key))
        elif value is None:
            del data[key]
        elif not setting.accepts(value):
            raise ConfigError(f"{path}:{line}: {key} must be {setting.expected}, got {shown(value)}")
        elif key == "mcp_servers":
            servers, found = parse_mcp_servers(path, root, value)
            diagnostics += found
        elif key == "compaction":
            compaction = compaction_settings(value, f"{path}:{line}")
    return Config(
        path, default_model=data.get("default_model"), confirm=_confirm(data),
        providers=provider_endpoints(data.get("providers")), compaction=compaction,
        gate=_gate(data.get("gate") or {}), mcp_servers=servers,
        limits=Limits(data.get("max_turns"), data.get("max_depth"),
                      None if data.get("load_timeout") is None else float(data["load_timeout"])),
        diagnostics=tuple(diagnostics), raw=data)


def provider_endpoints(value: JSON) -> dict[str, JSON]:
    """The entries of ``providers:`` (``value``, None when absent) by name; a key that is
    not a name (``1:``) names no provider."""
    if not isinstance(value, Mapping):
        return {}
    return {name: entry for name, entry in value.items() if isinstance(name, str)}


def _confirm(data: JSONObject) -> ConfirmPolicy | None:
    """``confirm:`` (checked to be a policy), else ``auto_approve:``, else None."""
    for policy in CONFIRM_POLICIES:
        if data.get("confirm") == policy:
            return policy
    if "auto_approve" in data:
        return "allow" if data["auto_approve"] else "deny"
    return None


def _gate(section: JSONObject) -> GateConfig:
    known = GateConfig()
    return GateConfig(str(section["agent"]) if section.get("agent") else None,
                      section.get("timeout", known.timeout), section.get("confirm", known.confirm),
                      tuple(sorted(str(key) for key in set(section) - {"agent", "timeout", "confirm"})))


def _parse(path: Path, text: str) -> tuple[JSONObject, yaml.Node | None, dict[str, int]]:
    """The document as a dict, its node, and the 1-based line of each top-level key (read
    by :func:`.yaml_file.load`: no key twice, bounded depth and size)."""
    try:
        data, node, lines = yaml_file.load(text)
    except yaml_file.YAMLProblem as exc:
        raise ConfigError(f"{path}:{exc.line or '?'}: {exc.problem}") from exc
    if data is None:
        return {}, None, {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings, got {type(data).__name__}")
    return data, node, lines


def _unknown(path: Path, line: int, key: JSON) -> Diagnostic:
    return Diagnostic(CONFIG_SOURCE, f"{path}:{line}: unknown setting {key!r}{did_you_mean(key, SETTINGS)}; ignored "
                      f"(the settings are {', '.join(SETTINGS)})", path=str(path), line=line)



def yaml_problem(exc: yaml.YAMLError) -> tuple[int | None, str]:
    """The 0-based line a YAML error points at (None if unknown) and what is wrong."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return (mark.line if mark else None), (getattr(exc, "problem", None) or str(exc))
