"""Hook commands a test gives an agent, and what the test reads back from them.

A policy is what the tests need of any hook command, Rienda's ``rienda gate AGENT`` included:
``command(agent)`` (the one string the agent's config runs), ``env`` (added to the agent's
environment; its hooks inherit it) and ``commands_seen()`` (the shell commands the hook was
asked about, proof it ran: Codex and Gemini CLI skip a hook they do not trust without a word).

``ScriptPolicy`` is a small Python script, not Rienda: it logs each event it reads on stdin,
then per ``mode``: ``guard`` denies a command holding ``rm -rf`` (with ``DENY_REASON``),
rewrites ``echo A > F`` to ``echo B > F`` and lets anything else run; ``allow`` lets every
call run; ``crash`` exits 1 (a hook that fails); ``exit2`` exits 2 with ``DENY_REASON`` on
stderr; ``ask`` answers ``ask`` with ``DENY_REASON``.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Protocol

# The reason a guard gives for refusing ``rm -rf`` (a test looks for it in what the model read).
DENY_REASON = "rm -rf is refused by the test policy"

SCRIPT = r'''
import json, re, sys
agent, mode, log = sys.argv[1:4]  # then the deny reason
event = json.loads(sys.stdin.read())
with open(log, "a") as out:
    out.write(json.dumps(event) + "\n")
if mode == "crash":
    print("the policy crashed", file=sys.stderr)
    sys.exit(1)
if mode == "allow":
    sys.exit(0)
if mode == "exit2":
    print(sys.argv[4], file=sys.stderr)
    sys.exit(2)
if mode == "ask":
    if agent == "gemini-cli":
        print(json.dumps({"decision": "ask", "reason": sys.argv[4]}))
    else:
        print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                                 "permissionDecisionReason": sys.argv[4]}}))
    sys.exit(0)
tool_input = event.get("tool_input") or {}
command = tool_input.get("command") if isinstance(tool_input, dict) else None
if not isinstance(command, str):
    sys.exit(0)
if "rm -rf" in command:
    reason = sys.argv[4]
    if agent == "gemini-cli":
        print(json.dumps({"decision": "deny", "reason": reason}))
    else:
        print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                                 "permissionDecisionReason": reason}}))
    sys.exit(0)
rewritten = re.sub(r"^echo A >", "echo B >", command)
if rewritten != command:
    updated = dict(tool_input, command=rewritten)
    if agent == "gemini-cli":
        print(json.dumps({"hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": updated}}))
    else:
        print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                                 "updatedInput": updated}}))
'''


class HookPolicy(Protocol):
    """What the agent tests need of a hook command."""

    env: dict[str, str]

    def command(self, agent: str) -> str:
        """The hook command line for ``agent`` (one string, as the agent's config holds it)."""
        ...

    def commands_seen(self) -> list[str]:
        """The shell commands the hook was asked about, in order."""
        ...


class ScriptPolicy:
    """The Python hook script in ``folder`` acting per ``mode`` (see the module's docstring)."""

    def __init__(self, folder: Path, mode: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.script = folder / "hook.py"
        self.script.write_text(SCRIPT)
        self.log = folder / "hook-events.jsonl"
        self.mode = mode
        self.env: dict[str, str] = {}

    def command(self, agent: str) -> str:
        return shlex.join([sys.executable, str(self.script), agent, self.mode, str(self.log), DENY_REASON])

    def events(self) -> list[dict]:
        """Every event the hook read, as the agent sent it."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def commands_seen(self) -> list[str]:
        return [e["tool_input"]["command"] for e in self.events()
                if isinstance(e.get("tool_input"), dict) and isinstance(e["tool_input"].get("command"), str)]
