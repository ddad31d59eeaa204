"""The sandbox protocol on V8 isolates in this process: one fresh isolate per invocation.

This is what each V8 worker process runs (``worker_main.py``), and the baseline the bench
compares against; the product's :class:`.workers.Sandbox` never runs V8 in the host
process, since a fatal V8 error (an out-of-memory V8 cannot recover from) ends the
process it happens in.

A module is evaluated CommonJS-style: its source is wrapped in
``function (module, exports) {...}`` starting on line 1, so V8's line numbers are the
file's, and ``//# sourceURL=<path>`` makes stack frames name the file. Error texts name
the file's own lines and columns, never the wrapper.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable, Iterator, Sequence

from ..cancel import CancelToken
from ..common.json_value import JSON, JSONObject
from ..errors import ExtensionError, Interrupted, OutOfMemory, SandboxError, ScriptError
from .chain import ChainRule, HookSource, Outcome, chain_by_calls
from .protocol import DEFAULT_MEMORY_LIMIT, Export, JSValue, js_value
from .isolate import HostHandler, Isolate, IsolatePool
from .realms import Realms
from .wire import from_v8

__all__ = ["InProcessSandbox"]

_PREFIX = "(function () { try { (function (module, exports) {"
# mini-racer's text for a script that does not compile: "<name>:<line>: SyntaxError: ...",
# then the source line and a caret line.
_COMPILE_ERROR = re.compile(r"^(?:.*?):(\d+): (\w*Error: .*?)$", re.MULTILINE)


def _module_script(path: str, source: str, tail: str) -> str:
    """The module wrapped so that its line 1 is the script's line 1, then ``tail``."""
    return (
        _PREFIX
        + source
        + "\n}).call(__rienda.module.exports, __rienda.module, __rienda.module.exports);"
        + " } catch (e) { return __rienda.loaded(e); }\nreturn "
        + tail
        + "; })()\n//# sourceURL="
        + path
    )


def _location(stack: str, path: str) -> str | None:
    """The first ``path:line:column`` of the extension in a JS stack trace (columns on
    line 1 counted in the file, not the wrapper)."""
    match = re.search(re.escape(path) + r":(\d+):(\d+)", stack)
    if not match:
        return None
    line, column = int(match.group(1)), int(match.group(2))
    if line == 1:
        column = max(1, column - len(_PREFIX))
    return f"{path}:{line}:{column}"


def _script_error(error: JSONObject, path: str) -> ScriptError:
    return ScriptError(
        str(error.get("message", "")),
        name=str(error.get("name", "Error")),
        location=_location(str(error.get("stack", "")), path),
    )


def _outcome(text: str) -> JSONObject:
    """The prelude's outcome of a load or a call (an object), decoded from V8's text."""
    outcome = from_v8(text)
    if not isinstance(outcome, dict):
        raise SandboxError(f"the bridge expected an outcome object from V8, got {type(outcome).__name__}")
    return outcome


def _compile_error(exc: SandboxError, path: str) -> ExtensionError:
    """A syntax error as ``path:line:column: SyntaxError: ...`` in the file's own terms
    (V8's text quotes the wrapped script's line and a caret under it)."""
    text = str(exc)
    match = _COMPILE_ERROR.search(text)
    if not match:
        return ExtensionError(f"{path}: does not compile: {text.splitlines()[0] if text else 'no message'}", path=path)
    line = int(match.group(1))
    column = _caret_column(text, line)
    where = f"{path}:{line}:{column}" if column else f"{path}:{line}"
    return ExtensionError(f"{where}: {match.group(2)}", path=path, line=line)


def _caret_column(text: str, line: int) -> int | None:
    """The 1-based column of V8's caret (``    ^``), counted in the file."""
    for row in text.splitlines():
        stripped = row.strip()
        if stripped and set(stripped) == {"^"}:
            column = len(row) - len(row.lstrip()) + 1
            return max(1, column - len(_PREFIX)) if line == 1 else column
    return None


