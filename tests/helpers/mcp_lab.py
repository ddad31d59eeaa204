"""An MCP server for the cases no public server shows, written with the SDK's own server
class (``MCPServer`` in mcp 2.x, ``FastMCP`` in 1.x): run as a real process.

    python tests/helpers/mcp_lab.py              over stdio
    python tests/helpers/mcp_lab.py http PORT    over streamable HTTP on 127.0.0.1:PORT

``$LAB_DIR`` (default: the current directory) is where it leaves traces a test reads:
``pids`` (one line per start), ``calls`` (one line per call of ``double``), ``started``
(``slow`` and ``stubborn`` began) and ``cancelled`` (``slow`` saw the client's cancellation).
"""

from __future__ import annotations

import base64
import os
import sys
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")  # the SDK's deprecation notes would fill the stderr tests read

import anyio  # noqa: E402

try:
    from mcp.server.mcpserver import Context, Image
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context, FastMCP as Server, Image  # type: ignore[no-redef]

from mcp.types import EmbeddedResource, ResourceLink, TextResourceContents  # noqa: E402

LAB = Path(os.environ.get("LAB_DIR", "."))
server = Server("lab")


def trace(name: str, line: str) -> None:
    with open(LAB / name, "a", encoding="utf-8") as file:
        file.write(line + "\n")


@server.tool()
def double(n: int) -> str:
    """Doubles a whole number (and notes the call in LAB_DIR/calls)."""
    trace("calls", str(n))
    return str(2 * n)


@server.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Logs, reports progress three times, then sleeps; notes a cancellation."""
    await ctx.info("warming up")
    for step in (1, 2, 3):
        await ctx.report_progress(step, 3, f"step {step}")
    trace("started", "slow")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        trace("cancelled", "slow")
        raise
    return f"slept {seconds:g} s"


@server.tool()
def stubborn(seconds: float) -> str:
    """Sleeps in a thread, deaf to any cancellation."""
    trace("started", "stubborn")
    time.sleep(seconds)
    return "done"


@server.tool()
def crash() -> str:
    """Ends its own process mid-call."""
    print("lab: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def picture() -> list:
    """A caption and a small PNG image."""
    return ["a red dot", Image(data=base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="),
                                format="png")]


@server.tool()
def documents() -> list:
    """An embedded text resource and a link to another."""
    return [EmbeddedResource(type="resource", resource=TextResourceContents(
                uri="file:///notes.txt", mimeType="text/plain", text="twelve chars")),
            ResourceLink(type="resource_link", uri="file:///other.txt", name="other.txt")]


@server.tool()
def environment(name: str) -> str:
    """The value of one of the server's environment variables."""
    return os.environ.get(name, "(unset)")


@server.tool()
def authorization(ctx: Context) -> str:
    """The Authorization header of the HTTP request that carried this call."""
    headers = ctx.headers if hasattr(ctx, "headers") else ctx.request_context.request.headers
    return (headers or {}).get("authorization", "(none)")


@server.tool()
def big(kib: int) -> str:
    """A text of ``kib`` KiB."""
    return "é" * (kib * 512)


@server.tool(name="a_name_that_goes_on_and_on_past_what_rienda_allows_for_tools")
def long_name() -> str:
    """Its Rienda name would be over 64 characters."""
    return "never called"


if __name__ == "__main__":
    trace("pids", str(os.getpid()))
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
