"""A home where every kind of hook action happens in one run, for the tests of what each
front end shows: a refusal, a rewrite of a call's arguments, a rewrite of a result, a hook
that throws (at a known line), and rewrites of the model request and of its answer.

Agent ``walk`` (tools ``shell``, hooks in this order: guard, tidy, redact, thrower, brief)
answers from ``work/script.yaml``: ``rm -rf`` (refused), ``ls`` (rewritten to ``ls -1
nothing-here``, which fails), a command printing JSON with a secret-looking key (redacted
in the result), then ``done`` (shouted by the brief hook: saved as ``DONE``).
"""

from __future__ import annotations

from pathlib import Path

from .homes import write_agent, write_extension, write_script

HOOKS = {
    "guard": """module.exports = { beforeToolExecute(ctx, call) {
      if (/rm -rf/.test(call.arguments.command || "")) return { allow: false, reason: "no rm -rf here" };
    } };""",
    "tidy": """module.exports = { beforeToolExecute(ctx, call) {
      if (call.arguments.command === "ls") return { arguments: { command: "ls -1 nothing-here" } };
    } };""",
    "redact": """module.exports = { afterToolExecute(ctx, call, result) {
      if (result.text.includes("password")) return { text: result.text.replace(/password/g, "***") };
    } };""",
    "thrower": """module.exports = {
      afterToolExecute(ctx, call, result) {
        null.boom();
      } };""",
    "brief": """module.exports = {
      beforeModelRequest(ctx, request) { return { system: request.system + " Be brief." }; },
      afterModelResponse(ctx, response) { if (response.text) return { text: response.text.toUpperCase() }; } };""",
}
JSON_COMMAND = """printf '{"items": [%s], "password": "x"}' "$(seq -s, 1 40)\""""
SCRIPT = [
    {"text": "", "tool_calls": [{"name": "shell", "arguments": {"command": "rm -rf victim"}}]},
    {"text": "", "tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]},
    {"text": "", "tool_calls": [{"name": "shell", "arguments": {"command": JSON_COMMAND}}]},
    {"text": "done"},
]
THROW_AT = "hooks/thrower/index.js:3:"  # the line of null.boom(), as the sandbox reports it


def walk_home(home: Path, work: Path) -> None:
    """Writes the ``walk`` agent, its hooks and its script (``home`` and ``work`` exist)."""
    for name, source in HOOKS.items():
        write_extension(home, "hooks", name, source)
    write_agent(home, "walk", tools=["shell"], hooks=list(HOOKS), body="Walk through.")
    write_script(work, SCRIPT)
    (work / "victim").mkdir()
