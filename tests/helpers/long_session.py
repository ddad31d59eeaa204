"""A home whose agent ``long`` outgrows its window: the scripted model with a 600-token
window (usage reported from Rienda's estimate) and a hook ``team`` on both compaction
points, so a session compacts by itself at its sixth prompt, offline. Shared by the
front ends' compaction tests (the notebook cell, the commands, a batch run)."""

from __future__ import annotations

from pathlib import Path

import yaml

from .homes import write_agent_file, write_extension

TEAM = """module.exports = {
  beforeCompact(ctx, c) {
    ctx.log("compacting (" + c.reason + "): " + c.tokens + " of " + c.window + " tokens");
    if (c.reason === "manual" && c.instructions === "") return {cancel: true, reason: "say what to keep"};
    return {instructions: c.instructions + " Keep ticket numbers."};
  },
  afterCompact(ctx, c) { return {summary: c.summary + "\\nRULE"}; },
};"""
COMPACTS_AT = 6  # the prompt whose request passes window - reserve


def long_home(home: Path, work: Path) -> None:
    """Agent ``long`` (window 600, hook ``team``) and its script of twelve long answers."""
    write_extension(home, "hooks", "team", TEAM)
    write_agent_file(home, "long", "---\ndescription: Long.\nmodel: scripted/script.yaml\nhooks: [team]\n"
                                   "options:\n  context_window: 600\n---\nYou help.\n")
    (work / "script.yaml").write_text(yaml.safe_dump([{"text": f"Answer {i}: " + "lorem ipsum dolor " * 20}
                                                      for i in range(12)]))


def lead_and_digger(home: Path, work: Path, digs: int = 6) -> None:
    """A lead (the ``agent`` tool) whose sub-agent ``digger`` (window 600) runs ``digs``
    shell commands printing long text in one run, so the sub-agent's run compacts by itself."""
    write_agent_file(home, "lead", "---\ndescription: Leads.\nmodel: scripted/lead.yaml\ntools: [agent]\n"
                                   "agents: [digger]\n---\nDelegate.\n")
    write_agent_file(home, "digger", "---\ndescription: Digs.\nmodel: scripted/digger.yaml\ntools: [shell]\n"
                                     "options:\n  context_window: 600\n---\nDig.\n")
    (work / "lead.yaml").write_text(yaml.safe_dump([
        {"text": "", "tool_calls": [{"name": "agent", "arguments": {"agent": "digger", "prompt": "Dig."}}]},
        {"text": "The digger is done."}]))
    command = "python3 -c \"print(' '.join('soil%d' % i for i in range(30)))\""
    (work / "digger.yaml").write_text(yaml.safe_dump(
        [{"text": "", "tool_calls": [{"name": "shell", "arguments": {"command": command}}]}] * digs
        + [{"text": "Dug."}]))
