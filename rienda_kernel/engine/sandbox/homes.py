"""A home: one isolate hosting ShadowRealms prepared ahead, one invocation at a time
(:mod:`.realms` leases its realms, prepares them and retires it).

Each realm is made with the prelude (``__kernel.create``) and, for a key, the extension's
module evaluated in it (``__kernel.prepare``, or ``__kernel.load`` into a blank one); it is
used once (``__kernel.invoke``), and the kernel forgets it when it runs.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from ..common.json_value import JSON
from ..errors import SandboxError
from .isolate import Isolate

__all__ = ["Home", "Key", "Lease"]

# What an extension's realms are prepared for: its (path, source). Where a key may be None,
# None stands for the blank realms (the prelude, no module).
Key: TypeAlias = tuple[str, str]


@dataclass(eq=False)
class Home:
    """One isolate hosting realms; ``ready`` maps a key to its prepared realms' ids."""

    isolate: Isolate
    ready: dict[Key | None, deque[int]] = field(default_factory=dict)
    state: Literal["idle", "preparing", "invoking"] = "idle"
    since: float = 0.0  # when it started preparing
    dirty: bool = False
    uses: int = 0  # invocations since the last full GC
    _ids: Iterator[int] = field(default_factory=lambda: iter(range(1, 1 << 62)))

    def prepare(self, script: str | None) -> tuple[int, JSON]:
        """A new realm, with ``script`` (a module script ending in ``null``) evaluated if
        given: (its id, None) when it is ready, else (its id, the failure's outcome)."""
        realm = next(self._ids)
        code = f"__kernel.create({realm})" if script is None else f"__kernel.prepare({realm}, {json.dumps(script)})"
        return realm, self._failure(code)

    def load(self, realm: int, script: str) -> JSON:
        """Evaluate ``script`` in realm ``realm`` (made by ``prepare(None)``): None when it
        is ready, else the failure's outcome."""
        return self._failure(f"__kernel.load({realm}, {json.dumps(script)})")

    def _failure(self, code: str) -> JSON:
        """What the kernel's ``code`` (a preparation) gives: null when the realm is ready
        (None), else the failure's outcome as JSON text (decoded)."""
        loaded = self.isolate.eval(code)
        if loaded is None:
            return None
        if not isinstance(loaded, str):
            raise SandboxError(f"the bridge expected JSON text or null from V8, got {type(loaded).__name__}")
        return json.loads(loaded)

    def invoke(self, realm: int, export: str, payload: str, frozen: str) -> str:
        """Run ``export`` in realm ``realm`` (once); the prelude's outcome, as JSON text."""
        return self.isolate.eval_text(
            f"__kernel.invoke({realm}, {json.dumps(export)}, {json.dumps(payload)}, {json.dumps(frozen)})")

    def total_ready(self) -> int:
        return sum(len(ids) for ids in self.ready.values())

    def collect(self) -> None:
        self.isolate.collect_garbage()
        self.uses = 0


@dataclass(eq=False)
class Lease:
    """A prepared realm, leased for one invocation (:meth:`.realms.Realms.release` it)."""

    home: Home
    realm: int
