"""Invoking a tool: decode and validate arguments, run it, and type its result.

Contracts (Rienda's tools documentation):
- ``arguments`` (the model's JSON, as text or already decoded) must be a JSON object that
  matches the tool's ``parameters``; otherwise the result is an error naming the
  offending field and the tool does not run.
- ``execute`` returns a string or ``{text, isError}``; anything else is an error result
  that says what came back. There is no implicit serialization.
- A throw fails the invocation, never the run: the error text is the result.
- The text is valid Unicode (a built-in's message may quote a path holding undecodable
  bytes) and capped at :data:`OUTPUT_CAP` bytes of UTF-8, cut on a character boundary.
- Only :class:`Interrupted` escapes :func:`invoke_tool`; a tool that was stopped but has
  something for the session (an interrupted sub-agent's run) returns a result marked
  ``interrupted`` instead, which the caller saves before it stops.
- A built-in tool may return a :class:`ToolResult` with ``meta``: what the session records
  beside the result (the ``agent`` tool: the sub-agent's session); hooks never see or
  rewrite it.
"""

from __future__ import annotations

import json
from dataclasses import replace

from ..cancel import CancelToken
from ..common.json_value import JSON, JSONObject
from ..errors import ArgumentsError, Interrupted, SandboxError
from ..ctx.host import Host, RunContext
from ..sandbox.protocol import JSValue, SandboxLike
from ..common import bounded
from ..common.text import repair
from .model import JSTool, Tool, ToolResult
from .schemas import arguments_problem

__all__ = ["CUT_NOTE", "OUTPUT_CAP", "cap_text", "decode_arguments", "invoke_tool"]

OUTPUT_CAP = 256 * 1024
CUT_NOTE = "\n[rienda: output cut at 256 KiB]"


def cap_text(text: str, cap: int = OUTPUT_CAP) -> str:
    """``text`` if it fits in ``cap`` bytes of UTF-8; else a prefix cut on a character
    boundary plus a note saying it was cut, the whole within ``cap`` bytes."""
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded) <= cap:
        return text
    room = cap - len(CUT_NOTE.encode("utf-8"))
    return encoded[:room].decode("utf-8", "ignore") + CUT_NOTE


def decode_arguments(tool: Tool, arguments: JSON) -> JSONObject:
    """The arguments as a dict that matches ``tool.parameters``; raises ArgumentsError."""
    if arguments == bounded.DEEP_ARGUMENTS or (not isinstance(arguments, str) and bounded.too_deep(arguments)):
        raise ArgumentsError(f"arguments for {tool.name} are {bounded.TOO_DEEP}")
    if isinstance(arguments, str):
        try:
            arguments = bounded.loads(arguments) if arguments.strip() else {}
        except bounded.Unreadable as exc:
            raise ArgumentsError(f"arguments for {tool.name} are {exc}") from exc
    if not isinstance(arguments, dict):
        raise ArgumentsError(
            f"arguments for {tool.name} must be a JSON object, got {_json_kind(arguments)}"
        )
    problem = arguments_problem(tool.parameters, arguments)
    if problem is not None:
        raise ArgumentsError(f"invalid arguments for {tool.name}: {problem}")
    return arguments


def invoke_tool(
    tool: Tool, arguments: JSON, run: RunContext, sandbox: SandboxLike, cancel: CancelToken,
    call_id: str | None = None,
) -> ToolResult:
    """Run one tool call (the model's ``call_id``, when there is one) and return what the
    model reads. Raises only Interrupted."""
    try:
        args = decode_arguments(tool, arguments)
    except ArgumentsError as exc:
        return ToolResult(str(exc), True)
    host = Host(run, f"tool:{tool.name}", cancel, call_id)
    try:
        if isinstance(tool, JSTool):
            result = _execute_js(tool, args, host, sandbox, cancel)
        else:
            returned = tool.run(host, args)
            result = returned if isinstance(returned, ToolResult) else ToolResult(returned[0], bool(returned[1]))
    except Interrupted:
        raise
    except SandboxError as exc:
        result = ToolResult(f"{tool.name} failed: {exc}", True)
    except Exception as exc:  # noqa: BLE001 - a built-in's failure is a result, not a crash
        result = ToolResult(f"{tool.name} failed: {type(exc).__name__}: {exc}", True)
    return replace(result, text=cap_text(repair(result.text)))  # a path's undecodable bytes...


def _execute_js(tool: JSTool, args: JSONObject, host: Host, sandbox: SandboxLike, cancel: CancelToken) -> ToolResult:
    returned = sandbox.call(tool.path, tool.source, "execute", [args], host, cancel)
    return typed_result(tool.name, returned)


def typed_result(name: str, returned: JSValue) -> ToolResult:
    """Turn what ``execute`` returned into a result; a wrong shape is an error result."""
    if returned.kind == "string":
        return ToolResult(returned.value)
    if returned.kind == "object":
        text, is_error = returned.value.get("text"), returned.value.get("isError")
        if isinstance(text, str) and (is_error is None or isinstance(is_error, bool)):
            return ToolResult(text, bool(is_error))
        if isinstance(text, str):
            return ToolResult(f"{name} returned isError as {_json_kind(is_error)}; it must be a boolean", True)
    return ToolResult(
        f"{name} returned {_describe(returned)}; execute must return a string or "
        "{ text, isError } (serialize structured data with JSON.stringify)",
        True,
    )


def _describe(returned: JSValue) -> str:
    if returned.kind in ("undefined", "null"):
        return returned.kind
    if returned.kind == "object":
        return f"an object without a string 'text' ({_preview(returned.value)})"
    article = "an" if returned.kind[0] in "aeiou" else "a"
    return f"{article} {returned.kind} ({_preview(returned.value)})"


def _preview(value: JSON) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def _json_kind(value: JSON) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null", int: "a number", float: "a number"}.get(type(value), type(value).__name__)
