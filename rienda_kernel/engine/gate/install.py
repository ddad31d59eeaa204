"""``rienda gate install | uninstall | status``: the hook entries of every event an agent
exposes, written into that agent's own settings file.

Contracts:
- :func:`settings_file` is where AGENT reads hooks, per scope (``user``: its user settings,
  ``project``: the project's, under the working folder) as the agents were found to read
  them (docs/gate.md); None where an agent has no such file (Codex and Copilot CLI read no
  project hooks in the versions tested).
- :func:`planned` is the change to that file, never written by it: the text before and
  after. Installing merges: the entries of the other hooks there stay as they are, an entry
  of ours already there (a command whose program is ``rienda-gate``) is replaced, so
  installing twice is one entry per event; uninstalling removes ours alone, and a file that
  held nothing else is removed, so install then uninstall leaves the file as it was (JSON
  rewritten in its own indentation; Codex's TOML edited as text: a block of ours at the end,
  and ``hooks = true`` in an existing ``[features]`` table, both marked).
  :class:`~..errors.ConfigError` for a file that cannot be merged with, naming it and what
  to do by hand.
- An entry names the lean client by its absolute path and carries the home, the deciding
  agent and the gate's timeout; the agent's own hook timeout is set above the gate's
  (:func:`hook_timeout`): an agent that kills its hook runs the call in three of four.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..common.json_value import JSON, JSONObject
from ..errors import ConfigError
from .protocols import TOOL_EVENTS, WIRED_EVENTS

__all__ = ["Planned", "Scope", "TRUST_STEPS", "WiredEntry", "gate_entry", "gate_status", "gate_wiring", "hook_timeout",
           "planned", "settings_file", "wired_entries"]

Scope = Literal["user", "project"]

# What an agent needs besides the entries before it runs them (said after an install).
TRUST_STEPS = {
    "codex": "Codex runs hooks only once trusted: review them in codex's /hooks menu, or start it with "
             "--dangerously-bypass-hook-trust (an untrusted hook is skipped without a word)",
    "gemini-cli": "Gemini CLI runs hooks in a trusted folder only: trust the project when it asks, or set "
                  "GEMINI_CLI_TRUST_WORKSPACE=true (else it exits 55)",
}
_MARK = "# rienda gate"
_BEGIN = f"{_MARK}: begin (rienda gate uninstall codex removes this block)"
_END = f"{_MARK}: end"
_FEATURE = f"hooks = true  {_MARK}"


def settings_file(agent: str, scope: Scope, cwd: Path, env: dict[str, str]) -> Path | None:
    """The file ``agent`` reads its hooks from in ``scope`` (see the module's contract)."""
    home = Path(env.get("HOME") or Path.home())
    if agent == "claude-code":
        user = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
        return (user if scope == "user" else cwd / ".claude") / "settings.json"
    if agent == "gemini-cli":
        return (home if scope == "user" else cwd) / ".gemini" / "settings.json"
    if scope == "project":
        return None
    if agent == "codex":
        return (Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex") / "config.toml"
    return (Path(env["COPILOT_HOME"]) if env.get("COPILOT_HOME") else home / ".copilot") / "hooks" / "rienda-gate.json"


def hook_timeout(gate_timeout: float) -> int:
    """The agent's own hook timeout for a gate of ``gate_timeout`` seconds: five seconds
    more, so the gate always answers first (its own bound includes its start)."""
    return int(gate_timeout) + 5


def gate_entry(agent: str, home: Path, decider: str, timeout: float) -> str:
    """The command of an entry: the lean client by its absolute path (else this Python
    running it), AGENT, and the home, deciding agent and timeout it was installed with."""
    script = Path(sys.executable).parent / "rienda-gate"
    program = [str(script)] if script.is_file() else [sys.executable, "-m", "rienda_kernel.engine.gate.client"]
    return shlex.join([*program, agent, "--home", str(home), "--agent", decider, "--timeout", f"{timeout:g}"])


@dataclass(frozen=True)
class Planned:
    """A change to ``path``: its text ``before`` and ``after`` (None: no file)."""

    path: Path
    before: str | None
    after: str | None

    @property
    def changes(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        """The change as a unified diff ("" when there is none)."""
        old = (self.before or "").splitlines(keepends=True)
        new = (self.after or "").splitlines(keepends=True)
        return "".join(difflib.unified_diff(old, new, str(self.path) if self.before is not None else "/dev/null",
                                            str(self.path) if self.after is not None else "/dev/null"))


@dataclass(frozen=True)
class WiredEntry:
    """One event of an agent's settings file whose entry is ours, and its command."""

    event: str
    command: str


def planned(agent: str, path: Path, command: str | None, timeout: int = 15) -> Planned:
    """The change to ``path`` that wires ``command`` (None: unwires ours) for every event of
    ``agent`` (see the module's contract)."""
    try:
        before = path.read_text(encoding="utf-8") if path.exists() else None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read: {getattr(exc, 'strerror', None) or exc}") from None  # said in full
    if agent == "codex":
        return Planned(path, before, _toml(path, before, command, timeout))
    return Planned(path, before, _json(agent, path, before, command, timeout))


def wired_entries(agent: str, path: Path) -> list[WiredEntry]:
    """The entries of ours in ``path`` (none when it is missing or cannot be read)."""
    try:
        text = path.read_text(encoding="utf-8")
        data: JSON = tomllib.loads(text) if agent == "codex" else json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError):
        return []
    hooks = data.get("hooks") if isinstance(data, dict) else None
    found = []
    for event, groups in (hooks.items() if isinstance(hooks, dict) else ()):
        for group in groups if isinstance(groups, list) else ():
            for entry in group.get("hooks", []) if isinstance(group, dict) else ():
                if isinstance(entry, dict) and _ours(entry.get("command")):
                    found.append(WiredEntry(event, str(entry["command"])))
    return found


def _ours(command: JSON) -> bool:
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return bool(words) and (Path(words[0]).name == "rienda-gate" or words[1:3] == ["-m", "rienda_kernel.engine.gate.client"])


def _entry(agent: str, command: str, timeout: int) -> JSONObject:
    if agent == "gemini-cli":  # milliseconds
        return {"type": "command", "command": command, "timeout": timeout * 1000}
    return {"type": "command", "command": command, "timeout": timeout}


def _json(agent: str, path: Path, before: str | None, command: str | None, timeout: int) -> str | None:
    try:
        data = json.loads(before) if before is not None and before.strip() else {}
    except ValueError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc}); fix it, then install again") from None  # said in full
    if not isinstance(data, dict) or not isinstance(data.get("hooks", {}), dict):
        raise ConfigError(f"{path}: its hooks are not a JSON object; rienda gate cannot add to it")
    if agent == "copilot-cli":
        data.setdefault("version", 1)
    hooks = data.setdefault("hooks", {})
    for event in WIRED_EVENTS[agent]:
        groups = hooks.get(event, [])
        if not isinstance(groups, list):
            raise ConfigError(f"{path}: hooks.{event} is not a list; rienda gate cannot add to it")
        kept = [rest for rest in map(_without_ours, groups) if rest is not None]
        if command is not None:
            group: JSONObject = {"hooks": [_entry(agent, command, timeout)]}
            if event in TOOL_EVENTS[agent]:
                group = {"matcher": "*", **group}
            kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            hooks.pop(event, None)
    if not hooks:
        data.pop("hooks")
    if not data or (agent == "copilot-cli" and set(data) == {"version"}):
        return None  # it held nothing but ours: gone, as before the install
    end = "" if before is not None and before.strip() and not before.endswith("\n") else "\n"  # as the file had it
    return json.dumps(data, indent=_indent(before), ensure_ascii=False) + end


