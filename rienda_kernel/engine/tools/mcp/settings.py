"""``mcp_servers`` in ``config.yaml``: checked with file and line, turned into :class:`ServerSpec`.

::

    mcp_servers:
      time:                       # a stdio server: Rienda starts and stops it
        command: python
        args: [-m, mcp_server_time]
        env: {TZ: UTC}            # optional: added to the SDK's minimal environment
        cwd: /path                # optional: relative to the workspace; default the workspace
        start_timeout: 30         # optional: seconds to answer initialize and tools/list
      docs:                       # a remote server over streamable HTTP
        url: https://example.test/mcp
        headers: {Authorization: Bearer ...}

A server has ``command`` or ``url``, never both (``type: stdio`` / ``type: http`` may say
which, as in Claude Code's and VS Code's files). A value of the wrong type, a missing or
conflicting key, or a server name that cannot make ``mcp__SERVER__TOOL`` names is a
:class:`ConfigError` starting ``<file>:<line>:``; an unknown key is a :class:`Diagnostic`
with the closest known key, and is ignored. Unknown keys are checked before missing ones:
``comand:`` without ``command:`` is an error naming ``comand`` ("did you mean
'command'?"), not one saying that ``command`` is missing.

Checking has no side effect. Every ``headers`` value is a secret, and so is what the
process environment's rule finds in ``env`` (:func:`..secrets.secrets_in`: a
secret-named variable's value, a URL's password): :attr:`ServerSpec.secrets`. Whoever
reads config.yaml to use it (``Rienda.config()``, :func:`..home.config.read_config`) and
whoever starts the servers hands them to :func:`remember_secrets`, so that no output
shows them from then on. Other ``env`` values (a path, a mode) are shown as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ...common.hints import did_you_mean
from ...common.json_value import JSON
from ...errors import ConfigError
from ...events import Diagnostic
from ...secrets import remember, secrets_in

__all__ = ["DEFAULT_START_TIMEOUT", "ServerSpec", "parse_mcp_servers", "remember_secrets"]

DEFAULT_START_TIMEOUT = 30.0
SERVER_NAME = re.compile(r"(?!.*__)[A-Za-z0-9_-]{0,63}[A-Za-z0-9-]")
_KEYS = ("type", "command", "args", "env", "cwd", "url", "headers", "start_timeout")
_STDIO_ONLY = ("args", "env", "cwd")
_TYPES = {"stdio": "command", "http": "url", "streamable-http": "url", "streamable_http": "url"}


@dataclass(frozen=True)
class ServerSpec:
    """One configured server. ``command`` (with ``args``, ``env``, ``cwd``) for a stdio
    server Rienda starts, or ``url`` (with ``headers``) for a streamable HTTP one. Two
    specs are equal when they would start the same server."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    start_timeout: float = DEFAULT_START_TIMEOUT
    where: str = field(default="config.yaml", compare=False)

    @property
    def kind(self) -> str:
        return "stdio" if self.command is not None else "http"

    def describe(self) -> str:
        """What the server is, for messages: its command line or its URL (never env or headers)."""
        return " ".join((self.command or "", *self.args)) if self.command is not None else str(self.url)

    @property
    def secrets(self) -> tuple[str, ...]:
        """What no output may show: every ``headers`` value, and the secrets of ``env`` by
        the process environment's rule (:func:`..secrets.secrets_in`)."""
        return (*secrets_in(dict(self.env)), *(value for _, value in self.headers))


def remember_secrets(specs: Iterable[ServerSpec]) -> None:
    """Make the servers' :attr:`~ServerSpec.secrets` the process's secrets from now on
    (:func:`..secrets.remember`): the one side effect of MCP settings, done by whoever uses them."""
    for spec in specs:
        for secret in spec.secrets:
            remember(secret)


