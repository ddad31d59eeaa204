"""The listings of the ``rienda`` command: ``agents``, ``tools``, ``hooks``, ``sessions``.

Each prints one tab-separated line per item on stdout and its diagnostics on stderr; a
listing with nothing to show says so on stderr, with where it looked (stdout stays empty
for a script that counts lines)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..engine import BuiltinTool, ConfigError, Diagnostic, McpTool, SessionBusy
from .demo import demo_root

if TYPE_CHECKING:
    from ..engine import Rienda

__all__ = ["agents", "config_diagnostics", "hooks", "print_diagnostics", "sessions", "tools"]


def print_diagnostics(diagnostics: list[Diagnostic]) -> None:
    for diagnostic in diagnostics:
        print(f"diagnostic: {diagnostic.message}", file=sys.stderr)


def config_diagnostics(rienda: Rienda) -> list[Diagnostic]:
    """What a listing says about config.yaml: its unknown keys, or why it cannot be used."""
    try:
        return rienda.config_diagnostics()
    except ConfigError as exc:
        return [Diagnostic("config", str(exc))]


def agents(rienda: Rienda, args: argparse.Namespace) -> int:
    agents, diagnostics = rienda.agents()
    for agent in agents:
        print(f"{agent.id}\t{agent.model_label}\t{agent.description}\t[{agent.path or 'built-in'}]")
    print_diagnostics(diagnostics)
    return 0


def tools(rienda: Rienda, args: argparse.Namespace) -> int:
    """Built-in and user tools, then each MCP server's tools (their names group them)."""
    catalog = rienda.catalog(mcp_servers=True)
    for name, tool in sorted(catalog.tools.items(), key=lambda item: (isinstance(item[1], McpTool), item[0])):
        origin = (f"MCP server {tool.server}" if isinstance(tool, McpTool)
                  else "built-in" if isinstance(tool, BuiltinTool) else tool.path)
        shadowed = "the MCP server's tool" if name.startswith("mcp__") else "the built-in"
        note = f" (shadows {shadowed})" if name in catalog.shadowed else ""
        description = tool.description.strip().split("\n", 1)[0]
        print(f"{name}\t{description}\t[{origin}]{note}")
    print_diagnostics(config_diagnostics(rienda) + [d for d in catalog.diagnostics
                                                    if d.source == "extensions:tool" or d.source.startswith("mcp:")])
    return 0


def hooks(rienda: Rienda, args: argparse.Namespace) -> int:
    catalog = rienda.catalog()
    for name, hook in sorted(catalog.hooks.items()):
        print(f"{name}\t{', '.join(hook.points)}\t[{hook.path}]")
    if not catalog.hooks:
        print(f"no usable hook in {rienda.home / 'hooks'}", file=sys.stderr)
    print_diagnostics(config_diagnostics(rienda) + [d for d in catalog.diagnostics if d.source == "extensions:hook"])
    return 0


def sessions(rienda: Rienda, args: argparse.Namespace) -> int:
    """``rienda sessions``: one line a session on stdout (``--agent``, ``-n`` choose which;
    ``--gate [AGENT]``: rienda gate's sessions instead, of all agents or one);
    ``rm ID...`` and ``--prune`` remove sessions, a line each on stdout. With nothing to
    list or prune, a line on stderr says where it looked (and where the demo's sessions
    are, after ``rienda demo``)."""
    if args.remove:
        return _remove(rienda, args.remove)
    if args.prune:
        return _prune(rienda)
    gated = args.gate is not None
    found = [info for info in rienda.sessions(gate=gated) if args.agent in (None, info.agent)
             and args.gate in (None, "", info.gate)]
    for info in found[-args.n:] if args.n else found:
        lead = f"\tsub-agent of {info.parent_session_id}" if info.parent_session_id else ""
        print(f"{info.id}\t{info.agent}\t{info.model}\t{info.messages} messages\t{info.title}{lead}")
    if not found:
        which = (f"of agent {args.agent} " if args.agent else "") + (
            f"of rienda gate{' for ' + args.gate if args.gate else ''} " if gated else "")
        print(f"no saved sessions {which}in {rienda.store.directory}{_demo_sessions_hint(rienda.home)}",
              file=sys.stderr)
    return 0


def _remove(rienda: Rienda, words: list[str]) -> int:
    if words[0] != "rm" or len(words) < 2:
        raise ConfigError(f"rienda sessions takes rm and the sessions to remove, not {' '.join(words)!r}")
    for session_id in words[1:]:
        for removed in rienda.remove_session(session_id):
            print(f"removed {removed}")
    return 0


def _prune(rienda: Rienda) -> int:
    """Remove the top-level sessions that hold no answer (a run refused or failed before the
    model answered leaves its prompt alone); a session a run is writing stays."""
    pruned = 0
    for info in rienda.sessions():
        if info.parent_session_id is None and info.messages <= 1:
            try:
                rienda.remove_session(info.id)
            except SessionBusy:
                continue
            print(f"removed {info.id}\t{info.agent}\t{info.title}")
            pruned += 1
    if not pruned:
        print(f"no session to prune in {rienda.store.directory}", file=sys.stderr)
    return 0


def _demo_sessions_hint(home: Path) -> str:
    """Where ``rienda demo`` saved its sessions, when that is another home that has some."""
    demo_home = demo_root() / "home"
    if demo_home.resolve() == home.resolve() or not any((demo_home / "sessions").glob("*.jsonl")):
        return ""
    return f"; rienda demo saved its sessions in its own home: rienda --home {demo_home} sessions"
