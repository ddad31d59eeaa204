"""Running an extension's exports, one fresh isolate per invocation.

A module is evaluated CommonJS-style: its source is wrapped in
``function (module, exports) {...}`` starting on line 1, so V8's line numbers are the
file's, and ``//# sourceURL=<path>`` makes stack frames name the file.

Contracts:
- :meth:`Sandbox.inspect` evaluates a module in a fresh isolate and reports its exports;
  a syntax error or a throw while loading raises :class:`ExtensionError` with the line.
- :meth:`Sandbox.call` runs one export in a fresh isolate (nothing persists between
  calls), awaits a returned promise, and returns the described value. A JS throw raises
  :class:`ScriptError` with ``file:line:column``; a cancelled token raises
  :class:`Interrupted` promptly, whatever the script is doing.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from typing import Any

from .cancel import CancelToken
from .errors import ExtensionError, Interrupted, OutOfMemory, SandboxError, ScriptError
from .v8 import DEFAULT_MEMORY_LIMIT, HostHandler, Isolate, IsolatePool

__all__ = ["Export", "JSValue", "Sandbox"]

_PARSE_LINE = re.compile(r"^<anonymous>:(\d+): (.*)$", re.MULTILINE)


@dataclass(frozen=True)
class JSValue:
    """A value returned by JavaScript: ``kind`` is its JS type (``typeof``, with "null"
    and "array" told apart); ``value`` its JSON form (a string for functions, symbols
    and bigints; None for undefined)."""

    kind: str
    value: Any = None


@dataclass(frozen=True)
class Export:
    """One name ``module.exports`` has, with the JS kind of its value."""

    name: str
    kind: str


def _module_script(path: str, source: str, tail: str) -> str:
    """The module wrapped so that its line 1 is the script's line 1, then ``tail``."""
    return (
        "(function () { try { (function (module, exports) {"
        + source
        + "\n}).call(__rienda.module.exports, __rienda.module, __rienda.module.exports);"
        + " } catch (e) { return __rienda.loaded(e); }\nreturn "
        + tail
        + "; })()\n//# sourceURL="
        + path
    )


def _location(stack: str, path: str) -> str | None:
    """The first ``path:line:column`` of the extension in a JS stack trace."""
    match = re.search(re.escape(path) + r":(\d+):(\d+)", stack)
    return f"{path}:{match.group(1)}:{match.group(2)}" if match else None


def _script_error(error: dict[str, Any], path: str) -> ScriptError:
    return ScriptError(
        error.get("message", ""),
        name=error.get("name", "Error"),
        location=_location(error.get("stack", ""), path),
    )


def _syntax_error(exc: SandboxError, path: str) -> ExtensionError:
    match = _PARSE_LINE.search(str(exc))
    if not match:
        return ExtensionError(f"{path}: {exc}", path=path)
    line = int(match.group(1))
    return ExtensionError(f"{path}:{line}: {match.group(2)}", path=path, line=line)


