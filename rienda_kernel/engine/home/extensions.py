"""Finding and checking the user's JavaScript tools and hooks under ``RIENDA_HOME``.

``$RIENDA_HOME/tools/<name>/index.js`` defines the tool ``<name>`` and
``$RIENDA_HOME/hooks/<name>/index.js`` the hook ``<name>``; the directory name is the name.
Loading never raises (except :class:`Interrupted` when the caller's cancel token is
set): anything wrong with an extension becomes a :class:`Diagnostic` naming the file, the
line where known, and what is wrong, and the extension is skipped. That includes a file
whose top level does not finish within the load timeout (``load_timeout`` in
``config.yaml``, default :data:`DEFAULT_LOAD_TIMEOUT` seconds) or runs out of memory.
Discovery may be limited to the names a run declares: nothing else is loaded.
Built-in tools, given by the caller, are listed alongside; a user tool with a built-in's name
shadows it.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..cancel import CancelToken
from ..common.hints import did_you_mean
from ..common.json_value import JSON, JSONObject
from ..errors import ConfigError, ExtensionError
from ..events import Diagnostic
from ..sandbox.protocol import SandboxLike
from ..tools.model import HOOK_POINTS, NAME_RULE, Catalog, Hook, JSTool, Tool
from ..tools.schemas import schema_problems
from .agents import Agent

__all__ = ["DEFAULT_LOAD_TIMEOUT", "ExtensionLoader", "check_declared", "summary"]

DEFAULT_LOAD_TIMEOUT = 2.0
_TOOL_EXPORTS = {"description": "string", "parameters": "object", "execute": "function"}


@dataclass(frozen=True)
class _Cached:
    stamp: tuple[int, int]
    extension: JSTool | Hook | None
    diagnostics: tuple[Diagnostic, ...]


@dataclass(frozen=True)
class _How:
    """How one discovery loads files: the time each may take, and its cancel token."""

    timeout: float
    cancel: CancelToken


class ExtensionLoader:
    """Discovers extensions; a file unchanged since the last discovery is not re-run
    (its outcome, a diagnostic included, is remembered until the file changes)."""

    def __init__(self, sandbox: SandboxLike) -> None:
        self.sandbox = sandbox
        self._cache: dict[str, _Cached] = {}

    def discover(self, home: Path, *, tools: Collection[str] | None = None, hooks: Collection[str] | None = None,
                 load_timeout: float = DEFAULT_LOAD_TIMEOUT, cancel: CancelToken | None = None,
                 builtin_tools: Mapping[str, Tool] | None = None) -> Catalog:
        """The catalog under ``home``: every extension, or only the ``tools`` and ``hooks``
        named, beside ``builtin_tools`` (the tools implemented in Python that the caller
        offers: Rienda's built-ins and its front end's), which are always there. Each file
        gets ``load_timeout`` seconds to load; ``cancel`` stops loading with
        :class:`Interrupted`. A user's tool of the same name shadows a built-in one."""
        how = _How(load_timeout, cancel or CancelToken())
        diagnostics: list[Diagnostic] = []
        # A tools/ folder's files load as tools, a hooks/ folder's as hooks (_check).
        user_tools = {name: tool for name, tool in self._scan(home / "tools", "tool", diagnostics, tools, how).items()
                      if isinstance(tool, JSTool)}
        found_hooks = {name: hook for name, hook in self._scan(home / "hooks", "hook", diagnostics, hooks, how).items()
                       if isinstance(hook, Hook)}
        builtins: dict[str, Tool] = dict(builtin_tools or {})
        shadowed = tuple(sorted(set(user_tools) & set(builtins)))
        all_tools: dict[str, Tool] = {**builtins, **user_tools}
        return Catalog(home, all_tools, found_hooks, diagnostics, shadowed)

    def _scan(self, folder: Path, kind: str, diagnostics: list[Diagnostic],
              wanted: Collection[str] | None, how: _How) -> dict[str, JSTool | Hook]:
        found: dict[str, JSTool | Hook] = {}
        if not os.access(folder, os.F_OK) or not folder.is_dir():
            return found
        try:
            entries = sorted(folder.iterdir())
        except OSError as exc:  # an unreadable folder: its extensions are not there, the rest works
            diagnostics.append(Diagnostic(f"extensions:{kind}", f"{folder}: cannot be read: "
                                          f"{(exc.strerror or str(exc)).lower()}; no {kind} of it is loaded",
                                          path=str(folder)))
            return found
        for entry in entries:
            if entry.name.startswith(".") or (wanted is not None and entry.name not in wanted):
                continue
            extension = self._entry(entry, kind, diagnostics, how)
            if extension is not None:
                found[extension.name] = extension
        return found

    def _entry(self, entry: Path, kind: str, diagnostics: list[Diagnostic], how: _How) -> JSTool | Hook | None:
        source = f"extensions:{kind}"
        if not entry.is_dir():
            diagnostics.append(Diagnostic(
                source, f"{entry}: ignored: a {kind} is a directory holding index.js "
                f"({entry.parent}/<name>/index.js)", path=str(entry)))
            return None
        if not NAME_RULE.fullmatch(entry.name):
            diagnostics.append(Diagnostic(
                source, f"{entry}: skipped: {entry.name!r} is not a valid {kind} name "
                "(1 to 64 letters, digits, '_' or '-')", path=str(entry)))
            return None
        path = entry / "index.js"
        if not path.is_file():
            diagnostics.append(Diagnostic(source, f"{path}: skipped: file not found", path=str(path)))
            return None
        return self._load(path, kind, entry.name, diagnostics, how)

    def _load(self, path: Path, kind: str, name: str, diagnostics: list[Diagnostic],
              how: _How) -> JSTool | Hook | None:
        stat = path.stat()
        stamp = (stat.st_mtime_ns, stat.st_size)
        cached = self._cache.get(str(path))
        if cached is None or cached.stamp != stamp:
            found: list[Diagnostic] = []
            extension = self._check(path, kind, name, found, how)
            cached = _Cached(stamp, extension, tuple(found))
            self._cache[str(path)] = cached
        diagnostics.extend(cached.diagnostics)
        return cached.extension

    def _check(self, path: Path, kind: str, name: str, found: list[Diagnostic], how: _How) -> JSTool | Hook | None:
        source = f"extensions:{kind}"
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            found.append(Diagnostic(source, f"{path}: skipped: cannot be read: {exc}", path=str(path)))
            return None
        try:
            exports, values = self.sandbox.inspect(str(path), text, timeout=how.timeout, cancel=how.cancel)
        except ExtensionError as exc:
            found.append(Diagnostic(source, f"{exc}; skipped", path=str(path), line=exc.line))
            return None
        kinds = {export.name: export.kind for export in exports}
        if kind == "tool":
            return _check_tool(path, name, text, kinds, values, found)
        return _check_hook(path, name, text, kinds, found)


