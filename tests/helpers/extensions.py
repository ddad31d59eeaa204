"""Extensions' JavaScript sources the tests share, and small builders of such sources."""

from __future__ import annotations

from rienda_kernel.engine import CancelToken


def returning(expression: str) -> str:
    """A tool whose execute returns ``expression`` (JavaScript)."""
    return f"""
module.exports = {{
  description: "Returns a fixed value.",
  parameters: {{ type: "object", properties: {{}} }},
  execute: function (ctx, args) {{ return {expression}; }},
}};
"""


def hook(**points: str) -> str:
    """A hook file exporting the given points, each a JS function expression."""
    body = ",\n".join(f"  {name}: {source}" for name, source in points.items())
    return f"module.exports = {{\n{body}\n}};\n"


def go() -> CancelToken:
    """A fresh cancel token, for calling a hook chain's points directly."""
    return CancelToken()


# Counts the words of the file at args.path.
WORD_COUNT = """module.exports = {
  description: "Counts words.",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  execute: function (ctx, args) { return String(ctx.file.read(args.path).trim().split(/\\s+/).length); },
};"""

# Logs, then asks to publish (ctx.confirm): "pushed", or the error result "cancelled".
PUBLISH = """
module.exports = {
  description: "Publishes.",
  parameters: { type: "object", properties: {} },
  execute: function (ctx) {
    ctx.log("about to ask");
    return ctx.confirm({ title: "Publish", body: "Push the current branch?" }) ? "pushed" : { text: "cancelled", isError: true };
  },
};
"""

# Runs a command that waits until a file named "release" exists in the workdir.
SLOW = """
module.exports = {
  description: "Waits for a release file.",
  parameters: { type: "object", properties: {} },
  execute: function (ctx) {
    ctx.log("waiting for release");
    const r = ctx.system.exec("echo exec-started; while [ ! -e release ]; do sleep 0.02; done; echo exec-done");
    return r.stdout.trim();
  },
};
"""

# Asks before code that writes files, deletes or runs a shell; lets read-only inspection through.
CAREFUL = r"""
const RISKY = [/\bopen\([^)]*['"][wax]/, /\.to_(csv|parquet|excel|json)\(/, /\bos\.(remove|unlink|rmdir|system)\b/,
               /\bshutil\.rmtree\b/, /\bsubprocess\b/, /^\s*!/m, /\bwrite_text\(/];
module.exports = {
  beforeToolExecute(ctx, call) {
    if (call.name !== "python") return;
    const risky = RISKY.find((pattern) => pattern.test(call.arguments.code));
    if (!risky) return;
    if (!ctx.confirm({ title: "Run this code?", body: call.arguments.code })) {
      return { allow: false, reason: "the code writes, deletes or runs a shell, and it was not allowed" };
    }
  },
};
"""
