"""mini-racer's private surface: the only module that touches it.

Rienda's ``ctx`` is synchronous, which mini-racer's public API cannot serve (its Python
functions are async in JavaScript). The bridge therefore relies on private parts of
``mini-racer==0.14.1`` (V8 14.4), each assumption stated here:

1. ``py_mini_racer._dll.init_mini_racer(flags=..., ignore_duplicate_init=True)`` returns
   the loaded ``ctypes.CDLL``, initializing V8 once per process with :data:`V8_FLAGS`.
2. ``mr_callback_func`` is the ctypes type of ``void callback(uint64 id, value*)``;
   ``mr_init_context(callback)`` makes a context whose every result and JS-callback call
   invokes it, synchronously, on the isolate's own thread.
3. ``mr_eval(ctx, code, id)`` and ``mr_call_function(ctx, fn, this, argv, id)`` start a
   task whose result reaches the callback with that ``id``; ``mr_cancel_task(ctx, task)``
   stops it from any thread (V8's TerminateExecution).
4. ``mr_make_js_callback(ctx, id)`` makes a JS function whose calls reach the callback
   with ``id`` while JS waits: the synchronous *doorbell*.
5. ``mr_set_hard_memory_limit`` / ``mr_hard_memory_limit_reached``: a heap limit checked
   after each GC (so the heap overshoots it before it bites), and its flag.
6. ``mr_free_context(ctx)`` frees the isolate and stops whatever still runs in it.
7. ``py_mini_racer._context.Context`` (constructed as ``Context(dll, ctx, loop,
   ObjectFactoryImpl(), ids)``) converts value handles: ``_wrap_raw_handle``,
   ``_value_handle_to_python`` (raising ``_exc.JSOOMException``,
   ``JSTerminatedException``, ``JSEvalException``), ``_python_to_value_handle``, ``_free``.
   A SharedArrayBuffer converts to a writable memoryview over the same memory.

:func:`check_version` runs at import and refuses any other version with an error naming
both; ``tests/engine/sandbox/test_v8_bridge.py`` exercises every assumption.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

import py_mini_racer

from ..errors import Interrupted, OutOfMemory, SandboxError

__all__ = ["PINNED_VERSION", "RawContext", "check_version", "installed_version"]

PINNED_VERSION = "0.14.1"


def installed_version() -> str:
    """The installed mini-racer's version, from its dist-info (cheap), else its metadata."""
    site = Path(py_mini_racer.__file__).resolve().parent.parent
    for info in site.glob("mini_racer-*.dist-info"):
        return info.name[len("mini_racer-"):-len(".dist-info")]
    from importlib import metadata

    return metadata.version("mini-racer")


def check_version(installed: str) -> None:
    """Raise :class:`SandboxError` unless ``installed`` is the version this module assumes."""
    if installed != PINNED_VERSION:
        raise SandboxError(
            f"Rienda's V8 bridge is written against mini-racer {PINNED_VERSION} (its private API), "
            f"but mini-racer {installed} is installed: pip install 'mini-racer=={PINNED_VERSION}'"
        )


check_version(installed_version())

from py_mini_racer import _exc  # noqa: E402 - private, checked above
from py_mini_racer._context import Context  # noqa: E402
from py_mini_racer._dll import init_mini_racer, mr_callback_func  # noqa: E402
from py_mini_racer._objects import ObjectFactoryImpl  # noqa: E402

# V8's flags, set once per process before its first context. mini-racer's default
# (--single-threaded), plus --no-memory-protection-keys: where the CPU and kernel offer
# memory protection keys (x86 PKU), V8 guards its code space with a key that only threads
# started after V8's initialization may touch; an isolate used from a thread that existed
# before (a worker's pool thread, a kernel's executor) crashed the process with SIGSEGV.
V8_FLAGS = ("--single-threaded", "--no-memory-protection-keys")

# Context wants an asyncio loop for the public async paths; the bridge never uses them.
_UNUSED_LOOP = asyncio.new_event_loop()

# V8 initializes process-wide state lazily on the first context; two threads creating
# their first contexts at once crashed the process (PartitionAlloc's configurable pool
# check failed). Creating contexts one at a time is cheap: the prelude is the slow part.
_CREATE_LOCK = threading.Lock()

Callback = Callable[[int, Any], None]


class RawContext:
    """One mini-racer context (one V8 isolate), driven through the private C API.

    ``on_callback(callback_id, raw)`` receives every task result and doorbell ring, on the
    isolate's thread; it must never raise.
    """

    def __init__(self, on_callback: Callback) -> None:
        self._dll = init_mini_racer(flags=V8_FLAGS, ignore_duplicate_init=True)
        self._callback = mr_callback_func(on_callback)  # kept alive as long as the context
        with _CREATE_LOCK:
            self._handle = self._dll.mr_init_context(self._callback)
        self._context = Context(self._dll, self._handle, _UNUSED_LOOP, ObjectFactoryImpl(), count(10))

    def start_eval(self, code: str, callback_id: int) -> int:
        """Start evaluating ``code``; returns the task id (the result reaches the callback)."""
        code_handle = self._context._python_to_value_handle(code)
        return self._dll.mr_eval(self._handle, code_handle.raw, callback_id)

    def start_call(self, function: Any, argv: Any, callback_id: int) -> None:
        """Start ``function(...argv)``: both are values :meth:`to_python` returned (``argv``
        a JS array); the result reaches the callback with ``callback_id``."""
        handles = [self._context._python_to_value_handle(v) for v in (function, None, argv)]
        self._dll.mr_call_function(self._handle, *(h.raw for h in handles), callback_id)

    def to_python(self, raw: Any) -> Any:
        """The Python value of a result handle; maps V8's failures to Rienda's errors."""
        try:
            return self._context._value_handle_to_python(self._context._wrap_raw_handle(raw))
        except _exc.JSOOMException as exc:
            raise OutOfMemory("the extension exceeded its memory limit and was stopped") from exc
        except _exc.JSTerminatedException as exc:
            raise Interrupted("stopped") from exc
        except _exc.JSEvalException as exc:
            raise SandboxError(str(exc)) from exc

    def free(self, raw: Any) -> None:
        self._context._free(raw)

    def js_callback(self, callback_id: int) -> Any:
        """A JS function whose calls ring ``on_callback(callback_id, args)`` synchronously."""
        raw = self._dll.mr_make_js_callback(self._handle, callback_id)
        return self._context._value_handle_to_python(self._context._wrap_raw_handle(raw))

    def cancel(self, task_id: int) -> None:
        self._dll.mr_cancel_task(self._handle, task_id)

    def set_hard_memory_limit(self, limit: int) -> None:
        self._dll.mr_set_hard_memory_limit(self._handle, limit)

    def hard_memory_limit_reached(self) -> bool:
        return bool(self._dll.mr_hard_memory_limit_reached(self._handle))

    def close(self) -> None:
        self._dll.mr_free_context(self._handle)
