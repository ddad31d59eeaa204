"""The V8 bridge: isolates with a synchronous host-call doorbell, and a pool of fresh ones.

mini-racer's public API only offers asynchronous Python functions to JavaScript, but
Rienda's ``ctx`` is synchronous (``const text = ctx.file.read(p)``). This module uses
mini-racer's private C entry points (pinned: ``mini-racer==0.14.1``):

- ``mr_make_js_callback`` makes a JS function whose call runs our ctypes callback
  synchronously on the isolate's thread while JS waits: the *doorbell*.
- Request and reply travel through a SharedArrayBuffer (the *mailbox*) that Python sees
  as a writable memoryview, as UTF-16 code units, chunked when larger than the mailbox.
  Inside the doorbell Python must never touch a JS object (that would queue work on the
  isolate's thread, which is busy running the caller: a deadlock).
- Evaluations are started with ``mr_eval`` and their results collected from the same
  callback, so no asyncio loop sits on the critical path; ``mr_cancel_task`` stops them
  from any thread.

Contract: an :class:`Isolate` is used by one invocation at a time, then closed.
:class:`IsolatePool` prepares isolates (prelude included) on a background thread so that
creating and freeing them stays off the critical path.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import queue
import threading
import time
from collections.abc import Callable
from importlib import resources
from itertools import count
from typing import Any

from py_mini_racer import _exc as mr_exc
from py_mini_racer._context import Context
from py_mini_racer._dll import init_mini_racer, mr_callback_func
from py_mini_racer._objects import ObjectFactoryImpl

from .errors import Interrupted, OutOfMemory, SandboxError

__all__ = ["DEFAULT_MEMORY_LIMIT", "HostHandler", "Isolate", "IsolatePool"]

DEFAULT_MEMORY_LIMIT = 128 * 1024 * 1024
MAILBOX_BYTES = 1024 * 1024
_HEADER_BYTES = 16
_KIND_REQUEST = 1
_KIND_MORE = 2
_RESULT_CALLBACK = 1
_DOORBELL_CALLBACK = 2

# Receives (op, args) of one host call; returns a JSON-able value or raises.
HostHandler = Callable[[str, Any], Any]

_PRELUDE = (
    resources.files(__package__)
    .joinpath("prelude.js")
    .read_text(encoding="utf-8")
    .replace("__RIENDA_MAILBOX_BYTES__", str(MAILBOX_BYTES))
)

# mini-racer's Context wants an asyncio loop; our paths never use it.
_UNUSED_LOOP = asyncio.new_event_loop()

# V8 initializes process-wide state lazily on the first context; two threads creating
# their first contexts at once crashed the process (PartitionAlloc's configurable pool
# check failed). Creating contexts one at a time is cheap: the prelude is the slow part.
_CREATE_LOCK = threading.Lock()


def _dll():
    return init_mini_racer(ignore_duplicate_init=True)


class Isolate:
    """One fresh V8 isolate with Rienda's prelude installed.

    ``eval`` is synchronous and may be stopped from another thread with ``terminate``.
    Host calls from JS go to the handler set with ``set_host``; the handler's exceptions
    become JS ``Error`` objects whose ``name`` is the Python class name.
    """

    def __init__(self, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> None:
        self._dll = _dll()
        self._results: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._host: HostHandler | None = None
        self._request_parts: list[bytes] = []
        self._request_units = 0
        self._reply = b""
        self._reply_offset = 0
        self._task_id: int | None = None
        self._task_lock = threading.Lock()
        self._stopping = False
        self._closed = False
        self._callback = mr_callback_func(self._on_callback)
        with _CREATE_LOCK:
            self._handle = self._dll.mr_init_context(self._callback)
        self._context = Context(self._dll, self._handle, _UNUSED_LOOP, ObjectFactoryImpl(), count(10))
        self._dll.mr_set_hard_memory_limit(self._handle, memory_limit)
        self._install_prelude()

    # -- setup -----------------------------------------------------------------------
    def _install_prelude(self) -> None:
        self.eval(_PRELUDE)
        self._mailbox = self._eval_value("__rienda.mailbox")
        self._header = self._mailbox[:_HEADER_BYTES].cast("i")
        doorbell = self._context._wrap_raw_handle(
            self._dll.mr_make_js_callback(self._handle, _DOORBELL_CALLBACK)
        )
        install = self._eval_value("__rienda.installDoorbell")
        self._call_value(install, self._context._value_handle_to_python(doorbell))
        self._host = lambda op, args: args
        self.eval("__rienda.warm()")  # compiles the bridge's functions before any real call
        self._host = None

    # -- evaluation --------------------------------------------------------------------
    def set_host(self, handler: HostHandler | None) -> None:
        """Route this isolate's host calls to ``handler`` (None: every call fails)."""
        self._host = handler

    def eval(self, code: str) -> Any:
        """Evaluate ``code``; return a primitive result (use JSON strings for the rest).

        Raises :class:`Interrupted` when terminated, :class:`OutOfMemory` at the memory
        limit, :class:`SandboxError` for an uncaught JS error or a syntax error (message
        as V8 formats it, with line and caret).
        """
        code_handle = self._context._python_to_value_handle(code)
        with self._task_lock:
            self._task_id = self._dll.mr_eval(self._handle, code_handle.raw, _RESULT_CALLBACK)
            if self._stopping:
                self._dll.mr_cancel_task(self._handle, self._task_id)
        try:
            return self._take_result()
        finally:
            with self._task_lock:
                self._task_id = None

    def _eval_value(self, code: str) -> Any:
        return self.eval(code)

    def _call_value(self, function: Any, argument: Any) -> None:
        argv = self._eval_value("[]")
        argv.append(argument)
        handles = [self._context._python_to_value_handle(v) for v in (function, None, argv)]
        self._dll.mr_call_function(self._handle, *(h.raw for h in handles), _RESULT_CALLBACK)
        self._take_result()

    def _take_result(self) -> Any:
        raw = self._results.get()
        try:
            return self._context._value_handle_to_python(self._context._wrap_raw_handle(raw))
        except mr_exc.JSOOMException as exc:
            raise OutOfMemory("the extension exceeded its memory limit and was stopped") from exc
        except mr_exc.JSTerminatedException as exc:
            raise Interrupted("stopped") from exc
        except mr_exc.JSEvalException as exc:
            raise SandboxError(str(exc)) from exc

    def terminate(self) -> None:
        """Stop the running evaluation and any later one, from any thread."""
        with self._task_lock:
            self._stopping = True
            if self._task_id is not None and not self._closed:
                self._dll.mr_cancel_task(self._handle, self._task_id)

    def out_of_memory(self) -> bool:
        """Whether the isolate hit its hard memory limit (also in async continuations)."""
        return bool(self._dll.mr_hard_memory_limit_reached(self._handle))

    def close(self) -> None:
        """Free the isolate, stopping whatever still runs in it (timers, promises)."""
        if not self._closed:
            self._closed = True
            self._host = None
            self._dll.mr_free_context(self._handle)

    # -- the doorbell (runs on the isolate's thread; must never raise) ------------------
    def _on_callback(self, callback_id: int, raw: Any) -> None:
        if callback_id == _RESULT_CALLBACK:
            self._results.put(raw)
            return
        self._context._free(raw)  # the call's arguments: unused, everything is in the mailbox
        if callback_id == _DOORBELL_CALLBACK:
            try:
                self._on_doorbell()
            except BaseException as exc:  # noqa: BLE001 - nothing may escape a ctypes callback
                self._start_reply(_error_reply(exc))

    def _on_doorbell(self) -> None:
        kind, total, units = self._header[0], self._header[1], self._header[2]
        if kind == _KIND_MORE:
            self._write_reply_chunk()
            return
        self._request_parts.append(bytes(self._mailbox[_HEADER_BYTES : _HEADER_BYTES + 2 * units]))
        self._request_units += units
        if self._request_units < total:
            return
        request = b"".join(self._request_parts).decode("utf-16-le", "surrogatepass")
        self._request_parts, self._request_units = [], 0
        self._start_reply(self._dispatch(request))

    def _dispatch(self, request: str) -> str:
        op, args = json.loads(request)
        if self._host is None:
            raise SandboxError(f"no host is attached to this isolate (call {op!r})")
        try:
            value = self._host(op, args)
        except BaseException as exc:  # noqa: BLE001 - every host failure becomes a JS Error
            return _error_reply(exc)
        return json.dumps({"value": value}, ensure_ascii=False)

    def _start_reply(self, reply: str) -> None:
        self._reply = reply.encode("utf-16-le", "surrogatepass")
        self._reply_offset = 0
        self._header[1] = len(self._reply) // 2
        self._write_reply_chunk()

    def _write_reply_chunk(self) -> None:
        capacity = len(self._mailbox) - _HEADER_BYTES
        chunk = self._reply[self._reply_offset : self._reply_offset + capacity]
        self._mailbox[_HEADER_BYTES : _HEADER_BYTES + len(chunk)] = chunk
        self._header[2] = len(chunk) // 2
        self._reply_offset += len(chunk)