class Sandbox:
    """Runs extension code; owns the pool of prepared isolates."""

    def __init__(self, memory_limit: int = DEFAULT_MEMORY_LIMIT, pool_size: int = 2) -> None:
        self._pool = IsolatePool(size=pool_size, memory_limit=memory_limit)

    @property
    def memory_limit(self) -> int:
        return self._pool.memory_limit

    def inspect(self, path: str, source: str) -> tuple[list[Export], dict[str, Any]]:
        """Load a module; return its exports and the JSON values of its data exports.

        Raises :class:`ExtensionError` (with the line) for a syntax error, a throw while
        loading, or a ``module.exports`` that is not an object.
        """
        isolate = self._pool.acquire()
        try:
            isolate.set_host(_loading_host(path))
            shape = self._load(isolate, path, source, "__rienda.exportsShape()")
            if shape["kind"] != "object":
                raise ExtensionError(
                    f"{path}: module.exports must be an object, got {shape['kind']}", path=path
                )
            exports = [Export(item["name"], item["kind"]) for item in shape["names"]]
            values = {}
            for export in exports:
                if export.kind not in ("function", "undefined"):
                    values[export.name] = self._export_value(isolate, path, export.name)
            return exports, values
        finally:
            self._pool.release(isolate)

    def _export_value(self, isolate: Isolate, path: str, name: str) -> Any:
        reply = json.loads(isolate.eval(f"__rienda.exportValue({json.dumps(name)})"))
        if "error" in reply:
            raise ExtensionError(f"{path}: export {name!r} cannot be read as JSON: {reply['error']}", path=path)
        return reply.get("value")

    def _load(self, isolate: Isolate, path: str, source: str, tail: str) -> dict[str, Any]:
        try:
            outcome = json.loads(isolate.eval(_module_script(path, source, tail)))
        except Interrupted:
            raise
        except SandboxError as exc:
            raise _syntax_error(exc, path) from exc
        if outcome.get("loading"):
            error = _script_error(outcome["error"], path)
            line = int(error.location.split(":")[-2]) if error.location else None
            raise ExtensionError(f"{error.location or path}: threw while loading: {error}", path=path, line=line)
        return outcome

    def call(
        self,
        path: str,
        source: str,
        export: str,
        payload: list[Any],
        host: HostHandler,
        cancel: CancelToken,
        frozen: list[tuple[int, str]] = (),
    ) -> JSValue:
        """Run ``module.exports[export](ctx, *payload)`` in a fresh isolate.

        ``host`` serves the ctx calls; ``frozen`` lists ``(argument index, key)`` fields
        deep-frozen before the call (read-only snapshots).
        """
        cancel.raise_if_cancelled()
        isolate = self._pool.acquire()
        invocation = _Invocation(isolate, host, cancel, export)
        unregister = cancel.on_cancel(invocation.stop)
        try:
            tail = f"__rienda.call({json.dumps(export)}, {json.dumps(payload)}, {json.dumps(list(frozen))})"
            outcome = self._load(isolate, path, source, tail)
            if outcome.get("pending"):
                outcome = invocation.wait_settled()
            cancel.raise_if_cancelled()
        except Interrupted:
            raise Interrupted(f"{path}: {export} was stopped") from None
        finally:
            unregister()
            self._pool.release(isolate)
        if not outcome["ok"]:
            raise _script_error(outcome["error"], path)
        result = outcome["result"]
        return JSValue(result["kind"], result.get("value"))


class _Invocation:
    """One call in flight: serves ``settled``/``stuck`` itself and forwards the rest."""

    def __init__(self, isolate: Isolate, host: HostHandler, cancel: CancelToken, export: str) -> None:
        self._isolate = isolate
        self._export = export
        self._host = host
        self._cancel = cancel
        self._done = threading.Event()
        self._outcome: dict[str, Any] | None = None
        isolate.set_host(self._serve)

    def _serve(self, op: str, args: Any) -> Any:
        if op == "settled":
            self._finish(args)
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

    def _finish(self, outcome: dict[str, Any]) -> None:
        if self._outcome is None:
            self._outcome = outcome
            self._done.set()

    def stop(self) -> None:
        self._isolate.terminate()
        self._done.set()

    def wait_settled(self) -> dict[str, Any]:
        """Wait for the promise; async work past the memory limit ends the wait too."""
        while not self._done.wait(0.05):
            if self._isolate.out_of_memory():
                raise OutOfMemory(f"{self._export} exceeded the memory limit and was stopped")
        self._cancel.raise_if_cancelled()
        assert self._outcome is not None
        return self._outcome


def _loading_host(path: str) -> HostHandler:
    def refuse(op: str, args: Any) -> Any:
        if op == "log":
            return None  # console output while loading has nowhere to go
        raise RuntimeError(f"{path}: ctx is not available while the module loads ({op})")

    return refuse
