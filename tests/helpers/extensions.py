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

