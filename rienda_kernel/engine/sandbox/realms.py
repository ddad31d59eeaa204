"""Fresh realms prepared ahead: each invocation in a ShadowRealm nobody used before.

A fresh *realm* (a ShadowRealm: its own global object and its own intrinsics, in an
isolate that stays) costs a fraction of a fresh V8 *isolate* in time and memory (the
figures are in bench/README.md). So invocations run in realms, each made ahead of need with
the prelude *and the extension's module* already evaluated: on the critical path an
invocation is only the call and its marshalling.

- A :class:`.homes.Home` is one isolate made with ``realms=True`` (:mod:`.isolate`) and
  the realms prepared in it. One invocation at a time runs in a home (a host call may block on
  a person), so concurrent invocations get homes of their own.
- :class:`Realms` leases a prepared realm for ``(path, source)``: the key is the source as
  the caller loaded it, so a file that changed on disk (a new source) never gets a realm
  prepared for its old text. Each realm is used once; the kernel forgets it when it runs.
- A background thread (the *preparer*) replenishes each key up to its target once nothing
  happened for ``quiet_ms`` and :meth:`paused` is not in force, in a home no invocation is
  using while another home is free for leases. A target starts at ``min_ready`` and
  doubles, up to ``max_ready``, each time a lease finds none ready (a turn with many
  hooks), and falls back after ``idle_seconds`` unused.
  It also runs a full GC in an idle home every :data:`GC_EVERY` invocations: V8, which
  does not know mini-racer's hard limit, lets dead realms pile up in its old generation,
  and the limit counts them until a full GC (a lease collects inline past four times that).
- A home whose invocation was stopped, ran out of memory, or left timers or waits behind
  (``"left"`` in its outcome) is *retired*: closed, with its prepared realms, and replaced.
  Nothing that ran in it can run again.

The preparer waits on a condition without a timeout when nothing is to be done: an idle
process spends no CPU here.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import threading
import enum
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from typing import Literal, TypeAlias

from .homes import Home, Key, Lease
from .isolate import Isolate

__all__ = ["GC_EVERY", "Realms"]

GC_EVERY = 32
# Garbage from earlier invocations counts against a home's heap limit until a full GC, so
# a home holds this much more than one invocation's limit: GC_EVERY dead realms fit in it.
# Not more: the heap overshoots its limit before the check, and at 16 MB more a worker's
# heap reached its process bound first (V8 died, SIGTRAP, instead of stopping the script).
GARBAGE_ROOM = 8 * 1024 * 1024
MAX_KEYS = 64
BLANK_READY = 1  # blank realms (the prelude, no module) per home, for a key with none ready
# A module's top level already finished within the load timeout when it was inspected; a
# preparation that takes longer than this is stopped, and its key runs the old way.
PREPARE_TIMEOUT = 10.0

class _Collect(enum.Enum):
    """The preparer's work item for a full GC."""

    GC = "gc"


_GC = _Collect.GC
_Work: TypeAlias = Key | None | Literal[_Collect.GC]  # what the preparer does in a home


