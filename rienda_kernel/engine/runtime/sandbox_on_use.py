"""A sandbox made on first use: what a run and the extension loader hold, so that a run with
no JavaScript tool or hook never starts a V8 worker."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..cancel import CancelToken
from ..common.json_value import JSON, JSONObject
from ..sandbox.chain import ChainRule, HookSource, JSValue, Outcome
from ..sandbox.protocol import Export, HostHandler
from ..sandbox.workers import Sandbox

__all__ = ["SandboxOnUse"]


class SandboxOnUse:
    """Stands for a sandbox until one of its methods is called, then forwards to the
    sandbox ``made`` returns (see :attr:`.Rienda.sandbox_on_use`)."""

    def __init__(self, made: Callable[[], Sandbox]) -> None:
        self._made = made

    @property
    def memory_limit(self) -> int:
        return self._made().memory_limit

    def inspect(self, path: str, source: str, *, timeout: float | None = None,
                cancel: CancelToken | None = None) -> tuple[list[Export], JSONObject]:
        return self._made().inspect(path, source, timeout=timeout, cancel=cancel)

    def call(self, path: str, source: str, export: str, payload: list[JSON], host: HostHandler,
             cancel: CancelToken, frozen: Sequence[tuple[int, str]] = ()) -> JSValue:
        return self._made().call(path, source, export, payload, host, cancel, frozen)

    def call_chain(self, links: Sequence[HookSource], export: str, payload: list[JSON], rule: ChainRule,
                   host_for: Callable[[int], HostHandler], cancel: CancelToken,
                   frozen: Sequence[tuple[int, str]] = (),
                   on_step: Callable[[int, Outcome], None] | None = None) -> None:
        sandbox = self._made()
        if on_step is None:
            sandbox.call_chain(links, export, payload, rule, host_for, cancel, frozen)
        else:
            sandbox.call_chain(links, export, payload, rule, host_for, cancel, frozen, on_step)

    def prepare(self) -> None:
        self._made().prepare()