def _error_reply(exc: BaseException) -> str:
    name = type(exc).__name__
    message = str(exc) or name
    return json.dumps({"error": {"name": name, "message": message}}, ensure_ascii=False)


class IsolatePool:
    """Keeps fresh isolates ready and frees used ones, on a background thread.

    :meth:`acquire` returns an isolate nobody has used (creating one inline if the pool is
    momentarily empty); :meth:`release` hands it back to be freed, never reused. The pool
    starts with ``size`` ready isolates and doubles its target, up to ``max_size``, each
    time a burst of invocations empties it (a turn with many hooks); each ready isolate
    costs about 0.7 MB, and after ``idle_seconds`` without use the target halves again.
    The worker frees released isolates before preparing new ones, and waits for a quiet
    moment (``quiet_ms`` without an acquire or release) so it does not compete with a burst
    of invocations for the two cores and the GIL, unless fewer than ``low_water`` are ready.
    """

    def __init__(self, size: int = 2, memory_limit: int = DEFAULT_MEMORY_LIMIT, max_size: int = 32,
                 idle_seconds: float = 60.0, quiet_ms: float = 5.0, low_water: int = 2) -> None:
        self.memory_limit = memory_limit
        self.quiet = quiet_ms / 1000
        self.low_water = low_water
        self._last_activity = 0.0
        self.min_size = size
        self.target = size
        self.idle_seconds = idle_seconds
        self.max_size = max(size, max_size)
        self.misses = 0  # acquires that found the pool empty
        self._ready: queue.Queue[Isolate] = queue.Queue()
        self._to_close: queue.SimpleQueue[Isolate] = queue.SimpleQueue()
        self._wake = threading.Semaphore(0)
        self._stopped = False
        self._worker = threading.Thread(target=self._work, name="rienda-isolate-pool", daemon=True)
        self._worker.start()
        self._wake.release()
        atexit.register(self.shutdown)

    def acquire(self) -> Isolate:
        """A prepared isolate. The refill waits for :meth:`release`, so the worker does not
        compete with the call for the CPU and the GIL, unless the pool ran dry."""
        self._last_activity = time.perf_counter()
        try:
            isolate = self._ready.get_nowait()
        except queue.Empty:
            self.misses += 1
            self.target = min(self.max_size, self.target * 2)
            self._wake.release()
            return Isolate(self.memory_limit)
        if self._ready.qsize() < self.low_water:
            self._wake.release()
        return isolate

    def release(self, isolate: Isolate) -> None:
        self._last_activity = time.perf_counter()
        self._to_close.put(isolate)
        self._wake.release()

    @property
    def ready(self) -> int:
        return self._ready.qsize()

    def shutdown(self) -> None:
        """Stop the worker and free the prepared isolates (at interpreter exit)."""
        if self._stopped:
            return
        self._stopped = True
        self._wake.release()
        self._worker.join(timeout=5)
        for pending in (self._ready, self._to_close):
            while not pending.empty():
                pending.get_nowait().close()

    def _work(self) -> None:
        while True:
            if not self._wake.acquire(timeout=self.idle_seconds):
                self._shrink()
                continue
            if self._stopped:
                return
            self._wait_for_quiet()
            try:
                self._close_released()
                while self._ready.qsize() < self.target and not self._stopped:
                    self._ready.put(Isolate(self.memory_limit))
                    self._close_released()
                    self._wait_for_quiet()
            except Exception:  # noqa: BLE001 - a failed refill is retried on the next wake
                pass

    def _wait_for_quiet(self) -> None:
        while self._ready.qsize() >= self.low_water and not self._stopped:
            pause = self._last_activity + self.quiet - time.perf_counter()
            if pause <= 0:
                return
            time.sleep(pause)

    def _shrink(self) -> None:
        """Idle: halve the target (not below the initial size) and free the surplus."""
        self.target = max(self.min_size, self.target // 2)
        while self._ready.qsize() > self.target:
            try:
                self._ready.get_nowait().close()
            except queue.Empty:
                return

    def _close_released(self) -> None:
        while True:
            try:
                self._to_close.get_nowait().close()
            except queue.Empty:
                return
