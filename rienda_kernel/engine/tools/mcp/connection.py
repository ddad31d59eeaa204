"""One MCP server's connection, on the servers' event loop: start, list, call, stop.

One task (:meth:`Connection._hold`) holds the SDK's transport (``stdio_client`` or
``streamable_http_client``) and its ``ClientSession`` from ``initialize`` to the stop: the
SDK's anyio scopes must be entered and left in one task. Calls are tasks of their own.

Contracts:
- :meth:`start` returns the server's tools once it answered ``initialize`` and
  ``tools/list`` within ``start_timeout`` seconds, or raises :class:`StartFailed` with one
  line naming the server, what went wrong and the last lines of its stderr; a server that
  does not answer in time is ended (its process group terminated).
- A stdio server's stderr goes to a pipe Rienda reads (the last lines are kept, for
  messages), never to the terminal. Its process is found by that pipe (Linux ``/proc``), so
  :meth:`stop` can end the process group itself, soon, when the server is busy or was
  interrupted (it first gets a moment to act on the cancellation and see its stdin close);
  an idle server gets the SDK's own shutdown (stdin closed, then a grace).
- Every line a stdio server writes on stdout is read by :mod:`.server_lines`: a reply
  that cannot be read ends its request at once with what was wrong, any other line that is
  not MCP is skipped and said as the server's log messages are, never as a traceback.
- :attr:`dead` is true once the server is known gone (a call saw the connection close, its
  process is no longer running): the next call starts a new connection.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from ...common.json_value import JSON, JSONObject
from . import server_lines
from .settings import ServerSpec

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.client import Transport
    from mcp.client._transport import TransportStreams  # what a Transport yields (named only there)
    from mcp.types import CallToolResult, LoggingMessageNotificationParams, Tool

__all__ = ["Connection", "StartFailed", "describe_failure"]

_STDERR_LINES = 5


class StartFailed(Exception):
    """A server that could not be started or reached; the message is one line for a person."""


class Connection:
    """A server's live connection (or its attempt at one)."""

    def __init__(self, spec: ServerSpec, workdir: Path, on_log: Callable[[str], None]) -> None:
        self.spec = spec
        self.workdir = workdir
        self.on_log = on_log
        self.session: ClientSession | None = None
        self.pid: int | None = None
        self.calls = 0  # calls in flight
        self.interrupted = False  # a call was cancelled and no call has completed since
        self.ended = False  # the connection is over (or known to be)
        self._stderr = _StderrTail() if spec.kind == "stdio" else None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    # -- start ---------------------------------------------------------------------------------
    async def start(self) -> list[Tool]:
        """Connect, initialize and list the tools (all pages); StartFailed otherwise."""
        stop = self._stop = asyncio.Event()
        ready: asyncio.Future[list[Tool]] = asyncio.get_running_loop().create_future()
        self._task = asyncio.ensure_future(self._hold(ready, stop))
        try:
            return await asyncio.wait_for(asyncio.shield(ready), self.spec.start_timeout)
        except asyncio.TimeoutError as exc:
            ready.cancel()  # what the attempt ends with now is nobody's to read
            await self.stop(terminate_after=0)
            raise StartFailed(self.failure(f"no answer to initialize within {self.spec.start_timeout:g} s")) from exc
        except StartFailed:
            await self.stop(terminate_after=0)
            raise

    async def _hold(self, ready: asyncio.Future[list[Tool]], stop: asyncio.Event) -> None:
        try:
            from mcp import ClientSession
        except ImportError:
            ready.set_exception(StartFailed(f"MCP server {self.spec.name!r} cannot start: the MCP SDK is not "
                                            "installed (pip install 'rienda[mcp]')"))
            return
        server_lines.install_line_reader()
        server_lines.CURRENT_NOTE.set(self.on_log)  # this task's, and its transport's tasks': what is skipped
        try:
            async with contextlib.AsyncExitStack() as stack:
                streams = await stack.enter_async_context(await self._transport(stack))
                session = await stack.enter_async_context(ClientSession(
                    streams[0], streams[1], logging_callback=self._logged))
                await session.initialize()
                tools = await _list_tools(session)
                self.session = session
                ready.set_result(tools)
                await stop.wait()
        except BaseException as exc:  # noqa: BLE001 - whatever ended the connection is the message
            if not ready.done():
                ready.set_exception(StartFailed(self.failure(describe_failure(exc))))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self.session = None
            self.ended = True
            if self._stderr is not None:
                self._stderr.close()

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Transport:
        spec = self.spec
        if spec.command is None:  # a streamable HTTP server (ServerSpec.kind): it has a url
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client  # where streamable_http takes it from

            if spec.url is None:
                raise StartFailed("it has neither a command nor a url")
            client = await stack.enter_async_context(create_mcp_http_client(headers=dict(spec.headers)))
            return streamable_http_client(spec.url, http_client=client)
        from mcp import StdioServerParameters, stdio_client

        cwd = self.workdir / Path(spec.cwd).expanduser() if spec.cwd else self.workdir
        if not cwd.is_dir():
            raise StartFailed(f"its cwd {str(cwd)!r} is not a directory")
        stderr = self._stderr
        if stderr is None:
            raise StartFailed("its stderr has no pipe")  # a stdio server's always has (__init__)
        params = StdioServerParameters(command=spec.command, args=list(spec.args), env=dict(spec.env) or None,
                                       cwd=str(cwd), encoding_error_handler="replace")  # bad bytes: U+FFFD
        return _Spawned(stdio_client(params, errlog=stderr.writer), self, stderr)

    # -- use -----------------------------------------------------------------------------------
    @property
    def dead(self) -> bool:
        if self.session is None or self.ended:
            return True
        return self.pid is not None and not _alive(self.pid)

    async def call(self, tool: str, arguments: JSONObject, on_progress: Callable[[str], None]) -> CallToolResult:
        """The server's ``CallToolResult`` (its progress notifications told ``on_progress``,
        one line each); what the SDK raises otherwise (a closed connection)."""
        session = self.session
        if session is None:  # its caller starts a connection that is dead (no session) first
            raise ConnectionError(f"MCP server {self.spec.name!r} is not connected")

        async def reported(progress: float, total: float | None, message: str | None) -> None:
            amount = f"{progress:g}/{total:g}" if total else f"{progress:g}"
            on_progress(f"{message} ({amount})" if message else f"progress {amount}")

        self.calls += 1
        try:
            result = await session.call_tool(tool, arguments, progress_callback=reported)
        except asyncio.CancelledError:
            self.interrupted = True
            raise
        finally:
            self.calls -= 1
        self.interrupted = False
        return result

    async def _logged(self, params: LoggingMessageNotificationParams) -> None:
        data = params.data
        text = data if isinstance(data, str) else _json(data)
        level = str(params.level)
        self.on_log(text if level == "info" else f"{level}: {text}")

    def failure(self, what: str) -> str:
        """One line: the server, what went wrong, and the last lines of its stderr."""
        tail = self._stderr.tail() if self._stderr is not None else ""
        return f"MCP server {self.spec.name!r} ({self.spec.describe()}): {what}" + (
            f"; its stderr ended: {tail}" if tail else "")

    def stderr_tail(self) -> str:
        return self._stderr.tail() if self._stderr is not None else ""

    # -- stop ----------------------------------------------------------------------------------
    async def stop(self, terminate_after: float | None = None, grace: float = 2.5) -> None:
        """End the connection with the SDK's shutdown (stdin closed, a grace, then its own
        terminate). ``terminate_after``: terminate the process group ourselves if it is still
        running that many seconds from now (0: at once), for a busy or interrupted server
        that would hold the SDK's grace; killed if it outlasts ``grace``."""
        if self._stop is not None:
            self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        if self.session is None:  # still starting: nothing to finish politely
            self.signal(signal.SIGTERM)
            task.cancel()
        elif terminate_after is not None:
            done, _ = await asyncio.wait({task}, timeout=terminate_after) if terminate_after else (set(), set())
            if done:
                return
            self.signal(signal.SIGTERM)
        done, _ = await asyncio.wait({task}, timeout=grace)
        if not done:
            self.signal(signal.SIGKILL)
            task.cancel()
            await asyncio.wait({task}, timeout=1.0)

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the server's process group (a stdio server found by its pid)."""
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signum)