def parse_mcp_servers(path: Path, root: yaml.Node | None, value: JSON) -> tuple[dict[str, ServerSpec],
                                                                                   list[Diagnostic]]:
    """The servers of ``mcp_servers`` (``value``, in the document ``root`` read from
    ``path``) by name, and the diagnostics of their unknown keys; ConfigError for anything
    else wrong. No side effect (see :func:`remember_secrets`)."""
    lines = _Lines(path, root)
    if not isinstance(value, dict):
        raise ConfigError(f"{lines.at()}: mcp_servers must be a mapping of server names to their settings "
                          "(command and args, or url)")
    specs: dict[str, ServerSpec] = {}
    diagnostics: list[Diagnostic] = []
    for name, entry in value.items():
        where = lines.at(name)
        if not isinstance(name, str) or not SERVER_NAME.fullmatch(name):
            raise ConfigError(f"{where}: mcp_servers: {name!r} is not a valid server name (1 to 64 letters, "
                              "digits, '_' or '-', without '__' and not ending in '_': its tools are named "
                              "mcp__SERVER__TOOL)")
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: mcp_servers.{name} must be a mapping (command and args, or url), "
                              f"got {_shown(entry)}")
        diagnostics += _check_server(name, entry, lines)
        specs[name] = _spec(name, entry, where)
    return specs, diagnostics


def _spec(name: str, entry: dict[JSON, JSON], where: str) -> ServerSpec:
    """The server of a checked entry (its unknown keys left out)."""
    return ServerSpec(
        name=name, command=entry.get("command"), args=tuple(str(a) for a in entry.get("args") or ()),
        env=tuple(sorted((entry.get("env") or {}).items())), cwd=entry.get("cwd"), url=entry.get("url"),
        headers=tuple((entry.get("headers") or {}).items()),
        start_timeout=float(entry.get("start_timeout") or DEFAULT_START_TIMEOUT), where=where)


_At = Callable[..., str]  # the ``<file>:<line>`` of a key of one server, by its path of keys


def _check_server(name: str, entry: dict[JSON, JSON], lines: _Lines) -> list[Diagnostic]:
    def at(*keys: object) -> str:
        return lines.at(name, *keys)

    label = f"mcp_servers.{name}"
    diagnostics = []
    unknown = []  # (key, what is wrong with it), checked before anything missing
    for key in entry:
        if key not in _KEYS:
            unknown.append((key, f"{at(key)}: unknown key {key!r} in {label}{did_you_mean(key, _KEYS)}"))
            diagnostics.append(Diagnostic("config", f"{unknown[-1][1]}; ignored (the keys are {', '.join(_KEYS)})",
                                          path=str(lines.path), line=lines.line(name, key)))
    kind = entry.get("type")
    if kind is not None and kind not in _TYPES:
        raise ConfigError(f"{at('type')}: {label}.type must be stdio or http (streamable HTTP), got {_shown(kind)}")
    if "command" in entry and "url" in entry:
        raise ConfigError(f"{at('url')}: {label} has both command and url; a server is started (command) "
                          "or reached (url), not both")
    needed = _TYPES[kind] if kind else ("url" if "url" in entry else "command")
    if needed not in entry:
        missing = f"{label} needs {needed}" + (" (the program to start)" if needed == "command"
                                               else " (the server's http:// or https:// URL)")
        if unknown:  # a misspelt key is what to fix, not the key it was meant to be
            raise ConfigError(f"{'; '.join(what for _, what in unknown)}; so {missing}")
        raise ConfigError(f"{at()}: {missing}")
    _string(entry, needed, label, at, nonempty=True)
    if needed == "url":
        if not re.match(r"https?://", entry["url"]):
            raise ConfigError(f"{at('url')}: {label}.url must start with http:// or https://, got {entry['url']!r}")
        for key in _STDIO_ONLY:
            if key in entry:
                raise ConfigError(f"{at(key)}: {label}.{key} is for a server Rienda starts (command); "
                                  "a url server takes headers")
        _strings(entry, "headers", label, at)
    else:
        if "headers" in entry:
            raise ConfigError(f"{at('headers')}: {label}.headers is for a url server; "
                              "a server Rienda starts takes env")
        args = entry.get("args")
        if args is not None:
            if not isinstance(args, list):
                raise ConfigError(f"{at('args')}: {label}.args must be a list of strings, got {_shown(args)}")
            for index, arg in enumerate(args):
                if not isinstance(arg, str):
                    raise ConfigError(f"{at('args')}: {label}.args must be a list of strings, but item {index + 1} "
                                      f"is {_shown(arg)} (quote it: '{arg}')")
        _strings(entry, "env", label, at)
        if entry.get("cwd") is not None:
            _string(entry, "cwd", label, at, nonempty=True)
    timeout = entry.get("start_timeout")
    if timeout is not None and (not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0):
        raise ConfigError(f"{at('start_timeout')}: {label}.start_timeout must be a positive number of seconds, "
                          f"got {_shown(timeout)}")
    return diagnostics


