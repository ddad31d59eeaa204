"""The V8 bridge: isolates with a synchronous host-call doorbell, and a pool of fresh ones.

mini-racer's public API only offers asynchronous Python functions to JavaScript, but
Rienda's ``ctx`` is synchronous (``const text = ctx.file.read(p)``). Through mini-racer's
private C API (all of it in :mod:`.mini_racer_compat`):

- a JS function made by ``mr_make_js_callback`` runs our callback synchronously on the
  isolate's thread while JS waits: the *doorbell*;
- request and reply travel through a SharedArrayBuffer (the *mailbox*) that Python sees
  as a writable memoryview, as UTF-16 code units, chunked when larger than the mailbox.
  Inside the doorbell Python must never touch a JS object (that would queue work on the
  isolate's thread, which is busy running the caller: a deadlock);
- evaluations are started with ``mr_eval`` and their results collected from the same
  callback, so no asyncio loop sits on the critical path; ``mr_cancel_task`` stops them
  from any thread.

Everything that comes out of V8 as data is JSON text decoded once by
:func:`.wire.from_v8` (surrogates repaired, nesting bounded): :meth:`Isolate.eval_json`
for results, the doorbell for host-call requests.

Contract: an :class:`Isolate` is used by one invocation at a time, then closed.
:class:`IsolatePool` prepares isolates (prelude included) on a background thread so that
creating and freeing them stays off the critical path. This module runs V8 in the
current process; ``workers.Sandbox`` runs it in worker processes (``worker_main.py``).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from ..common.json_value import JSON
from ..errors import SandboxError
from .protocol import DEFAULT_MEMORY_LIMIT, HostHandler
from .mini_racer_compat import JSArray, PythonJSConvertedTypes, RawContext, RawValueHandleType, RealmFactory
from .wire import RawReply, error_reply, from_v8, host_reply

__all__ = ["DEFAULT_MEMORY_LIMIT", "PRELUDE", "HostHandler", "Isolate", "IsolatePool"]

MAILBOX_BYTES = 1024 * 1024
_HEADER_BYTES = 16
_KIND_REQUEST = 1
_KIND_MORE = 2
_RESULT_CALLBACK = 1
_DOORBELL_CALLBACK = 2
_NULL = RawReply('{"value":null}')

_HERE = Path(__file__).parent / "prelude"
# prelude/kernel.js: the mailbox, the doorbell, the realms; in every isolate's main context.
_KERNEL = (_HERE / "kernel.js").read_text(encoding="utf-8").replace("__RIENDA_MAILBOX_BYTES__", str(MAILBOX_BYTES))
# prelude/bridge.js + outcomes.js: one function of a transport, in every realm. Every realm
# compiles it anew (V8 caches no compilation across contexts), so it goes in without its
# comment lines and indentation (a third less to scan; nothing in it spans lines).
PRELUDE = "\n".join(
    line.strip()
    for name in ("bridge.js", "outcomes.js")
    for line in (_HERE / name).read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.strip().startswith("//")
)


class Isolate:
    """One fresh V8 isolate with Rienda's kernel and prelude installed.

    ``eval`` is synchronous and may be stopped from another thread with ``terminate``.
    Host calls from JS go to the handler set with ``set_host``; the handler's exceptions
    become JS ``Error`` objects whose ``name`` is the Python class name.
    ``heap_limit`` is V8's hard heap limit (checked after each GC).

    With ``realms``, the prelude is not installed in the main context: the isolate hosts
    fresh ShadowRealms instead (:mod:`.realms`), and a host call is answered only when it
    comes from the realm ``set_host`` named (a realm whose invocation ended gets an error).
    """

    def __init__(self, heap_limit: int = DEFAULT_MEMORY_LIMIT, realms: bool = False) -> None:
        self._results: queue.SimpleQueue[RawValueHandleType] = queue.SimpleQueue()
        self._host: HostHandler | None = None
        self._live = 0  # the realm whose host calls are answered (0: the main context)
        self._request_parts: list[bytes] = []
        self._request_units = 0
        self._reply = b""
        self._reply_offset = 0
        self._task_id: int | None = None
        self._task_lock = threading.Lock()
        self._stopping = False
        self._closed = False
        self._raw = RawContext(self._on_callback)
        self._raw.set_hard_memory_limit(heap_limit)
        self.realms = realms
        self._install_kernel()

    # -- setup -----------------------------------------------------------------------
    def _install_kernel(self) -> None:
        self.eval(_KERNEL)
        mailbox = self.eval("__kernel.mailbox")
        if not isinstance(mailbox, memoryview):
            raise SandboxError(f"the kernel's mailbox came as a {type(mailbox).__name__}, not a SharedArrayBuffer")
        self._mailbox = mailbox
        self._header = mailbox[:_HEADER_BYTES].cast("i")
        argv = self.eval("[]")
        if not isinstance(argv, JSArray):
            raise SandboxError(f"a JS array came as a {type(argv).__name__}")
        argv.append(self._raw.js_callback(_DOORBELL_CALLBACK))
        self._raw.start_call(self.eval("__kernel.installDoorbell"), argv, _RESULT_CALLBACK)
        self._take_result()
        if self.realms:
            self.eval(f"__kernel.setPrelude({json.dumps(PRELUDE)})")
            self.eval("__kernel.hello()")  # installs the ShadowRealm factory (on V8's thread)
            return
        self.eval(PRELUDE + "(__kernel.transport(0))")
        self._host = lambda op, args: args
        self.eval("__rienda.warm()")  # compiles the bridge's functions before any real call
        self._host = None

    # -- evaluation --------------------------------------------------------------------
    def set_host(self, handler: HostHandler | None, realm: int = 0) -> None:
        """Route the host calls of ``realm`` (0: the main context) to ``handler`` (None:
        every call fails); calls from any other realm fail."""
        self._host = handler
        self._live = realm

    def eval(self, code: str) -> PythonJSConvertedTypes:
        """Evaluate ``code``; return a primitive result (use :meth:`eval_json` for data).

        Raises :class:`Interrupted` when terminated, :class:`OutOfMemory` at the memory
        limit, :class:`SandboxError` for an uncaught JS error or a syntax error (message
        as V8 formats it, with line and caret).
        """
        with self._task_lock:
            self._task_id = self._raw.start_eval(code, _RESULT_CALLBACK)
            if self._stopping:
                self._raw.cancel(self._task_id)
        try:
            return self._take_result()
        finally:
            with self._task_lock:
                self._task_id = None

    def eval_text(self, code: str) -> str:
        """Evaluate ``code``, which yields text (:class:`SandboxError` if it does not)."""
        text = self.eval(code)
        if not isinstance(text, str):
            raise SandboxError(f"the bridge expected JSON text from V8, got {type(text).__name__}")
        return text

    def eval_json(self, code: str) -> JSON:
        """Evaluate ``code``, which yields JSON text, and decode it (:func:`.wire.from_v8`)."""
        return from_v8(self.eval_text(code))

    def _take_result(self) -> PythonJSConvertedTypes:
        return self._raw.to_python(self._results.get())

    def terminate(self) -> None:
        """Stop the running evaluation and any later one, from any thread."""
        with self._task_lock:
            self._stopping = True
            if self._task_id is not None and not self._closed:
                self._raw.cancel(self._task_id)

    def out_of_memory(self) -> bool:
        """Whether the isolate hit its hard memory limit (also in async continuations)."""
        return self._raw.hard_memory_limit_reached()

    def collect_garbage(self) -> None:
        """A full garbage collection (between evaluations: dead realms go only then)."""
        self._raw.collect_garbage()

    def close(self) -> None:
        """Free the isolate, stopping whatever still runs in it (timers, promises)."""
        if not self._closed:
            self._closed = True
            self._host = None
            self._raw.close()

    # -- the doorbell (runs on the isolate's thread; must never raise) ------------------
    def _on_callback(self, callback_id: int, raw_val_handle: RawValueHandleType) -> None:
        if callback_id == _RESULT_CALLBACK:
            self._results.put(raw_val_handle)
            return
        self._raw.free(raw_val_handle)  # the call's arguments: unused, everything is in the mailbox
        if callback_id == _DOORBELL_CALLBACK:
            try:
                self._on_doorbell()
            except BaseException as exc:  # noqa: BLE001 - nothing may escape a ctypes callback
                self._start_reply(error_reply(exc))

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

    def _dispatch(self, request: str) -> RawReply:
        realm, op, args = from_v8(request)
        if op == "hello" and realm == 0:
            RealmFactory.get().install()
            return _NULL
        if op == "warm":  # a rehearsal while a realm is prepared: nothing to do
            return _NULL
        if realm != self._live:
            raise SandboxError(f"this invocation has ended (a late call {op!r})")
        if self._host is None:
            raise SandboxError(f"no host is attached to this isolate (call {op!r})")
        return host_reply(self._host, op, args)

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
    Inside :meth:`paused` it prepares no more than ``low_water`` (a worker process does not
    grow its pool while an invocation's memory bound is in force).
    """

    def __init__(self, size: int = 2, heap_limit: int = DEFAULT_MEMORY_LIMIT, max_size: int = 32,
                 idle_seconds: float = 60.0, quiet_ms: float = 5.0, low_water: int = 2) -> None:
        self.heap_limit = heap_limit
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
        self._unpaused = threading.Event()
        self._unpaused.set()
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
            return Isolate(self.heap_limit)
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

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Within the block, keep at most ``low_water`` isolates ready (no growth)."""
        self._unpaused.clear()
        try:
            yield
        finally:
            self._unpaused.set()

    def shutdown(self) -> None:
        """Stop the worker and free the prepared isolates (at interpreter exit)."""
        if self._stopped:
            return
        self._stopped = True
        self._wake.release()
        self._unpaused.set()
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
                    self._ready.put(Isolate(self.heap_limit))
                    self._close_released()
                    self._wait_for_quiet()
            except Exception:  # noqa: BLE001 - a failed refill is retried on the next wake
                pass

    def _wait_for_quiet(self) -> None:
        while self._ready.qsize() >= self.low_water and not self._stopped:
            if not self._unpaused.is_set():
                self._unpaused.wait()
                continue
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
