"""The ``%rienda`` listings: sessions, agents, tools and hooks, each a heading, a table and
the diagnostics of what was skipped (see :mod:`.tables` for the tables and their rendering;
``rienda sessions`` shows the same tables)."""

from __future__ import annotations

from pathlib import Path

from ..engine import Diagnostic, RiendaError
from .session import TurnSession
from .tables import CommandOutput, agent_table, count, hook_table, listing, session_table, tool_table

__all__ = ["agents_listing", "hooks_listing", "in_home", "session_shown", "sessions_listing", "tools_listing"]


def sessions_listing(session: TurnSession, args: list[str]) -> CommandOutput:
    """Rienda's own saved sessions; with ``gate``, rienda gate's instead; and a diagnostic
    for each file of the folder left out (and why)."""
    if args and args[0] != "gate":
        raise RiendaError(f"usage: {session.prefix}sessions [gate]")
    gate = bool(args)
    scan = session.rienda.store.scan()
    infos = [info for info in scan.sessions if (info.gate is not None) == gate]
    where = session.rienda.store.directory
    unusable = [Diagnostic("sessions", file.message) for file in scan.unusable]
    if infos:
        of_gate = " of rienda gate" if gate else ""
        heading = f"{count(len(infos), 'session')}{of_gate} in {where}, newest last (* = current):"
    else:
        which = "rienda gate's sessions" if gate else "sessions"
        heading = f"No saved {which} yet in {where}."
    return listing(heading, *session_table(infos, session.session_id, marked=True), unusable, infos)


def session_shown(session: TurnSession, args: list[str]) -> CommandOutput:
    """A saved session (``args[0]``: an id or ``last``; else the current one) as ``rienda
    show`` prints it: a header, its messages, hook decisions and runs' ends, the usage."""
    from ..frontend.show import heading_lines, session_lines

    session_id = args[0] if args else session.session_id
    if session_id is None:
        raise RiendaError(f"no session yet: the next prompt starts one ({session.prefix}show ID|last shows a saved one)")
    loaded = session.rienda.load_session(session_id)
    lines = heading_lines(loaded.header)
    shown, warnings = session_lines(loaded)
    lines += [f"warning: {warning}" for warning in loaded.warnings + warnings] + shown
    return CommandOutput("\n".join(lines), "\n".join(f"    {line}" for line in lines), value=loaded)


def agents_listing(session: TurnSession, args: list[str]) -> CommandOutput:
    agents, diagnostics = session.rienda.agents()
    heading = f"{count(len(agents), 'agent')} in {session.rienda.home / 'agents'} (* = current):"
    table = agent_table(agents, lambda path: in_home(session, path), session.agent_id, marked=True)
    footer = []
    if session.agent_id not in {agent.id for agent in agents}:
        footer.append(f"The current agent {session.agent_id!r} is not listed: its file is missing or broken.")
    return listing(heading, *table, diagnostics, agents, footer)


def tools_listing(session: TurnSession, args: list[str]) -> CommandOutput:
    catalog = session.rienda.catalog(mcp_servers=True)
    tools, table = tool_table(catalog, lambda path: in_home(session, path))
    heading = f"{count(len(tools), 'tool')} (built-in, and yours in {catalog.home / 'tools'}):"
    diagnostics = [d for d in catalog.diagnostics if d.source == "extensions:tool" or d.source.startswith("mcp:")]
    return listing(heading, *table, diagnostics, tools)


def hooks_listing(session: TurnSession, args: list[str]) -> CommandOutput:
    catalog = session.rienda.catalog()
    hooks = [catalog.hooks[name] for name in sorted(catalog.hooks)]
    where = catalog.home / "hooks"
    heading = f"{count(len(hooks), 'hook')} in {where}:" if hooks else f"No usable hooks in {where}."
    diagnostics = [d for d in catalog.diagnostics if d.source == "extensions:hook"]
    return listing(heading, *hook_table(hooks, lambda path: in_home(session, path)), diagnostics, hooks)


def in_home(session: TurnSession, path: str) -> str:
    """A file under RIENDA_HOME as a path relative to it (the heading names the home)."""
    try:
        return str(Path(path).relative_to(session.rienda.home))
    except ValueError:
        return path