def _string(entry: dict[JSON, JSON], key: str, label: str, at: _At, nonempty: bool = False) -> None:
    value = entry.get(key)
    if not isinstance(value, str) or (nonempty and not value.strip()):
        raise ConfigError(f"{at(key)}: {label}.{key} must be a{' non-empty' if nonempty else ''} string, "
                          f"got {_shown(value)}")


def _strings(entry: dict[JSON, JSON], key: str, label: str, at: _At) -> None:
    """``entry[key]``, when set, must map names to strings."""
    value = entry.get(key)
    if value is None:
        return
    if not isinstance(value, dict):
        raise ConfigError(f"{at(key)}: {label}.{key} must be a mapping of names to strings, got {_shown(value)}")
    for name, item in value.items():
        if not isinstance(name, str) or not isinstance(item, str):
            raise ConfigError(f"{at(key, name)}: {label}.{key}.{name} must be a string, got {_shown(item)}"
                              + (f" (quote it: '{item}')" if isinstance(item, (int, float)) else ""))


_SCALARS: dict[type, str] = {str: "the string", bool: "the boolean", int: "the number", float: "the number"}
_COLLECTIONS: dict[type, str] = {list: "a list", dict: "a mapping"}


def _shown(value: JSON) -> str:
    if value is None:
        return "nothing"
    kind = _SCALARS.get(type(value))
    if kind:
        return f"{kind} {value!r:.60}"
    return _COLLECTIONS.get(type(value), type(value).__name__)


class _Lines:
    """The 1-based line of each key under ``mcp_servers`` (the top-level key's line when a
    deeper one cannot be found), for messages ``<file>:<line>``, from the document's node
    as :func:`..home.yaml_file.load` left it (merge keys merged: a key given both by a
    merge and by its mapping is found where the mapping gives it, the value that counts)."""

    def __init__(self, path: Path, root: yaml.Node | None) -> None:
        self.path = path
        self._root = _child(root, "mcp_servers")
        self._top = self._root_key_line(root)

    @staticmethod
    def _root_key_line(root: yaml.Node | None) -> int:
        if isinstance(root, yaml.MappingNode):
            for key, _ in root.value:
                if isinstance(key, yaml.ScalarNode) and key.value == "mcp_servers":
                    return key.start_mark.line + 1
        return 1

    def line(self, *keys: object) -> int:
        node, line = self._root, self._top
        for key in keys:
            found = _key_node(node, key)
            if found is None:
                break
            line = found[0].start_mark.line + 1
            node = found[1]
        return line

    def at(self, *keys: object) -> str:
        return f"{self.path}:{self.line(*keys)}"


def _key_node(node: yaml.Node | None, key: object) -> tuple[yaml.Node, yaml.Node] | None:
    """The key and value nodes of ``key`` in the mapping ``node``: the last given (the one
    that counts when a merge gave it too)."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in reversed(node.value):
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == str(key):
                return key_node, value_node
    return None


def _child(node: yaml.Node | None, key: str) -> yaml.Node | None:
    found = _key_node(node, key)
    return found[1] if found else None