def _check_tool(
    path: Path, name: str, text: str, kinds: dict[str, str], values: JSONObject, found: list[Diagnostic]
) -> JSTool | None:
    problems = [
        f"missing export {export!r} ({expected})" if export not in kinds
        else f"export {export!r} must be a {expected}, got {kinds[export]}"
        for export, expected in _TOOL_EXPORTS.items()
        if kinds.get(export) != expected
    ]
    parameters = values.get("parameters")
    if not problems:
        problems.extend(_schema_problems(parameters))
    if problems:
        found.append(Diagnostic("extensions:tool", f"{path}: skipped: " + "; ".join(problems), path=str(path)))
        return None
    return JSTool(name, str(path), text, values["description"], values["parameters"])


def _schema_problems(parameters: JSON) -> list[str]:
    """The whole schema checked at load, every ``$ref`` resolved (:mod:`..tools.schemas`)."""
    return schema_problems(parameters)


def _check_hook(path: Path, name: str, text: str, kinds: dict[str, str], found: list[Diagnostic]) -> Hook | None:
    for export, kind in kinds.items():
        if export not in HOOK_POINTS:
            found.append(Diagnostic(
                "extensions:hook",
                f"{path}: export {export!r} is not a hook point and will never run{did_you_mean(export, HOOK_POINTS)}"
                f"; the points are {', '.join(HOOK_POINTS)}",
                path=str(path)))
        elif kind != "function":
            found.append(Diagnostic(
                "extensions:hook", f"{path}: export {export!r} must be a function, got {kind}; ignored",
                path=str(path)))
    points = tuple(point for point in HOOK_POINTS if kinds.get(point) == "function")
    if not points:
        found.append(Diagnostic(
            "extensions:hook", f"{path}: skipped: exports none of the hook points ({', '.join(HOOK_POINTS)})",
            path=str(path)))
        return None
    return Hook(name, str(path), text, points)


def check_declared(agent: Agent, catalog: Catalog, elsewhere: tuple[str, ...] = (), where_elsewhere: str = "") -> None:
    """Every tool and hook ``agent`` declares exists in ``catalog``; else ConfigError
    naming it and the agent file (and why it was skipped, or, for a name in ``elsewhere``,
    that it exists only ``where_elsewhere``)."""
    where = agent.path or f"the built-in agent {agent.id!r}"
    problems = []
    for kind, names, found, folder in (("tool", agent.tools, catalog.tools, "tools"),
                                       ("hook", agent.hooks, catalog.hooks, "hooks")):
        for name in names:
            if name in found:
                continue
            skipped = [d.message for d in catalog.diagnostics
                       if d.path and Path(d.path).parts[-2:-1] == (name,) and f"/{folder}/" in d.path]
            if skipped:
                detail = f" (it was skipped: {'; '.join(skipped)})"
            elif kind == "tool" and name in elsewhere:
                detail = f" here: it is a notebook tool, which exists only in {where_elsewhere}"
            else:
                known = {*found, *_folders(catalog.home / folder)}
                detail = f" (no {catalog.home / folder / name / 'index.js'}){did_you_mean(name, known)}"
            problems.append(f"declares {kind} {name!r}, which does not exist{detail}")
    if problems:  # every one at once: a person fixes the file once
        raise ConfigError(f"{where}: " + "; ".join(problems))


def _folders(directory: Path) -> list[str]:
    """The names of the folders in ``directory`` (none when it cannot be read)."""
    try:
        return [entry.name for entry in directory.iterdir() if entry.is_dir()]
    except OSError:
        return []


def summary(extension: Tool | Hook) -> str:
    """One line for a loaded tool (its parameters) or hook (its points)."""
    if isinstance(extension, Hook):
        return f"loaded hook {extension.name}: {', '.join(extension.points)}"
    params = ", ".join(extension.parameters.get("properties", {})) or "no parameters"
    return f"loaded tool {extension.name}: {extension.description} ({params})"
