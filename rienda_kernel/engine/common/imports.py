"""Third-party modules imported without the optional parts Rienda does not use.

Some libraries import optional extras at import time when they happen to be installed,
as they are wherever JupyterLab is: ``jsonschema`` imports ``rfc3987_syntax`` for its
``iri`` format checker (it compiles a grammar: 1.5 s or more) and a library for each other
format it can check (``isoduration`` brings ``arrow``), ``httpx`` imports its
command-line client (``click``, ``rich``, ``pygments``). Rienda checks no ``format`` and
runs no ``httpx`` command, so :func:`without` keeps those out of the import. The only
effect, when Rienda is the first to import the library in a process: that process's
``jsonschema.FormatChecker`` lacks those formats' checks and ``httpx.main`` is the stub httpx
ships for a missing CLI. The extras themselves stay importable.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from .background import warm_up

__all__ = ["import_module", "jsonschema", "prewarm", "without"]

# module -> the extras Rienda never uses: jsonschema's format checkers' libraries (Rienda
# checks no format; isoduration alone brings arrow and dateutil into a run's start). Never a
# module Rienda imports itself: the block is process-wide, so another thread importing it
# meanwhile would fail (idna, which httpx needs, is left out for that reason).
_UNUSED_EXTRAS = {"jsonschema": ("rfc3987_syntax", "rfc3987", "rfc3986_validator", "rfc3339_validator", "fqdn",
                                 "isoduration", "jsonpointer", "uri_template", "webcolors")}


@contextmanager
def without(*optional: str) -> Iterator[None]:
    """Within the block, importing any of ``optional`` (not yet imported) fails with
    ImportError, as if it were not installed; afterwards it imports normally."""
    blocked = [name for name in optional if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # makes its import fail
    try:
        yield
    finally:
        for name in blocked:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]


def import_module(name: str) -> ModuleType:
    """The module ``name``, imported (on the first call) without the extras Rienda never
    uses; every import of such a module in Rienda goes through here, a background
    prewarm's included (an import that pulled the extra in would hold the import lock the
    first turn then waits on)."""
    with without(*_UNUSED_EXTRAS.get(name, ())):
        return importlib.import_module(name)


def jsonschema() -> ModuleType:
    """The ``jsonschema`` module, imported on the first call (its import is slow)."""
    return import_module("jsonschema")


def prewarm(*names: str) -> threading.Thread:
    """Import ``names`` (through :func:`import_module`) on a background thread that the
    process waits for at exit (:mod:`.background`), so that what needs one later does not
    wait for it (or waits on Python's import lock for the rest of it). A module that fails
    to import is skipped: its user meets the error."""

    def work() -> None:
        for name in names:
            try:
                import_module(name)
            except ImportError:
                pass

    return warm_up(work, name="rienda-prewarm")
