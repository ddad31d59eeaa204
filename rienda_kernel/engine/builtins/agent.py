"""The built-in ``agent`` tool: its name, description and schema, and its ``run``, a thin
entry over the run's sub-agents (:mod:`..runtime.subagents`, which start the child run,
hold it to its limits and link the sessions)."""

from __future__ import annotations

from ..common.json_value import JSONObject
from ..tools.model import BuiltinHost, ToolResult

__all__ = ["DESCRIPTION", "NAME", "PARAMETERS", "run_agent"]

NAME = "agent"
DESCRIPTION = ("Give a task to another agent (a sub-agent) and get its final answer back. The sub-agent starts "
               "fresh: it sees only the prompt you write, so say everything it needs.")
PARAMETERS: JSONObject = {
    "type": "object",
    "properties": {
        "agent": {"type": "string", "description": "The agent to run."},
        "prompt": {"type": "string", "description": "The task, complete: the sub-agent sees nothing else."},
    },
    "required": ["agent", "prompt"],
    "additionalProperties": False,
}


def run_agent(host: BuiltinHost, args: JSONObject) -> tuple[str, bool] | ToolResult:
    """The ``agent`` tool's ``run``: the sub-agent's answer, or why there is none."""
    subagents = host.subagents
    if subagents is None:
        return "the agent tool starts a sub-agent only during an agent's run", True
    if not isinstance(args.get("agent"), str) or not isinstance(args.get("prompt"), str):
        return "missing or non-string argument: agent and prompt are required", True
    return subagents.start(args["agent"], args["prompt"], host)
