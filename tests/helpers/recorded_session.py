"""A session recorded by a real run, for the replay tests: agent ``worker`` calls the echo
tool twice (a URL, then ``rm -rf /``) and ends with a card number; the home holds hooks
that rewrite, refuse, throw and redact."""

from __future__ import annotations

from rienda_kernel.engine import NonInteractiveUI
from rienda_kernel.engine.runtime.rienda import Rienda

from .homes import write_agent, write_script

ECHO = """module.exports = { description: "Echoes.", parameters: { type: "object",
  properties: { url: { type: "string" }, text: { type: "string" } } },
  execute: (ctx, a) => "got " + JSON.stringify(a) };"""

SCRIPT = [
    {"text": "Working.", "tool_calls": [
        {"name": "echo", "arguments": {"url": "http://example.org", "text": "hi"}},
        {"name": "echo", "arguments": {"text": "rm -rf /"}}]},
    {"text": "Card 4111111111111111 done."},
]


def record_session(rig, hooks=()):
    """Run agent ``worker`` (the echo tool, these hooks, :data:`SCRIPT`) once on ``rig``;
    every hook above is in the home, for replays to choose from. Returns (rienda, result)."""
    rig.write_tool("echo", ECHO)
    rig.write_hook("https", """module.exports = { beforeToolExecute(ctx, call) {
      if (!call.arguments.url) return;
      return { arguments: { ...call.arguments, url: call.arguments.url.replace("http://", "https://") } }; } };""")
    rig.write_hook("tag", """module.exports = { beforeToolExecute(ctx, call) {
      return { arguments: { ...call.arguments, text: (call.arguments.text || "") + " [tagged]" } }; } };""")
    rig.write_hook("deny-rm", """module.exports = { beforeToolExecute(ctx, call) {
      if (/rm -rf/.test(call.arguments.text || "")) return { allow: false, reason: "no rm -rf" }; } };""")
    rig.write_hook("upper", 'module.exports = { afterToolExecute: (ctx, c, r) => ({ text: r.text.toUpperCase() }) };')
    rig.write_hook("redact", 'module.exports = { afterModelResponse: (ctx, r) => ({ text: r.text.replace(/\\b\\d{16}\\b/g, "[card]") }) };')
    rig.write_hook("broken", 'module.exports = { beforeToolExecute() { throw new Error("broken hook"); } };')
    write_agent(rig.home, "worker", ["echo"], hooks, description=None, body="Work.")
    write_script(rig.workdir, SCRIPT)
    rienda = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    result = rienda.conversation("worker").run("go", NonInteractiveUI())
    assert result.reason == "end_turn", result.error
    return rienda, result
