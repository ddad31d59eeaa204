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
8. ``libmini_racer.so`` exports V8's own C++ API (V8 14.4, x86-64 System V ABI), of which
   :class:`RealmFactory` calls four functions: ``v8::Isolate::GetCurrent()``,
   ``v8::Isolate::SetHostCreateShadowRealmContextCallback(cb)``, ``v8::Context::New(...)``
   (every argument but the isolate empty) and ``v8::Context::{Get,Set}SecurityToken``. A
   ``Local``/``MaybeLocal`` is one pointer, passed and returned in a register. mini-racer
   sets no ShadowRealm callback of its own (``new ShadowRealm()`` throws "Not supported"),
   so with ``--harmony-shadow-realm`` and this callback (what d8 does) a ShadowRealm is a
   fresh V8 context in the same isolate.

:func:`check_version` runs at import and refuses any other version with an error naming
both; ``tests/engine/sandbox/test_v8_bridge.py`` exercises every assumption.
"""

from __future__ import annotations

import asyncio
import ctypes
import threading
from collections.abc import Callable
from itertools import count
from pathlib import Path

import py_mini_racer
from py_mini_racer import JSArray, PythonJSConvertedTypes

from ..errors import Interrupted, OutOfMemory, SandboxError

__all__ = ["PINNED_VERSION", "JSArray", "MrCallback", "PythonJSConvertedTypes", "RawContext", "RawValueHandleType",
           "RealmFactory", "check_version", "installed_version"]

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
from py_mini_racer._dll import MrCallback, init_mini_racer, mr_callback_func  # noqa: E402
from py_mini_racer._objects import ObjectFactoryImpl  # noqa: E402
from py_mini_racer._value_handle import RawValueHandleType  # noqa: E402

# V8's flags, set once per process before its first context. mini-racer's default
# (--single-threaded), plus --no-memory-protection-keys: where the CPU and kernel offer
# memory protection keys (x86 PKU), V8 guards its code space with a key that only threads
# started after V8's initialization may touch; an isolate used from a thread that existed
# before (a worker's pool thread, a kernel's executor) crashed the process with SIGSEGV.
# --harmony-shadow-realm: ShadowRealm, a fresh context per invocation (see RealmFactory).
V8_FLAGS = ("--single-threaded", "--no-memory-protection-keys", "--harmony-shadow-realm")

# Context wants an asyncio loop for the public async paths; the bridge never uses them.
_UNUSED_LOOP = asyncio.new_event_loop()

# V8 initializes process-wide state lazily on the first context; two threads creating
# their first contexts at once crashed the process (PartitionAlloc's configurable pool
# check failed). Creating contexts one at a time is cheap: the prelude is the slow part.
_CREATE_LOCK = threading.Lock()

class RawContext:
    """One mini-racer context (one V8 isolate), driven through the private C API.

    ``on_callback(callback_id, raw_val_handle)`` receives every task result and doorbell
    ring, on the isolate's thread; it must never raise.
    """

    def __init__(self, on_callback: MrCallback) -> None:
        self._dll = init_mini_racer(flags=V8_FLAGS, ignore_duplicate_init=True)
        self._callback = mr_callback_func(on_callback)  # kept alive as long as the context
        with _CREATE_LOCK:
            self._handle = self._dll.mr_init_context(self._callback)
        self._context = Context(self._dll, self._handle, _UNUSED_LOOP, ObjectFactoryImpl(), count(10))

    def start_eval(self, code: str, callback_id: int) -> int:
        """Start evaluating ``code``; returns the task id (the result reaches the callback)."""
        code_handle = self._context._python_to_value_handle(code)
        return int(self._dll.mr_eval(self._handle, code_handle.raw, callback_id))

    def start_call(self, function: PythonJSConvertedTypes, argv: JSArray, callback_id: int) -> None:
        """Start ``function(...argv)``: both are values :meth:`to_python` returned (``argv``
        a JS array); the result reaches the callback with ``callback_id``."""
        handles = [self._context._python_to_value_handle(v) for v in (function, None, argv)]
        self._dll.mr_call_function(self._handle, *(h.raw for h in handles), callback_id)

    def to_python(self, raw: RawValueHandleType) -> PythonJSConvertedTypes:
        """The Python value of a result handle; maps V8's failures to Rienda's errors."""
        try:
            return self._context._value_handle_to_python(self._context._wrap_raw_handle(raw))
        except _exc.JSOOMException as exc:
            raise OutOfMemory("the extension exceeded its memory limit and was stopped") from exc
        except _exc.JSTerminatedException as exc:
            raise Interrupted("stopped") from exc
        except _exc.JSEvalException as exc:
            raise SandboxError(str(exc)) from exc

    def free(self, raw: RawValueHandleType) -> None:
        self._context._free(raw)

    def js_callback(self, callback_id: int) -> PythonJSConvertedTypes:
        """A JS function whose calls ring ``on_callback(callback_id, args)`` synchronously."""
        raw = self._dll.mr_make_js_callback(self._handle, callback_id)
        return self._context._value_handle_to_python(self._context._wrap_raw_handle(raw))

    def cancel(self, task_id: int) -> None:
        self._dll.mr_cancel_task(self._handle, task_id)

    def set_hard_memory_limit(self, limit: int) -> None:
        self._dll.mr_set_hard_memory_limit(self._handle, limit)

    def hard_memory_limit_reached(self) -> bool:
        return bool(self._dll.mr_hard_memory_limit_reached(self._handle))

    def collect_garbage(self) -> None:
        """A full GC now (V8's low-memory notification), on the isolate's thread."""
        self._dll.mr_low_memory_notification(self._handle)

    def close(self) -> None:
        self._dll.mr_free_context(self._handle)


class _Pair(ctypes.Structure):
    """V8's ``Deserialize*Callback`` structs: a function pointer and its data (empty here)."""

    _fields_ = [("callback", ctypes.c_void_p), ("data", ctypes.c_void_p)]


_CREATE_REALM = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
_Native = Callable[..., int | None]  # a V8 function bound by RealmFactory._bind: a pointer, or nothing


class RealmFactory:
    """Makes ``new ShadowRealm()`` work: a fresh V8 context in the calling isolate.

    :meth:`install` must run on an isolate's own thread while V8 is inside it (from a
    doorbell callback): it sets, for that isolate, the callback V8 calls to create a
    ShadowRealm's context, which makes one with ``v8::Context::New`` and gives it the
    initiating context's security token.
    """

    _instance: RealmFactory | None = None

    def __init__(self) -> None:
        dll = init_mini_racer(flags=V8_FLAGS, ignore_duplicate_init=True)
        ptr, pair = ctypes.c_void_p, _Pair
        self._current = self._bind(dll, "_ZN2v87Isolate10GetCurrentEv", ptr, [])
        self._set_callback = self._bind(
            dll, "_ZN2v87Isolate39SetHostCreateShadowRealmContextCallbackEPFNS_10MaybeLocalINS_7ContextEEENS_5LocalIS2_EEE",
            None, [ptr, _CREATE_REALM])
        self._new_context = self._bind(
            dll, "_ZN2v87Context3NewEPNS_7IsolateEPNS_22ExtensionConfigurationENS_10MaybeLocalINS_14ObjectTemplateEEENS5_"
                 "INS_5ValueEEENS_33DeserializeInternalFieldsCallbackEPNS_14MicrotaskQueueENS_30DeserializeContextData"
                 "CallbackENS_29DeserializeAPIWrapperCallbackE",
            ptr, [ptr, ptr, ptr, ptr, pair, ptr, pair, pair])
        self._get_token = self._bind(dll, "_ZN2v87Context16GetSecurityTokenEv", ptr, [ptr])
        self._set_token = self._bind(dll, "_ZN2v87Context16SetSecurityTokenENS_5LocalINS_5ValueEEE", None, [ptr, ptr])
        self._empty = _Pair(None, None)
        self._callback = _CREATE_REALM(self._create)  # kept alive for the process

    @classmethod
    def get(cls) -> RealmFactory:
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    @staticmethod
    def _bind(dll: ctypes.CDLL, symbol: str, restype: type | None, argtypes: list[type]) -> _Native:
        """``symbol`` of ``dll``, whose result is a pointer (an int, or None for NULL) or nothing."""
        try:
            function = dll[symbol]
        except AttributeError as exc:
            raise SandboxError(f"this mini-racer build does not export {symbol} (needed for ShadowRealm)") from exc
        function.restype, function.argtypes = restype, argtypes
        return function

    def install(self) -> None:
        """Enable ShadowRealm in the isolate whose thread this is (see the class)."""
        self._set_callback(self._current(), self._callback)

    def _create(self, initiator: int) -> int | None:
        empty = self._empty
        context = self._new_context(self._current(), None, None, None, empty, None, empty, empty)
        if context:
            self._set_token(context, self._get_token(initiator))
        return context
