"""``rienda gate`` as the other agents run it: a real process, the event on a pipe, a home
with real JavaScript hooks. The four events in ``samples/`` are what the agents sent
(``../shared/design/gate-samples``, December 2026)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.homes import write_agent_file, write_extension

SAMPLES = Path(__file__).parent / "samples"
SAMPLE_FILES = {"claude-code": "claude-pretooluse.json", "codex": "codex-pretooluse.json",
                "gemini-cli": "gemini-beforetool.json", "copilot-cli": "copilot-pretooluse.json"}
AGENTS = tuple(SAMPLE_FILES)

# The team's one policy: no rm -rf, `echo HELLO` rewritten, `ls` allowed outright, a push asked
# about; it says who asked in each reason (ctx.session.gate).
POLICY = """module.exports = {
  beforeToolExecute(ctx, call) {
    const who = ctx.session.gate.agent;
    if (call.name !== "shell") return;
    const command = call.arguments.command;
    if (/\\brm\\s+-rf\\b/.test(command)) return { allow: false, reason: "no rm -rf here (" + who + ")" };
    if (/^git push/.test(command) && !ctx.confirm({ title: "Push", body: command })) {
      return { allow: false, reason: "the push was not confirmed" };
    }
    if (/^git push/.test(command)) return { arguments: { command: command + " --dry-run" } };
    if (/^ls\\b/.test(command)) return { allow: true };
    if (/HELLO/.test(command)) return { arguments: { command: command.replace("HELLO", "BYE") } };
  },
  afterToolExecute(ctx, call, result) {
    if (/SECRET/.test(result.text)) return { text: result.text.replace(/SECRET\\S*/g, "[withheld]") };
  },
};
"""


REWRITTEN_CLAUDE = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": {
    "command": "echo BYE > proof.txt", "description": "write proof file"}}}


def sample(agent: str, **changes: Any) -> dict[str, Any]:
    """The event ``agent`` sent, with ``changes`` (``command=`` changes the tool's command)."""
    event = json.loads((SAMPLES / SAMPLE_FILES[agent]).read_text())
    if "command" in changes:
        event["tool_input"] = {**event["tool_input"], "command": changes.pop("command")}
    event.update(changes)
    return event


def gate(home: Path, agent: str, event: dict[str, Any] | bytes | str, *args: str,
         cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``rienda --home HOME gate AGENT *args`` with ``event`` on stdin (a pipe), within 60 s."""
    data = event if isinstance(event, bytes) else (event if isinstance(event, str) else json.dumps(event)).encode()
    env = {k: v for k, v in os.environ.items() if k not in ("RIENDA_HOME", "RIENDA_CONFIRM")}
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), "gate", agent, *args],
                          input=data, capture_output=True, timeout=60, env=env, cwd=cwd)


def answer(done: subprocess.CompletedProcess) -> Any:
    """The answer on stdout, checked to be one JSON document, with exit code 0 and no traceback."""
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr, done.stderr.decode()
    return json.loads(done.stdout)


def deny(agent: str, reason: str) -> dict[str, Any]:
    """The golden deny of ``agent``."""
    if agent == "gemini-cli":
        return {"decision": "deny", "reason": reason}
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": reason}}


def gate_session_id(home: Path, agent: str, their_id: str) -> str:
    """The id of the session holding the decisions of ``agent``'s session ``their_id``:
    ``<time>-<agent>-<their id>``, the only one so named."""
    [path] = [path for path in (home / "sessions").glob(f"*-{agent}-{their_id}.jsonl")]
    assert re.fullmatch(r"\d{8}-\d{6}-\d{6}", path.stem[:22]) and path.stem[22:] == f"-{agent}-{their_id}"
    return path.stem


def gate_session_file(home: Path, agent: str, their_id: str) -> Path:
    """That session's file."""
    return home / "sessions" / f"{gate_session_id(home, agent, their_id)}.jsonl"


def gate_home(home: Path) -> Path:
    """``home`` made a home whose agent ``gate`` has the team's policy (and no model: a gate
    never calls one)."""
    write_extension(home, "hooks", "policy", POLICY)
    write_agent_file(home, "gate", "---\ndescription: the team's policy\nhooks: ['policy']\n---\n")
    return home


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home whose agent ``gate`` has the team's policy."""
    return gate_home(tmp_path / "home")