class _Spawned(contextlib.AbstractAsyncContextManager["TransportStreams"]):
    """``stdio_client``, and once it has started the process: its pid (found by its stderr
    pipe ``stderr``), and our end of that pipe closed (so its reader sees the end when the
    server exits)."""

    def __init__(self, inner: Transport, connection: Connection, stderr: _StderrTail) -> None:
        self._inner = inner
        self._connection = connection
        self._stderr = stderr

    async def __aenter__(self) -> TransportStreams:
        try:
            streams = await self._inner.__aenter__()
            self._connection.pid = _child_with_stderr(self._stderr.inode)  # the process exists by now
        finally:
            self._stderr.spawned()
        return streams

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        traceback: TracebackType | None) -> bool | None:
        return await self._inner.__aexit__(kind, exc, traceback)


async def _list_tools(session: ClientSession) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    while True:
        if cursor is None:
            page = await session.list_tools()
        else:
            from mcp.types import PaginatedRequestParams

            page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools


def describe_failure(exc: BaseException) -> str:
    """One line for what ended a connection (the first leaf of an exception group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, StartFailed):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    if isinstance(exc, asyncio.CancelledError):
        return "stopped while starting"
    text = " ".join(str(exc).split())
    if text in ("Connection closed", ""):
        return "it exited before answering initialize" if text else type(exc).__name__
    return f"{type(exc).__name__}: {text}" if len(text) < 300 else f"{type(exc).__name__}: {text[:297]}..."


class _StderrTail:
    """A pipe for a server's stderr, read by a thread that keeps the last lines."""

    def __init__(self) -> None:
        read, write = os.pipe()
        self.writer = os.fdopen(write, "w")
        self.inode = os.fstat(write).st_ino
        self._lines: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES)
        self._partial = ""
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(read,), name="rienda-mcp-stderr", daemon=True)
        self._thread.start()

    def spawned(self) -> None:
        """The child has its copy of the write end; ours goes, so the reader sees the end."""
        if not self.writer.closed:
            self.writer.close()

    def close(self) -> None:
        self.spawned()

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                text = self._partial + chunk.decode("utf-8", "replace")
                *lines, self._partial = text.split("\n")
                self._lines.extend(line for line in lines if line.strip())
        if self._partial.strip():
            self._lines.append(self._partial)
        self._done.set()

    def tail(self) -> str:
        """The last lines, joined with `` | ``; after a brief wait for the rest when the pipe
        is ending (a server that just exited)."""
        if self.writer.closed:
            self._done.wait(0.5)
        lines = [line.strip() for line in self._lines]
        if not self._done.is_set() and self._partial.strip():
            lines.append(self._partial.strip())
        return " | ".join(line[:300] for line in lines[-_STDERR_LINES:])


def _child_with_stderr(inode: int) -> int | None:
    """The pid of this process's child whose stderr is the pipe ``inode`` (Linux), or None."""
    for pid in _children():
        try:
            if os.stat(f"/proc/{pid}/fd/2").st_ino == inode:
                return pid
        except OSError:
            continue
    return None


def _children() -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError):
                found += [int(pid) for pid in Path(f"/proc/self/task/{task}/children").read_text().split()]
    except OSError:
        return []
    return found


def _alive(pid: int) -> bool:
    """Whether ``pid`` (found through /proc) still runs; a zombie does not count."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _json(value: JSON) -> str:
    import json

    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)