def _has_ours(group: JSON) -> bool:
    return isinstance(group, dict) and any(isinstance(e, dict) and _ours(e.get("command"))
                                           for e in group.get("hooks", []) or [])


def _without_ours(group: JSON) -> JSON:
    """``group`` without our entries; None when nothing of it is left."""
    if not _has_ours(group) or not isinstance(group, dict):
        return group
    rest = [e for e in group.get("hooks", []) if not (isinstance(e, dict) and _ours(e.get("command")))]
    return {**group, "hooks": rest} if rest else None


def _indent(text: str | None) -> int:
    found = re.search(r"^( +)\S", text or "", re.M)
    return len(found.group(1)) if found else 2


def _toml(path: Path, before: str | None, command: str | None, timeout: int) -> str | None:
    text = _toml_without_ours(before or "")
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix it, then install again") from None  # said in full
    if command is None:
        return None if before is None or (not text.strip() and before.strip() != "") else text
    features = parsed.get("features", {})
    lines = [_BEGIN]
    if isinstance(features, dict) and features.get("hooks") is False:
        raise ConfigError(f"{path}: [features] sets hooks = false; set it to true (rienda gate leaves it as it is)")
    if "features" not in parsed:
        lines += ["[features]", "hooks = true", ""]
    elif isinstance(features, dict) and "hooks" not in features:
        header = re.search(r"^\[features\][ \t]*(#.*)?$", text, re.M)
        if header is None:
            raise ConfigError(f"{path}: features is not a [features] table rienda gate can add hooks = true to; "
                              "add it by hand, then install again")
        text = text[:header.end()] + "\n" + _FEATURE + text[header.end():]
    for event in WIRED_EVENTS["codex"]:
        lines += [f"[[hooks.{event}]]"] + (['matcher = "*"'] if event in TOOL_EVENTS["codex"] else []) + [
            "", f"[[hooks.{event}.hooks]]", 'type = "command"', f"command = {json.dumps(command)}",
            f"timeout = {timeout}", ""]
    after = text + ("" if not text or text.endswith("\n") else "\n") + ("\n" if text.strip() else "") + \
        "\n".join(lines[:-1]) + "\n" + _END + "\n"
    try:
        check = tomllib.loads(after)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: its hooks are written in a form rienda gate cannot add to ({exc}); add the "
                          "entries of docs/gate.md by hand") from None  # the parser's message says it
    if check.get("features", {}).get("hooks") is not True:
        raise ConfigError(f"{path}: hooks = true could not be set in [features]; add it by hand")
    return after


