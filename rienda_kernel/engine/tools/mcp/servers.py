"""The MCP servers of one :class:`~rienda_kernel.engine.runtime.rienda.Rienda`: one event loop on a
thread of its own, each server started once, when one of its tools is first needed.

Contracts:
- :meth:`McpServers.tools` starts the servers asked for that are not running (all at once,
  each within its ``start_timeout``) and returns their tools as :class:`..model.McpTool`, with
  a :class:`..model.McpProblem` (a diagnostic, source ``mcp:SERVER``) for each server that
  failed to start (its stderr's last lines) and each tool skipped (a name that breaks the
  name rule, an ``inputSchema`` that is not a usable JSON Schema). A server whose settings
  changed in config.yaml is restarted; one removed is stopped. A failed start is tried
  again by the next call of :meth:`tools`.
- A tool's call (what its :class:`..model.McpTool` runs) runs on the loop while the calling
  thread waits on a queue of the call's events (:data:`_CallEvent`): the server's progress
  notifications and log messages reach the call's host as log lines on the calling thread,
  while the call runs. The cancel token ends the wait at once with
  :class:`Interrupted` (the call's task is cancelled, so the SDK sends
  ``notifications/cancelled``). A server that is gone (it crashed mid-call, the connection
  closed) makes the call an error result; the next call starts the server again.
- :meth:`McpServers.close` stops every server (a busy or interrupted one by its process
  group after :data:`BUSY_GRACE_S`; an idle one with the SDK's own shutdown), within about
  three seconds in all, then ends the loop. It is registered with :mod:`atexit` while servers run, so an
  embedding that never closes still leaves no server behind.

Threads and their state:
- The loop thread ``rienda-mcp`` alone reads and writes the servers' state: the
  connections, their listed tools, the starts under way, each server's running calls and
  the stops left to finish. A caller on another thread asks the loop (a coroutine submitted
  to it) and waits for its answer, bounded by the cancel token (:meth:`close` by its
  budget); what comes back is values (a start's failure, a listing), never the loop's own
  dictionaries.
- The callers' threads own the loop's life (made on first need, ended by :meth:`close`,
  under one lock) and the settings of the last :meth:`tools` (replaced whole, never changed
  in place, handed to the loop with each request). Without a loop no server runs, so
  :meth:`tools` asks for none when it wants none started.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import queue
import signal
import threading
from collections.abc import Collection, Coroutine, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, TypeVar, assert_never

from ...cancel import CancelToken
from ...common.json_value import JSONObject
from ...errors import Interrupted
from .connection import Connection, StartFailed, describe_failure
from .names import tool_name
from .results import result_text
from .settings import ServerSpec
from ..model import NAME_RULE, BuiltinHost, McpProblem, McpTool

if TYPE_CHECKING:
    from mcp.types import Tool

__all__ = ["McpServers"]

CLOSE_BUDGET_S = 3.0
BUSY_GRACE_S = 0.5  # a busy or interrupted server's moment to act on a cancellation before it is terminated
_T = TypeVar("_T")


@dataclass(frozen=True)
class _Log:
    """A log line for the call's host (the server's progress or log message)."""

    text: str


@dataclass(frozen=True)
class _Done:
    """The call's future is done: its result (or error) is there to take."""


@dataclass(frozen=True)
class _Cancel:
    """The run's cancel token was set: the call is cancelled on the loop."""


# What the calling thread of one tool call waits for, in its queue.
_CallEvent: TypeAlias = _Log | _Done | _Cancel


