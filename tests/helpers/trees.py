"""Homes with a lead agent and its sub-agents, each answering from its own scripted model.

Every agent's front matter names its own script (``model: scripted/<name>.yaml``, a file
in the workdir), so the lead and each child in one test read their own responses.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import yaml

# The guard of the hooks documentation, without the confirm: refuses any rm -rf, says so.
GUARD = """module.exports = {
  beforeToolExecute(ctx, call) {
    if (call.name === "shell" && /\\brm\\s+-rf\\b/.test(call.arguments.command || "")) {
      return { allow: false, reason: "rm -rf refused by the lead's guard" };
    }
  },
};"""

# Logs every point it sees, with the run's depth (ctx.subagent), for order and coverage.
def tracer(name: str) -> str:
    """A hook that logs ``<name> <point> <depth>`` at every point (depth 0 at the top)."""
    points = ("beforeRun", "afterRun", "beforeModelRequest", "afterModelResponse", "beforeToolExecute",
              "afterToolExecute")
    body = ",\n".join(
        f'  {point}(ctx) {{ ctx.log("{name} {point} " + (ctx.subagent ? ctx.subagent.depth : 0)); }}'
        for point in points)
    return "module.exports = {\n" + body + "\n};"


def write_agent(home: Path, name: str, *, tools: tuple[str, ...] = (), hooks: tuple[str, ...] = (),
                agents: tuple[str, ...] | None = None, max_depth: int | None = None,
                description: str | None = None, body: str = "Do the task.") -> Path:
    """``home/agents/<name>.md`` answering from ``scripted/<name>.yaml``."""
    lines = ["---", f"description: {description or f'The {name} agent.'}", f"model: scripted/{name}.yaml",
             f"tools: {json.dumps(list(tools))}", f"hooks: {json.dumps(list(hooks))}"]
    if agents is not None:
        lines.append(f"agents: {json.dumps(list(agents))}")
    if max_depth is not None:
        lines.append(f"max_depth: {max_depth}")
    path = home / "agents" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([*lines, "---", body]) + "\n", encoding="utf-8")
    return path


def write_script(workdir: Path, name: str, responses: list[dict[str, Any]]) -> None:
    """The scripted model's responses for agent ``name``."""
    (workdir / f"{name}.yaml").write_text(yaml.safe_dump(responses, sort_keys=False), encoding="utf-8")


def write_hook(home: Path, name: str, source: str) -> None:
    path = home / "hooks" / name / "index.js"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")


def delegate(agent: str, prompt: str, text: str = "") -> dict[str, Any]:
    """A scripted response calling the ``agent`` tool once."""
    return {"text": text, "tool_calls": [{"name": "agent", "arguments": {"agent": agent, "prompt": prompt}}]}


def shell(command: str, text: str = "") -> dict[str, Any]:
    """A scripted response calling the ``shell`` tool once."""
    return {"text": text, "tool_calls": [{"name": "shell", "arguments": {"command": command}}]}


def session_lines(home: Path, session_id: str) -> list[dict[str, Any]]:
    path = home / "sessions" / f"{session_id}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def lead_and_cleaner(home: Path, workdir: Path, *, lead_hooks: tuple[str, ...] = ("guard",),
                     child_hooks: tuple[str, ...] = ()) -> Path:
    """A lead (``lead``: the agent tool, the guard) and its sub-agent ``cleaner`` (the
    shell) that tries ``rm -rf victim``; the directory ``victim`` it would delete."""
    write_hook(home, "guard", GUARD)
    write_agent(home, "lead", tools=("agent",), hooks=lead_hooks, agents=("cleaner",))
    write_agent(home, "cleaner", tools=("shell",), hooks=child_hooks)
    write_script(workdir, "lead", [delegate("cleaner", "Clean the workspace."), {"text": "The cleaner is done."}])
    write_script(workdir, "cleaner", [shell("rm -rf victim"), {"text": "I could not delete victim."}])
    victim = workdir / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious", encoding="utf-8")
    return victim


# The guard asking before any rm -rf (a child's confirm, in the notebook tests).
ASKING_GUARD = """module.exports = { beforeToolExecute(ctx, call) {
  if (call.name === "shell" && /\\brm\\s+-rf\\b/.test(call.arguments.command || "")) {
    ctx.log("checking " + call.arguments.command);
    if (!ctx.confirm({ title: "Dangerous command", body: call.arguments.command })) {
      return { allow: false, reason: "refused by the user" };
    }
  } } };"""


def nested(messages):
    """The sub-agent box's displays (first shown, then its updates), in order."""
    return [m["content"]["data"] for m in messages if m["msg_type"] in ("display_data", "update_display_data")
            and m["content"].get("transient", {}).get("display_id", "").startswith("rienda-subagent-")]


# A tool that shows everything a run can show, then asks: command output, a notice, two log
# lines (the second within the nested box's update interval of the first), then ctx.confirm.
PREPARE_THEN_ASK = """module.exports = {
  description: "Prepares, then asks.",
  parameters: { type: "object", properties: {} },
  execute(ctx) {
    ctx.system.exec("echo exec-before-asking");
    ctx.notify({ title: "heads up", body: "notice-before-asking" });
    ctx.log("log-before-asking 1");
    ctx.log("log-before-asking 2");
    return ctx.confirm({ title: "Go on", body: "ship it?" }) ? "shipped" : { text: "stopped", isError: true };
  },
};"""
SHOWN_BEFORE_ASKING = ("exec-before-asking", "notice-before-asking", "log-before-asking 2", "<b>prepare</b>")


def lead_to_asker(home: Path, workdir: Path, depth: int) -> None:
    """A lead whose sub-agent ``depth`` levels down (1: a child, 2: a grandchild) calls
    the ``prepare`` tool (:data:`PREPARE_THEN_ASK`)."""
    path = home / "tools" / "prepare" / "index.js"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PREPARE_THEN_ASK, encoding="utf-8")
    names = ["lead", *(f"level{n}" for n in range(1, depth)), "asker"]
    for name, below in zip(names, names[1:]):
        write_agent(home, name, tools=("agent",))
        write_script(workdir, name, [delegate(below, "go"), {"text": f"{name} done"}])
    write_agent(home, "asker", tools=("prepare",))
    write_script(workdir, "asker", [{"text": "", "tool_calls": [{"name": "prepare", "arguments": {}}]},
                                    {"text": "asker done"}])
