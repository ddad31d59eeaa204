"""MCP tools in a catalog, and in an agent's declared tools.

- :func:`with_mcp_tools`: a catalog plus the tools of the MCP servers it is asked for
  (those its ``tools`` names mention, or every configured server when ``all_servers``);
  a user's JavaScript tool of the same name shadows an MCP tool, as it shadows a built-in.
- :func:`declared_tools`: an agent's ``tools:`` checked for MCP names (``mcp__SERVER``
  and ``mcp__SERVER__TOOL``: the server must be configured and started, the tool must
  exist) and with each ``mcp__SERVER`` replaced by that server's tools. What the agent
  does not declare is never offered to the model.
- :func:`missing_tool`: why an MCP name is not in a catalog, in one line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ...cancel import CancelToken
from ...errors import ConfigError
from ..model import Catalog
from .names import expand_declared, servers_wanted, split_name
from .settings import ServerSpec, remember_secrets

if TYPE_CHECKING:
    from ...home.agents import Agent
    from .servers import McpServers

__all__ = ["declared_tools", "missing_tool", "servers_for", "with_mcp_tools"]


def servers_for(workdir: Path) -> McpServers:
    """A Rienda's :class:`.servers.McpServers` (its module, and asyncio, loaded only now)."""
    from .servers import McpServers

    return McpServers(workdir)


def with_mcp_tools(catalog: Catalog, servers: McpServers, specs: Mapping[str, ServerSpec], tools: Sequence[str] | None,
                   all_servers: bool, cancel: CancelToken | None) -> Catalog:
    """``catalog`` with the MCP tools asked for, from ``servers`` (the Rienda's
    :class:`.servers.McpServers`, which also stops the servers config.yaml, ``specs``, no
    longer names), and a diagnostic for each of their problems. The servers' secrets are
    the process's from here on (they may start)."""
    remember_secrets(specs.values())
    wanted = servers_wanted(None if tools is None and all_servers else (tools or []), specs)
    found, problems = servers.tools(specs, wanted, cancel)
    if not found and not problems:
        return catalog
    shadowed = set(catalog.shadowed) | (set(found) & set(catalog.tools))
    return dataclasses.replace(catalog, tools={**found, **catalog.tools},
                               diagnostics=[*catalog.diagnostics, *(problem.diagnostic() for problem in problems)],
                               mcp_problems=(*catalog.mcp_problems, *problems), shadowed=tuple(sorted(shadowed)))


def declared_tools(agent: Agent, catalog: Catalog, specs: Mapping[str, ServerSpec]) -> Agent:
    """``agent`` with its MCP declarations checked and expanded (``specs``: config.yaml's
    servers); ConfigError naming the agent file and what is missing, as for an unknown tool."""
    for name in agent.tools:
        if name not in catalog.tools and (problem := missing_tool(name, catalog, specs)):
            where = agent.path or f"the built-in agent {agent.id!r}"
            raise ConfigError(f"{where}: declares tool {name!r}, which does not exist ({problem})")
    expanded = expand_declared(agent.tools, catalog.tools, specs)
    return agent if expanded == agent.tools else dataclasses.replace(agent, tools=expanded)


def missing_tool(name: str, catalog: Catalog, specs: Mapping[str, ServerSpec]) -> str | None:
    """Why the MCP name ``name`` is not usable (None: it is, or it is not an MCP name;
    ``specs``: config.yaml's servers)."""
    parts = split_name(name)
    if parts is None:
        return None
    server, tool = parts
    if server not in specs:
        configured = ", ".join(sorted(specs)) or "none"
        return (f"no MCP server {server!r} in {catalog.home / 'config.yaml'}'s mcp_servers "
                f"(servers: {configured})")
    problems = [problem for problem in catalog.mcp_problems if problem.server == server]
    failed = [problem.message for problem in problems if problem.tool is None]
    if failed:
        return "; ".join(failed)
    if tool is None:
        return None
    skipped = [problem.message for problem in problems if problem.tool == tool]
    if skipped:
        return "; ".join(skipped)
    prefix = f"mcp__{server}__"
    offered = sorted(n.removeprefix(prefix) for n in catalog.tools if n.startswith(prefix))
    return f"MCP server {server!r} has no tool {tool!r} (its tools: {', '.join(offered) or 'none'})"