class McpServers:
    """The servers of one Rienda (none runs until :meth:`tools` asks for it)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        # The callers' threads' (see the module's docstring): one catalog at a time, the
        # loop's life, the last settings.
        self._lock = threading.Lock()
        self._loop_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._specs: Mapping[str, ServerSpec] = {}
        # The loop thread's alone (see the module's docstring).
        self._connections: dict[str, Connection] = {}
        self._listed: dict[str, list[Tool]] = {}  # server -> its tools, as the SDK listed them
        self._waiting: dict[str, list[queue.SimpleQueue[_CallEvent]]] = {}  # server -> its calls' queues
        self._background: set[asyncio.Future[None]] = set()  # stops of dropped connections, held till done
        self._starting: dict[str, asyncio.Future[str | None]] = {}  # server -> its start under way

    # -- the catalog -----------------------------------------------------------------------------
    def tools(self, specs: Mapping[str, ServerSpec], wanted: Collection[str],
              cancel: CancelToken | None = None) -> tuple[dict[str, McpTool], list[McpProblem]]:
        """The tools of the ``wanted`` servers among ``specs`` (started as needed), and the
        problems of what could not be used. Interrupted when ``cancel`` stops the wait."""
        from ..schemas import schema_problems

        with contextlib.suppress(ImportError):  # here: a slow first import is no server's start time
            import mcp  # noqa: F401
        with self._lock:
            self._specs = specs = dict(specs)
            started: dict[str, str | None] = {}
            listings: dict[str, list[Tool]] = {}
            if self._loop is not None or any(name in specs for name in wanted):  # no loop: no server to stop
                future = self._submit(self._refresh(specs, sorted(wanted)))
                started, listings = self._wait(future, cancel or CancelToken())
        tools: dict[str, McpTool] = {}
        problems = [McpProblem(name, problem) for name, problem in started.items() if problem]
        for server in sorted(wanted):
            for listed in listings.get(server, []) if server in specs and not started.get(server) else []:
                name = tool_name(server, listed.name)
                problem = (f"its name {name!r} is not a valid tool name (1 to 64 letters, digits, '_' or '-')"
                           if not NAME_RULE.fullmatch(name) else "; ".join(schema_problems(listed.input_schema))
                           .replace("'parameters'", "its inputSchema"))
                if problem:
                    problems.append(McpProblem(server, f"MCP server {server!r}: tool {listed.name!r} skipped: {problem}",
                                               tool=listed.name))
                    continue
                tools[name] = McpTool(name, listed.description or listed.title or "", dict(listed.input_schema),
                                      partial(self._run, server, listed.name), server=server, tool=listed.name)
        return tools, problems

    async def _refresh(self, specs: Mapping[str, ServerSpec],
                       wanted: list[str]) -> tuple[dict[str, str | None], dict[str, list[Tool]]]:
        """On the loop: stop the connections whose settings changed in ``specs`` (or that it
        no longer names), start the ``wanted`` servers not running. Each started server's
        failure (or None), and the listed tools of each wanted server."""
        stale = [name for name, c in self._connections.items() if specs.get(name) != c.spec]
        needed = [name for name in wanted if name in specs
                  and (name not in self._connections or name in stale or self._connections[name].dead)]
        await asyncio.gather(*(self._connections.pop(name).stop(terminate_after=BUSY_GRACE_S) for name in stale))
        for name in stale:
            self._listed.pop(name, None)
        outcomes = await asyncio.gather(*(self._start(name, specs[name]) for name in needed))
        return dict(zip(needed, outcomes)), {name: self._listed.get(name, []) for name in wanted}

    async def _start(self, name: str, spec: ServerSpec) -> str | None:
        """Start ``name`` from ``spec`` (a call and a catalog that both want it share one
        start): its failure, or None."""
        pending = self._starting.get(name)
        if pending is None:
            pending = self._starting[name] = asyncio.ensure_future(self._start_now(name, spec))
            pending.add_done_callback(lambda done: self._starting.pop(name, None) if self._starting.get(name) is done
                                      else None)
        return await asyncio.shield(pending)  # a cancelled caller leaves the start to finish for the next

    async def _start_now(self, name: str, spec: ServerSpec) -> str | None:
        old = self._connections.pop(name, None)
        if old is not None:
            await old.stop(terminate_after=0)
        connection = Connection(spec, self.workdir, partial(self._log, name))
        self._connections[name] = connection  # from now on, close() stops it too
        try:
            self._listed[name] = await connection.start()
        except StartFailed as exc:
            self._listed.pop(name, None)
            if self._connections.get(name) is connection:
                del self._connections[name]
            return str(exc)
        return None

    # -- one call --------------------------------------------------------------------------------
    def _run(self, server: str, tool: str, host: BuiltinHost, arguments: JSONObject) -> tuple[str, bool]:
        """What :class:`McpTool` runs: the call on the loop, waited on by the calling thread."""
        events: queue.SimpleQueue[_CallEvent] = queue.SimpleQueue()
        future = self._submit(self._call(server, tool, arguments, events, self._specs.get(server)))
        future.add_done_callback(lambda _: events.put(_Done()))
        unregister = host.cancel.on_cancel(lambda: events.put(_Cancel()))
        try:
            while True:
                event = events.get()
                match event:
                    case _Log(text=text):
                        host.emit_log(text)
                    case _Done():
                        return future.result()
                    case _Cancel():
                        future.cancel()  # cancels the task on the loop: the SDK tells the server
                        raise Interrupted("stopped")
                    case _:
                        assert_never(event)
        finally:
            unregister()

    async def _call(self, server: str, tool: str, arguments: JSONObject,
                    events: queue.SimpleQueue[_CallEvent], spec: ServerSpec | None) -> tuple[str, bool]:
        """On the loop: the call, on ``server``'s connection (started from ``spec``, its
        settings as configured now, if it is not running)."""
        label = f"mcp__{server}__{tool}"
        connection = self._connections.get(server)
        if connection is None or connection.dead:
            if spec is None:
                return f"{label} failed: MCP server {server!r} is no longer configured", True
            problem = await self._start(server, spec)
            if problem:
                return f"{label} failed: {problem}", True
            connection = self._connections[server]
        self._waiting.setdefault(server, []).append(events)
        try:
            result = await connection.call(tool, arguments, lambda text: events.put(_Log(text)))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a server's failure is the call's error result
            return self._failed(label, connection, exc), True
        finally:
            self._waiting[server].remove(events)
        return result_text(result)

    def _failed(self, label: str, connection: Connection, exc: Exception) -> str:
        """The error result of a call the server did not answer, and the connection dropped
        when it is gone (the next call starts the server again)."""
        import anyio
        import httpx2
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED

        closed = isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED
        gone = closed or connection.dead or isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError,
                                                             anyio.EndOfStream, OSError, httpx2.TransportError))
        if not gone:
            what = exc.message if isinstance(exc, MCPError) else describe_failure(exc)
            return f"{label} failed: MCP server {connection.spec.name!r} answered with an error: {what}"
        connection.ended = True
        stopping = asyncio.ensure_future(connection.stop(terminate_after=0))
        self._background.add(stopping)
        stopping.add_done_callback(self._background.discard)
        what = "closed the connection during the call" if closed else describe_failure(exc)
        return f"{label} failed: {connection.failure(what)} (the next call starts it again)"

    def _log(self, server: str, text: str) -> None:
        """A server's log message: to the latest of its calls still running (else nowhere)."""
        waiting = self._waiting.get(server)
        if waiting:
            waiting[-1].put(_Log(text))

    # -- the loop and its end --------------------------------------------------------------------
    def _submit(self, coroutine: Coroutine[object, object, _T]) -> concurrent.futures.Future[_T]:
        """Run ``coroutine`` on the loop (made now if there is none): its future."""
        with self._loop_lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name="rienda-mcp", daemon=True)
                self._thread.start()
                atexit.register(self.close)
            return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    @staticmethod
    def _wait(future: concurrent.futures.Future[_T], cancel: CancelToken) -> _T:
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        unregister = cancel.on_cancel(done.set)
        try:
            done.wait()
        finally:
            unregister()
        if not future.done():
            future.cancel()  # its task ends with the loop's next turn, not left pending at exit
            raise Interrupted("stopped while starting MCP servers")
        return future.result()

    def close(self) -> None:
        """Stop every server and the loop; at most about :data:`CLOSE_BUDGET_S` seconds."""
        with self._loop_lock:
            loop, thread = self._loop, self._thread
            if loop is None:
                return
            atexit.unregister(self.close)
            self._loop = None
        try:
            asyncio.run_coroutine_threadsafe(self._stop_all(), loop).result(CLOSE_BUDGET_S)
        except (concurrent.futures.TimeoutError, RuntimeError):
            loop.call_soon_threadsafe(self._kill_all)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(1.0)

    async def _stop_all(self) -> None:
        await asyncio.gather(*(c.stop(terminate_after=BUSY_GRACE_S if c.calls or c.interrupted else None,
                                      grace=CLOSE_BUDGET_S - BUSY_GRACE_S - 0.5)
                               for c in self._connections.values()))
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in others:  # a listing or a start whose caller was interrupted: ended, not destroyed pending
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)
        self._connections.clear()

    def _kill_all(self) -> None:
        """On the loop, when the stops outlast the budget: every server's process group killed."""
        for connection in self._connections.values():
            connection.signal(signal.SIGKILL)
        self._connections.clear()
