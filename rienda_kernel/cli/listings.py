"""The listings of the ``rienda`` command: ``agents``, ``tools``, ``hooks``, ``sessions``.

Each prints the same table as its ``%rienda`` and ``rienda chat`` command (the one table
code, :mod:`rienda_kernel.commands.tables`: a header line, then one row an item) on stdout,
and on stderr a diagnostic for each file it could not use (a session file it cannot read
too). ``--json`` prints one JSON object an item instead, for programs. A listing with
nothing to show says so on stderr, with where it looked (stdout stays empty).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..commands.tables import Table, agent_table, hook_table, session_table, text_table, tool_table
from ..engine import JSONObject, ConfigError, Diagnostic, McpTool, SessionBusy
from .demo import demo_root, keep_whole
from .usage import UsageError

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


def _shown(table: Table, objects: Sequence[JSONObject], as_json: bool) -> None:
    """``table`` on stdout (nothing when it has no row), or with ``as_json`` each of
    ``objects`` (one a row) as a line of JSON."""
    if as_json:
        for item in objects:
            print(json.dumps(item, ensure_ascii=False))
    elif table[1]:
        print(text_table(*table))


def agents(rienda: Rienda, args: argparse.Namespace) -> int:
    agents, diagnostics = rienda.agents()
    _shown(agent_table(agents, str), [{"id": agent.id, "model": agent.model_label, "description": agent.description,
                                       "path": agent.path or None} for agent in agents], args.json)
    print_diagnostics(diagnostics)
    return 0


def tools(rienda: Rienda, args: argparse.Namespace) -> int:
    """Built-in and user tools, then each MCP server's tools (their names group them)."""
    catalog = rienda.catalog(mcp_servers=True)
    found, table = tool_table(catalog, str)
    _shown(table, [{"name": name, "description": description, "origin": origin,
                    "server": tool.server if isinstance(tool, McpTool) else None, "note": note or None}
                   for tool, (name, description, origin, note) in zip(found, table[1])], args.json)
    print_diagnostics(config_diagnostics(rienda) + [d for d in catalog.diagnostics
                                                    if d.source == "extensions:tool" or d.source.startswith("mcp:")])
    return 0


def hooks(rienda: Rienda, args: argparse.Namespace) -> int:
    catalog = rienda.catalog()
    found = [catalog.hooks[name] for name in sorted(catalog.hooks)]
    _shown(hook_table(found, str), [{"name": hook.name, "points": list(hook.points), "path": hook.path}
                                    for hook in found], args.json)
    if not catalog.hooks:
        print(f"no usable hook in {rienda.home / 'hooks'}", file=sys.stderr)
    print_diagnostics(config_diagnostics(rienda) + [d for d in catalog.diagnostics if d.source == "extensions:hook"])
    return 0


def sessions(rienda: Rienda, args: argparse.Namespace) -> int:
    """``rienda sessions``: the table of the saved sessions on stdout (``--agent``, ``-n``
    choose which; ``--gate [AGENT]``: rienda gate's sessions instead, of all agents or one),
    a diagnostic on stderr for each file of the folder left out; ``rm ID...`` and
    ``--prune`` remove sessions, a line each on stdout. With nothing to list or prune, a
    line on stderr says where it looked (and where the demo's sessions are, after ``rienda
    demo``)."""
    if args.remove:
        return _remove(rienda, args.remove)
    if args.prune:
        return _prune(rienda)
    gated = args.gate is not None
    scan = rienda.store.scan()
    found = [info for info in scan.sessions if (info.gate is not None) == gated and args.agent in (None, info.agent)
             and args.gate in (None, "", info.gate)]
    shown = found[-args.n:] if args.n else found
    _shown(session_table(shown), [{"id": info.id, "agent": info.agent, "model": info.model, "created": info.created,
                                   "messages": info.messages, "title": info.title,
                                   "parent_session_id": info.parent_session_id, "gate": info.gate}
                                  for info in shown], args.json)
    print_diagnostics([Diagnostic("sessions", file.message) for file in scan.unusable])
    if not found:
        which = (f"of agent {args.agent} " if args.agent else "") + (
            f"of rienda gate{' for ' + args.gate if args.gate else ''} " if gated else "")
        print(f"no saved sessions {which}in {rienda.store.directory}{_demo_sessions_hint(rienda.home)}",
              file=sys.stderr)
    return 0


def _remove(rienda: Rienda, words: list[str]) -> int:
    if words[0] != "rm" or len(words) < 2:
        raise UsageError(f"sessions takes rm and the sessions to remove, not {' '.join(words)!r}; "
                         "rienda sessions --help shows the usage")
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
    keep_whole(demo_home)  # a command to run from anywhere
    return f"; rienda demo saved its sessions in its own home: rienda --home {demo_home} sessions"