class InProcessSandbox:
    """Runs extension code on V8 in this process.

    Each ``call`` runs in a fresh realm prepared ahead with its module (:mod:`.realms`);
    a module that fails in a realm (or never finishes loading there) runs, like ``inspect``,
    in a fresh isolate of the pool, which reports its failure with the file's own lines.
    ``heap_limit`` is V8's heap limit per isolate (this process is not otherwise bounded).
    """

    def __init__(self, memory_limit: int = DEFAULT_MEMORY_LIMIT, pool_size: int = 1,
                 pool_max: int = 4, heap_limit: int | None = None) -> None:
        self.memory_limit = memory_limit
        self._pool = IsolatePool(size=pool_size, heap_limit=heap_limit or memory_limit, max_size=pool_max)
        self._realms = Realms(heap_limit or memory_limit)

    @property
    def realms(self) -> Realms:
        """The prepared realms (diagnostics: tests and the bench)."""
        return self._realms

    def warm(self) -> None:
        """Start V8 and prepare an isolate and a realm home now, not on first use."""
        self._pool.release(self._pool.acquire())
        self._realms.warm()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """A block during which nothing is prepared ahead (a worker's job)."""
        with self._pool.paused(), self._realms.paused():
            yield

    def inspect(self, path: str, source: str, *, timeout: float | None = None,
                cancel: CancelToken | None = None) -> tuple[list[Export], JSONObject]:
        """Load a module; return its exports and the JSON values of its data exports.

        Raises :class:`ExtensionError` (with the line) for a syntax error, a throw while
        loading, a ``module.exports`` that is not an object, running out of memory, or not
        finishing within ``timeout`` seconds; :class:`Interrupted` when ``cancel`` is set.
        """
        cancel = cancel or CancelToken()
        cancel.raise_if_cancelled()
        isolate = self._pool.acquire()
        timed_out = threading.Event()

        def expire() -> None:
            timed_out.set()
            isolate.terminate()

        timer = threading.Timer(timeout, expire) if timeout else None
        unregister = cancel.on_cancel(isolate.terminate)
        try:
            isolate.set_host(_loading_host(path))
            if timer:
                timer.start()
            return self._inspect(isolate, path, source)
        except Interrupted:  # from None: the message below says it again, with the file
            if timed_out.is_set() and not cancel.cancelled:
                raise ExtensionError(f"{path}: did not finish loading within {timeout:g} s", path=path) from None
            raise Interrupted(f"{path}: loading was stopped") from None
        except ExtensionError:
            raise
        except SandboxError as exc:
            raise ExtensionError(f"{path}: {_while_loading(exc)}", path=path) from exc
        finally:
            if timer:
                timer.cancel()
            unregister()
            self._pool.release(isolate)

    def _inspect(self, isolate: Isolate, path: str, source: str) -> tuple[list[Export], JSONObject]:
        shape = self._load(isolate, path, source, "__rienda.shape()")
        if shape["kind"] != "object":
            raise ExtensionError(f"{path}: module.exports must be an object, got {shape['kind']}", path=path)
        exports = [Export(str(item["name"]), str(item["kind"])) for item in shape["names"]]
        values: JSONObject = {}
        for export in exports:
            if export.kind not in ("function", "undefined"):
                values[export.name] = self._export_value(isolate, path, export.name)
        return exports, values

    def _export_value(self, isolate: Isolate, path: str, name: str) -> JSON:
        reply = isolate.eval_json(f"__rienda.exportValue({json.dumps(name)})")
        if "error" in reply:
            raise ExtensionError(f"{path}: export {name!r} cannot be read as JSON: {reply['error']}", path=path)
        return reply["json"]

    def _load(self, isolate: Isolate, path: str, source: str, tail: str) -> JSONObject:
        try:
            text = isolate.eval_text(_module_script(path, source, tail))
        except (Interrupted, OutOfMemory):
            raise
        except SandboxError as exc:
            raise _compile_error(exc, path) from exc
        outcome = _outcome(text)
        if outcome.get("loading"):
            error = _script_error(outcome["error"], path)
            line = int(error.location.split(":")[-2]) if error.location else None
            raise ExtensionError(f"{error.location or path}: threw while loading: {error}", path=path, line=line)
        return outcome

    def prepare(self) -> None:
        """Nothing to start ahead: the isolates are this process's, made on first use."""

    def call_chain(self, links: Sequence[HookSource], export: str, payload: list[JSON], rule: ChainRule,
                   host_for: Callable[[int], HostHandler], cancel: CancelToken,
                   frozen: Sequence[tuple[int, str]] = (),
                   on_step: Callable[[int, Outcome], None] = lambda index, outcome: None) -> None:
        """One point's chain, each hook one :meth:`call` (see :mod:`.protocol`)."""
        chain_by_calls(self.call, links, export, payload, rule, host_for, cancel, frozen, on_step)

    def call(self, path: str, source: str, export: str, payload: list[JSON], host: HostHandler,
             cancel: CancelToken, frozen: Sequence[tuple[int, str]] = ()) -> JSValue:
        """Run ``module.exports[export](ctx, *payload)`` in a fresh isolate.

        ``host`` serves the ctx calls; ``frozen`` lists ``(argument index, key)`` fields
        deep-frozen before the call (read-only snapshots). A JS throw raises
        :class:`ScriptError`; a stop raises :class:`Interrupted`; the memory limit
        :class:`OutOfMemory`; a return value that cannot be read :class:`SandboxError`.
        """
        return self.call_json(path, source, export, json.dumps(payload), host, cancel, frozen)

    def call_json(self, path: str, source: str, export: str, payload: str, host: HostHandler,
                  cancel: CancelToken, frozen: Sequence[tuple[int, str]] = ()) -> JSValue:
        """:meth:`call` with the payload already JSON text (an array of arguments)."""
        cancel.raise_if_cancelled()
        lease = self._realms.lease((path, source), lambda: _module_script(path, source, "null"))
        if lease is None:
            return self._call_on_isolate(path, source, export, payload, host, cancel, frozen)
        invocation = _Invocation(lease.home.isolate, host, cancel, export, lease.realm)
        unregister = cancel.on_cancel(invocation.stop)
        dirty = True
        try:
            outcome = _outcome(lease.home.invoke(lease.realm, export, payload, json.dumps(list(frozen))))
            if outcome.get("pending"):
                outcome = invocation.wait_settled()
            dirty = bool(outcome.get("left"))
            cancel.raise_if_cancelled()
        except Interrupted:  # from None: the message below says it again, with the file
            raise Interrupted(f"{path}: {export} was stopped") from None
        except OutOfMemory:  # from None: the message below says it again, with the file
            raise OutOfMemory(f"{path}: {export} ran out of memory and was stopped") from None
        except SandboxError as exc:
            dirty = lease.home.isolate.out_of_memory()
            raise SandboxError(f"{path}: {export} returned a value that cannot be read: {exc}") from exc
        finally:
            unregister()
            self._realms.release(lease, dirty or invocation.stopped)
        if not outcome["ok"]:
            raise _script_error(outcome["error"], path)
        return js_value(outcome)

    def _call_on_isolate(self, path: str, source: str, export: str, payload: str, host: HostHandler,
                         cancel: CancelToken, frozen: Sequence[tuple[int, str]]) -> JSValue:
        """The module and the call in one fresh isolate (a module that fails in a realm)."""
        isolate = self._pool.acquire()
        invocation = _Invocation(isolate, host, cancel, export)
        unregister = cancel.on_cancel(invocation.stop)
        try:
            tail = f"__rienda.call({json.dumps(export)}, {json.dumps(payload)}, {json.dumps(json.dumps(list(frozen)))})"
            outcome = self._load(isolate, path, source, tail)
            if outcome.get("pending"):
                outcome = invocation.wait_settled()
            cancel.raise_if_cancelled()
        except Interrupted:  # from None: the message below says it again, with the file
            raise Interrupted(f"{path}: {export} was stopped") from None
        except OutOfMemory:  # from None: the message below says it again, with the file
            raise OutOfMemory(f"{path}: {export} ran out of memory and was stopped") from None
        except ExtensionError as exc:
            raise SandboxError(str(exc)) from exc
        except SandboxError as exc:
            raise SandboxError(f"{path}: {export} returned a value that cannot be read: {exc}") from exc
        finally:
            unregister()
            self._pool.release(isolate)
        if not outcome["ok"]:
            raise _script_error(outcome["error"], path)
        return js_value(outcome)