def _toml_without_ours(text: str) -> str:
    """``text`` without the block and the line rienda gate added (the text before them)."""
    text = text.replace("\n" + _FEATURE, "")
    start = text.find(_BEGIN)
    if start < 0:
        return text
    end = text.find(_END, start)
    end = len(text) if end < 0 else end + len(_END) + (1 if text[end + len(_END):end + len(_END) + 1] == "\n" else 0)
    head = text[:start]
    if head.endswith("\n\n"):  # the blank line put before the block
        head = head[:-1]
    return head + text[end:]


def gate_wiring(action: Literal["install", "uninstall"], agent: str, scope: Scope, *, home: Path, decider: str,
                timeout: float, cwd: Path, env: dict[str, str], dry_run: bool) -> list[str]:
    """``rienda gate install|uninstall AGENT``: the change made (or, with ``dry_run``, what
    it would be: the diff), in lines for a person; ConfigError when AGENT has no settings
    file in ``scope`` or the file cannot be merged with."""
    path = settings_file(agent, scope, cwd, env)
    if path is None:
        raise ConfigError(f"{agent} reads no hooks from a project's folder (in the version tested); use --user")
    command = gate_entry(agent, home, decider, timeout) if action == "install" else None
    change = planned(agent, path, command, hook_timeout(timeout))
    events = ", ".join(WIRED_EVENTS[agent])
    if not change.changes:
        return [f"{path}: already as asked ({'wired' if command else 'nothing of rienda gate there'})"]
    if dry_run:
        return [change.diff().rstrip("\n"), f"(--dry-run: {path} left as it is)"]
    if change.after is None:
        path.unlink()
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(change.after, encoding="utf-8")
    if command is None:
        return [f"{path}: rienda gate's entries removed" + ("; the file held nothing else, so it is gone"
                                                            if change.after is None else "")]
    lines = [f"{path}: {events} answered by {command}"]
    return lines + ([TRUST_STEPS[agent]] if agent in TRUST_STEPS else [])


def gate_status(home: Path, cwd: Path, env: dict[str, str]) -> list[str]:
    """``rienda gate status``: per agent and scope, what is wired and where; and whether the
    home's server is running (warm)."""
    from .protocols import AGENTS
    from .server import server_running

    lines = []
    for agent in AGENTS:
        for scope in ("user", "project"):
            path = settings_file(agent, scope, cwd, env)
            if path is None:
                continue
            entries = wired_entries(agent, path)
            if not entries:
                lines.append(f"{agent} ({scope}): not wired ({path})")
                continue
            missing = [event for event in WIRED_EVENTS[agent] if event not in {e.event for e in entries}]
            commands = sorted({entry.command for entry in entries})
            lines.append(f"{agent} ({scope}): {len(entries)} events wired in {path}"
                         + (f" (missing {', '.join(missing)}: install again)" if missing else "")
                         + f", answered by {'; '.join(commands)}")
    pid = server_running(home)
    lines.append(f"gate server of {home}: " + (f"running, warm (process {pid})" if pid is not None else
                                                 "not running (the next call decides cold and starts it)"))
    return lines