class Realms:
    """Prepared realms for the extensions in use (see the module's contracts)."""

    def __init__(self, heap_limit: int, min_ready: int = 1, max_ready: int = 8, max_homes: int = 4,
                 spare_homes: int = 2, quiet_ms: float = 1.0, idle_seconds: float = 60.0) -> None:
        self.heap_limit = heap_limit
        self.min_ready, self.max_ready, self.max_homes = min_ready, max_ready, max_homes
        self.spare_homes = spare_homes
        self.quiet = quiet_ms / 1000
        self.idle_seconds = idle_seconds
        self.misses = 0  # leases that found no realm ready (a diagnostic)
        self.prepared = 0  # realms prepared so far, ahead or inline
        self.retired = 0  # homes retired so far (stopped, out of memory, work left behind)
        self._homes: list[Home] = []
        self._serving: Home | None = None  # the home leases take from; the other is the standby
        self._scripts: OrderedDict[Key, str] = OrderedDict()  # key -> its module script
        self._targets: dict[Key, int] = {}
        self._last_use: dict[Key, float] = {}
        self._failing: set[Key | None] = set()  # keys whose module (None: a blank realm) failed while preparing
        self._creating = 0
        self._paused = 0
        self._last_activity = 0.0
        self._stopped = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._prepare_forever, name="rienda-realms", daemon=True)
        self._thread.start()
        atexit.register(self.shutdown)

    # -- leasing -------------------------------------------------------------------------
    def lease(self, key: Key, script: Callable[[], str]) -> Lease | None:
        """A realm prepared for ``key`` (``script()`` is its module script), made now if
        none is ready; None if the module fails in a realm (the caller runs it the old way,
        which reports the failure)."""
        with self._changed:
            self._last_activity = now = time.perf_counter()
            if key not in self._scripts:
                self._scripts[key] = script()
                self._targets[key] = self.min_ready
                while len(self._scripts) > MAX_KEYS:
                    self._forget(next(iter(self._scripts)))
            self._scripts.move_to_end(key)
            if now - self._last_use.get(key, now) > self.idle_seconds:
                self._targets[key] = self.min_ready
            self._last_use[key] = now
            if key in self._failing:
                return None
            home = self._idle_home(key)
            overdue = home.uses >= 4 * GC_EVERY
            realm = home.ready[key].popleft() if home.ready.get(key) else None
            blank = None
            if realm is None:
                self.misses += 1
                self._targets[key] = min(self.max_ready, self._targets[key] * 2)
                blank = home.ready[None].popleft() if home.ready.get(None) else None
            self._changed.notify_all()
        if overdue:
            home.collect()
        if realm is None:
            try:  # a blank realm (prelude only) takes just the module; else a whole new one
                if blank is not None:
                    realm, failure = blank, home.load(blank, self._scripts[key])
                else:
                    realm, failure = home.prepare(self._scripts[key])
                    self.prepared += 1
            except BaseException:
                self._end(home, dirty=True)
                raise
            if failure is not None:
                with self._changed:
                    self._failing.add(key)
                self._end(home, dirty=False)
                return None
        return Lease(home, realm)

    def release(self, lease: Lease, dirty: bool = False) -> None:
        """The invocation in ``lease`` ended; ``dirty``: its home must not be used again."""
        lease.home.uses += 1
        self._end(lease.home, dirty)

    def _idle_home(self, key: Key | None) -> Home:
        """The home to lease from (called holding the lock; may release it to wait, or to
        make a home): the *serving* home; the standby instead, which then serves, when it
        has a realm for ``key`` and the serving home none (waiting for its preparation in
        progress, once, rather than preparing one inline); another idle home when the
        serving one is busy (concurrent invocations)."""
        waited = False
        while True:
            if self._stopped:
                raise RuntimeError("the realms are shut down")
            live = [home for home in self._homes if not home.dirty]
            if self._serving not in live:
                self._serving = live[0] if live else None
            serving = self._serving
            if serving is not None and serving.state == "idle":
                if not serving.ready.get(key):
                    standby = next((h for h in live if h is not serving and h.ready.get(key)), None)
                    if standby is not None and standby.state == "idle":
                        self._serving = serving = standby
                    elif standby is not None and standby.state == "preparing" and not waited:
                        waited = True
                        self._changed.wait(PREPARE_TIMEOUT)
                        continue
                serving.state = "invoking"
                return serving
            idle = [home for home in live if home.state == "idle"]
            if idle:
                home = max(idle, key=lambda h: (bool(h.ready.get(key)), h.total_ready()))
                home.state = "invoking"
                return home
            preparing = [home for home in self._homes if home.state == "preparing"]
            for home in preparing:
                if time.perf_counter() - home.since > PREPARE_TIMEOUT:
                    home.isolate.terminate()  # the preparer retires it and marks the key
            if not preparing and len(self._homes) + self._creating < self.max_homes:
                self._creating += 1
                self._changed.release()
                try:
                    home = Home(Isolate(self.heap_limit + GARBAGE_ROOM, realms=True), state="invoking")
                finally:
                    self._changed.acquire()
                    self._creating -= 1
                self._homes.append(home)
                return home
            self._changed.wait(PREPARE_TIMEOUT if preparing else None)

    def _end(self, home: Home, dirty: bool) -> None:
        with self._changed:
            self._last_activity = time.perf_counter()
            home.state = "idle"
            if dirty or home.dirty or home.isolate.out_of_memory():
                home.dirty = True
                self.retired += 1
                self._homes.remove(home)
            self._changed.notify_all()
        if home.dirty:
            home.isolate.close()

    def _forget(self, key: Key) -> None:
        del self._scripts[key]
        self._targets.pop(key, None)
        self._last_use.pop(key, None)
        self._failing.discard(key)
        for home in self._homes:
            home.ready.pop(key, None)  # the kernel drops them with the home, or at its GC

    # -- preparing -----------------------------------------------------------------------
    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Within the block nothing is prepared ahead (a lease may still prepare inline)."""
        with self._changed:
            self._paused += 1
        try:
            yield
        finally:
            with self._changed:
                self._paused -= 1
                self._changed.notify_all()

    @property
    def failing(self) -> int:
        """Keys whose module failed in a realm (their calls run in a fresh isolate)."""
        return len(self._failing)

    @property
    def ready(self) -> int:
        """Prepared realms waiting, over all keys and homes."""
        with self._changed:
            return sum(len(ids) for home in self._homes for ids in home.ready.values())

    def quiescent(self) -> bool:
        """Nothing is being prepared and, quiet or not, nothing is left to prepare (tests,
        the bench)."""
        with self._changed:
            if self._creating or any(home.state != "idle" for home in self._homes):
                return False
            work = self._next_work(wait_for_quiet=False)
            return work is None or work[1] is _GC

    def warm(self) -> None:
        """Make the first home now (V8's start, the kernel), not on the first lease."""
        with self._changed:
            home = self._idle_home(None)
        self._end(home, dirty=False)

    def shutdown(self) -> None:
        with self._changed:
            self._stopped = True
            homes, self._homes = self._homes, []
            self._changed.notify_all()
        self._thread.join(timeout=5)
        for home in homes:
            home.isolate.close()

    def _prepare_forever(self) -> None:
        while True:
            with self._changed:
                work = self._next_work()
                while work is None:
                    if self._stopped:
                        return
                    pause = self._last_activity + self.quiet - time.perf_counter()
                    self._changed.wait(pause if pause > 0 and not self._paused else None)
                    work = self._next_work()
                home, key = work
                if home is None:
                    self._creating += 1
                else:
                    home.state, home.since = "preparing", time.perf_counter()
                script = self._scripts.get(key) if key not in (None, _GC) else None
            if home is None:
                self._add_home()
                continue
            try:
                if key is _GC:
                    home.collect()
                else:
                    realm, failure = home.prepare(script)
                    self.prepared += 1
            except Exception:  # noqa: BLE001 - stopped (too long), out of memory...: retire the home
                with self._changed:
                    if key not in (None, _GC):
                        self._failing.add(key)
                self._end(home, dirty=True)
                continue
            with self._changed:
                if key is not _GC:
                    if failure is not None:
                        self._failing.add(key)
                    elif key is None or key in self._scripts:
                        home.ready.setdefault(key, deque()).append(realm)
                    else:
                        home.isolate.eval(f"__kernel.discard({realm})")
            self._end(home, dirty=False)

    def _add_home(self) -> None:
        try:
            home = Home(Isolate(self.heap_limit + GARBAGE_ROOM, realms=True))
        except Exception:  # noqa: BLE001 - leases make homes inline (and raise) if this fails
            home = None
        with self._changed:
            self._creating -= 1
            if home is not None and not self._stopped:
                self._homes.append(home)
                home = None
            self._changed.notify_all()
        if home is not None:
            home.isolate.close()

    def _next_work(self, wait_for_quiet: bool = True) -> tuple[Home | None, _Work] | None:
        """What to do next (called holding the lock): (None, None) to make a home; (a home,
        _GC) for its GC; (a home, a key) to prepare a realm for that key, or a blank one for
        the key None; None for nothing now.

        It waits for ``quiet`` (nothing leased or released for ``quiet_ms``) and no
        :meth:`paused`: on two cores a preparation beside a burst of invocations (a hook
        point's chain) slowed each of them more than it saved. The quiet is short
        (``quiet_ms``): a preparation that starts right after an invocation is ready for
        the next one. Two homes double-buffer:
        leases take from the serving home, which drains, while the preparer fills the
        standby, each key up to its target; when the serving home has no realm for a key
        and the standby has, they swap. A lease never waits for a preparation in a home it
        could use instead (nor, but once, in the one it must)."""
        if self._stopped or self._creating:
            return None
        if len(self._homes) < (self.spare_homes if self._scripts else 1):
            return None, None
        if wait_for_quiet and (self._paused or time.perf_counter() - self._last_activity < self.quiet):
            return None
        idle = [home for home in self._homes if home.state == "idle" and not home.dirty]

        def allowed(home: Home) -> bool:
            return len(self._homes) == 1 or any(other is not home and other.state != "preparing"
                                                for other in self._homes)

        for home in idle:
            if home.uses >= GC_EVERY and allowed(home):
                return home, _GC
        if len(self._homes) > 1:  # only the standby is prepared: the serving home drains
            idle = [home for home in idle if home is not self._serving]
        for home in sorted((h for h in idle if allowed(h)), key=Home.total_ready):
            # the key furthest below its target first, so that a half-filled standby holds
            # some of every key (a swap then finds what the next leases need)
            short = [(len(home.ready.get(key, ())) / self._targets[key], -order, key)
                     for order, key in enumerate(self._scripts)
                     if key not in self._failing and len(home.ready.get(key, ())) < self._targets[key]]
            if short:
                return home, min(short)[2]
            if len(home.ready.get(None, ())) < BLANK_READY:
                return home, None
        return None