def _while_loading(exc: SandboxError) -> str:
    if isinstance(exc, OutOfMemory):
        return "ran out of memory while loading"
    return str(exc)


class _Invocation:
    """One call in flight: serves ``settled``/``stuck`` itself and forwards the rest."""

    def __init__(self, isolate: Isolate, host: HostHandler, cancel: CancelToken, export: str,
                 realm: int = 0) -> None:
        self._isolate = isolate
        self._export = export
        self._host = host
        self._cancel = cancel
        self._done = threading.Event()
        self._outcome: JSONObject | None = None
        self._failure: SandboxError | None = None
        self.stopped = False
        isolate.set_host(self._serve, realm)

    def _serve(self, op: str, args: JSON) -> object:
        if op == "settled":
            self._settled(args)
            return None
        if op == "stuck":
            self._finish({"ok": False, "error": {
                "name": "Error",
                "message": f"{self._export} returned a promise that can never settle "
                "(nothing is pending: no timer, no host call)",
            }})
            return None
        self._cancel.raise_if_cancelled()
        return self._host(op, args)

    def _settled(self, text: JSON) -> None:
        try:
            self._finish(_outcome(text))
        except SandboxError as exc:
            self._failure = exc
            self._done.set()

    def _finish(self, outcome: JSONObject) -> None:
        if self._outcome is None:
            self._outcome = outcome
            self._done.set()

    def stop(self) -> None:
        self.stopped = True
        self._isolate.terminate()
        self._done.set()

    def wait_settled(self) -> JSONObject:
        """Wait for the promise; async work past the memory limit ends the wait too, and
        an outcome that follows running out of memory reports that."""
        while not self._done.wait(0.05):
            if self._isolate.out_of_memory():
                break
        if self._isolate.out_of_memory():
            raise OutOfMemory(f"{self._export} ran out of memory")
        self._cancel.raise_if_cancelled()
        if self._failure is not None:
            raise self._failure
        assert self._outcome is not None
        return self._outcome


def _loading_host(path: str) -> HostHandler:
    def refuse(op: str, args: JSON) -> None:
        if op == "log":
            return None  # console output while loading has nowhere to go
        raise RuntimeError(f"{path}: ctx is not available while the module loads ({op})")

    return refuse
