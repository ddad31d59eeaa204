"""The sandbox protocol: what the engine needs from a sandbox, and the types both the host
process and the V8 worker processes use.

The rest of the engine (tools, extensions, the loop) sees only the protocol
:class:`SandboxLike`: ``inspect`` a module, ``call`` one of its exports; the hook chain
only :class:`ChainRunner`, the ``call_chain`` it uses. Two
implementations keep the same contracts:

- :class:`.workers.Sandbox` (the product): every invocation runs in a V8 worker process
  (:mod:`.pool`), so nothing an extension does (a fatal V8 out-of-memory, a runaway
  allocation of any kind) can take down the host process: it fails that invocation, and
  the worker is replaced in the background.
- :class:`.inprocess.InProcessSandbox`: the same on isolates in this process (what each
  worker runs; the bench's baseline).

Contracts:
- ``inspect`` evaluates a module in a fresh isolate and reports its exports; a syntax
  error, a throw, running out of memory or not finishing within ``timeout`` seconds while
  loading raises :class:`ExtensionError` naming the file (and the line where known);
  ``cancel`` raises :class:`Interrupted`.
- ``call`` runs one export in a fresh isolate (nothing persists between calls) with the
  payload passed as JSON data (``JSON.parse``'d inside: a ``__proto__`` key is an own
  property, never a prototype), awaits a returned promise, and returns the described
  value. A JS throw raises :class:`ScriptError` with ``file:line:column``; running out of
  memory (heap, typed arrays, strings, in a timer or an async function alike)
  :class:`OutOfMemory`; a return value that cannot be read (a throwing getter or Proxy, a
  throwing ``toJSON``, nesting past ``common.bounded.MAX_DEPTH``) :class:`SandboxError`; a cancelled
  token :class:`Interrupted`, promptly, whatever the script is doing.
- ``call_chain`` runs one hook point's chain (:mod:`.chain`): each hook in a fresh isolate of its own, each
  hook's output the next one's input, the first refusal ending it; ``on_step`` hears every
  hook's outcome (its :class:`JSValue`, or the :class:`SandboxError` it failed with) as it
  comes, and ``host_for(index)`` serves that hook's host calls. :class:`Interrupted` ends
  the chain.
- ``prepare`` starts ahead, in the background, whatever the sandbox needs before its
  first invocation (the product's worker processes; nothing in-process).
- Host calls (``ctx.*``) are served synchronously by ``host`` on the calling thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..cancel import CancelToken
from ..common.json_value import JSON, JSONObject
from .chain import ChainRule, HookSource, JSValue, Outcome

__all__ = ["DEFAULT_MEMORY_LIMIT", "ChainRunner", "Export", "HostHandler", "JSValue", "SandboxLike", "js_value"]

DEFAULT_MEMORY_LIMIT = 128 * 1024 * 1024

# Serves one host call: (op, the arguments the extension sent) -> a JSON-able value (or a
# wire.RawReply), or raises.
HostHandler = Callable[[str, JSON], object]


@dataclass(frozen=True)
class Export:
    """One name ``module.exports`` has, with the JS kind of its value."""

    name: str
    kind: str


_KINDS = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number",
          type(None): "null"}


def js_value(outcome: JSONObject) -> JSValue:
    """The :class:`JSValue` of a successful outcome from the prelude: the kind of a JSON
    value is the kind of what its JSON holds (what ``toJSON`` made of it, if anything)."""
    if "json" in outcome:
        value = outcome["json"]
        return JSValue(_KINDS[type(value)], value)
    kind = str(outcome.get("kind"))
    return JSValue(kind, None if kind == "undefined" else outcome.get("text"))


class ChainRunner(Protocol):
    """What a hook chain needs from a sandbox: ``call_chain`` alone (see the module's
    contracts). Every :class:`SandboxLike` is one."""

    def call_chain(self, links: Sequence[HookSource], export: str, payload: list[JSON], rule: ChainRule,
                   host_for: Callable[[int], HostHandler], cancel: CancelToken,
                   frozen: Sequence[tuple[int, str]] = (),
                   on_step: Callable[[int, Outcome], None] = ...) -> None: ...


class SandboxLike(ChainRunner, Protocol):
    """What the engine needs from a sandbox (see the module's contracts)."""

    @property
    def memory_limit(self) -> int: ...

    def inspect(self, path: str, source: str, *, timeout: float | None = None,
                cancel: CancelToken | None = None) -> tuple[list[Export], JSONObject]: ...

    def call(self, path: str, source: str, export: str, payload: list[JSON], host: HostHandler,
             cancel: CancelToken, frozen: Sequence[tuple[int, str]] = ()) -> JSValue: ...

    def prepare(self) -> None: ...
