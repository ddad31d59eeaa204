"""Rienda's built-in tools: ``shell``, ``http``, ``read`` and ``write``, and ``agent``
(a sub-agent's run: :mod:`.agent`, over :mod:`..runtime.subagents`).

Each tool's ``run(host, args)`` returns ``(text, is_error)``: the text goes back to the
model as the tool result. Each keeps only what its result can hold (:data:`KEEP`), so a
300 MB response, a 10 GB file or a command printing without end costs no more memory than
that; each ends at an interrupt, even blocked in a system call (a FIFO nobody writes). Failures the model can act on (a missing file, a refused
connection, a non-zero exit) are results with ``is_error=True``; :class:`Interrupted`
propagates.
"""

from __future__ import annotations

from ..common.json_value import JSONObject
from ..ctx.processes import run_command
from ..tools.model import BuiltinHost, BuiltinTool
from . import agent

__all__ = ["BUILTIN_TOOLS"]

HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
# What a built-in keeps of a body, a file or each output stream: a little more than the
# result may hold (tools.invoke.OUTPUT_CAP, 256 KiB, which cuts it and says so); the rest is
# never read (a body, a file) or only shown as it comes (a command's output).
KEEP = 256 * 1024 + 4


def _schema(properties: JSONObject, required: list[str]) -> JSONObject:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _bad_arguments(args: object, required: list[str]) -> str | None:
    """A message if ``args`` lacks a required string argument, else None.

    The engine validates against the schema; this keeps a direct call from failing
    with a KeyError.
    """
    if not isinstance(args, dict):
        return "arguments must be an object"
    for name in required:
        if not isinstance(args.get(name), str):
            return f"missing or non-string argument: {name}"
    return None


def _run_shell(host: BuiltinHost, args: JSONObject) -> tuple[str, bool]:
    """stdout, then stderr, then ``exit code N``, separated by blank lines."""
    if problem := _bad_arguments(args, ["command"]):
        return problem, True
    try:
        result = run_command(
            args["command"],
            cwd=host.workspace.workdir,
            timeout_ms=args.get("timeout_ms"),
            on_output=host.emit_output,
            cancel=host.cancel,
            keep=KEEP,
        )
    except OSError as exc:  # the workspace directory is missing
        return str(exc), True
    parts = [text.rstrip("\n") for text in (result.stdout, result.stderr) if text.strip()]
    parts.append(f"exit code {result.code}")
    return "\n\n".join(parts), result.code != 0 or result.timed_out


def _run_http(host: BuiltinHost, args: JSONObject) -> tuple[str, bool]:
    """``HTTP <status>``, a blank line, then the body; an error from status 400 up."""
    if problem := _bad_arguments(args, ["url"]):
        return problem, True
    from ..ctx.http import FetchError, fetch  # httpx loads with the first call: most runs (every gate) never make one

    try:
        response = fetch(
            args["url"],
            method=args.get("method", "GET"),
            headers=args.get("headers"),
            body=args.get("body"),
            cancel=host.cancel,
            keep=KEEP,
        )
    except FetchError as exc:
        return str(exc), True
    return f"HTTP {response.status}\n\n{response.body}", response.status >= 400


def _run_read(host: BuiltinHost, args: JSONObject) -> tuple[str, bool]:
    """The file's text, or the reason it could not be read."""
    if problem := _bad_arguments(args, ["path"]):
        return problem, True
    try:
        return host.workspace.head(args["path"], KEEP)[0], False
    except (OSError, ValueError) as exc:
        return str(exc), True


def _run_write(host: BuiltinHost, args: JSONObject) -> tuple[str, bool]:
    """``wrote N bytes to PATH`` (N in UTF-8 bytes, PATH as given)."""
    if problem := _bad_arguments(args, ["path", "content"]):
        return problem, True
    try:
        host.workspace.write(args["path"], args["content"])
    except (OSError, ValueError) as exc:
        return str(exc), True
    size = len(args["content"].encode("utf-8", errors="replace"))
    return f"wrote {size} bytes to {args['path']}", False


SHELL = BuiltinTool(
    name="shell",
    description=(
        "Run a command with /bin/sh in the workspace directory and return its stdout, "
        "stderr and exit code."
    ),
    parameters=_schema(
        {
            "command": {"type": "string", "description": "The shell command line to run."},
            "timeout_ms": {
                "type": "integer",
                "minimum": 1,
                "description": "Kill the command if it runs longer than this many milliseconds.",
            },
        },
        ["command"],
    ),
    run=_run_shell,
)

HTTP = BuiltinTool(
    name="http",
    description="Send an HTTP request (redirects are followed) and return the status code and the response body as text.",
    parameters=_schema(
        {
            "url": {"type": "string", "description": "The absolute http:// or https:// URL."},
            "method": {"type": "string", "enum": HTTP_METHODS, "description": "The HTTP method; GET by default."},
            "headers": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Request headers, name to value.",
            },
            "body": {"type": "string", "description": "The request body."},
        },
        ["url"],
    ),
    run=_run_http,
)

READ = BuiltinTool(
    name="read",
    description="Read a text file (relative paths are resolved against the workspace directory) and return its contents.",
    parameters=_schema(
        {"path": {"type": "string", "description": "The file to read."}},
        ["path"],
    ),
    run=_run_read,
)

WRITE = BuiltinTool(
    name="write",
    description=(
        "Write text to a file, replacing its contents and creating missing parent directories "
        "(relative paths are resolved against the workspace directory)."
    ),
    parameters=_schema(
        {
            "path": {"type": "string", "description": "The file to write."},
            "content": {"type": "string", "description": "The complete new contents of the file."},
        },
        ["path", "content"],
    ),
    run=_run_write,
)

AGENT = BuiltinTool(name=agent.NAME, description=agent.DESCRIPTION, parameters=agent.PARAMETERS, run=agent.run_agent)

BUILTIN_TOOLS: dict[str, BuiltinTool] = {tool.name: tool for tool in (SHELL, HTTP, READ, WRITE, AGENT)}
