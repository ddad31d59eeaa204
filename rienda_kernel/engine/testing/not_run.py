"""Why a recorded call cannot run again in a replay with ``run_tools``.

A replay that runs the tools again must never pass a call it did not make: when the tool
is gone, was skipped when loaded (a diagnostic), its MCP server does not start or no longer
offers it, or the agent no longer declares it, :func:`why_not_run` says so in one line
naming the tool, and the replay counts that as a difference (:mod:`.replay`). A call the
recording shows was to an undeclared tool then too (:func:`recorded_as_unknown`) ran
nothing then, so there is nothing to run now.
"""

from __future__ import annotations

from ..home.agents import Agent
from ..runtime.loop import UNKNOWN_TOOL
from ..runtime.seams import RunHost
from ..sessions.messages import Message, ToolCall
from ..tools.mcp.catalog import missing_tool
from ..tools.mcp.names import MCP_PREFIX, split_name
from ..tools.model import Catalog, Tool

__all__ = ["declares", "recorded_as_unknown", "why_not_run"]


def declares(agent: Agent, name: str) -> bool:
    """Whether ``agent`` offers tool ``name`` to its model (by name, or by its MCP server's ``mcp__SERVER``)."""
    parts = split_name(name)
    return name in agent.tools or (parts is not None and f"{MCP_PREFIX}{parts[0]}" in agent.tools)


def recorded_as_unknown(call: ToolCall, recorded: Message | None) -> bool:
    """The recorded result is the loop's answer to a call of a tool the agent did not declare: nothing ran then."""
    return (recorded is not None and recorded.is_error and not recorded.meta
            and recorded.text.startswith(UNKNOWN_TOOL.format(name=call.name)))


def why_not_run(name: str, tool: Tool | None, catalog: Catalog, agent: Agent, rienda: RunHost) -> str:
    """Why tool ``name`` cannot run again, in one line naming it."""
    if tool is not None:
        where = agent.path or f"the built-in agent {agent.id!r}"
        return f"{where} no longer declares tool {name!r} (its tools: {', '.join(agent.tools) or 'none'})"
    problem = missing_tool(name, catalog, rienda.config().mcp_servers)
    if problem:
        return f"tool {name!r}: {problem}"
    skipped = catalog.diagnostics_of("tools", name)
    if skipped:
        return f"tool {name!r} was skipped: {'; '.join(skipped)}"
    return f"no tool {name!r} in {catalog.home / 'tools'} or the built-ins"
