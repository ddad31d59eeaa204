"""JSON Schema (the ``jsonschema`` package), loaded when first needed, without what
Rienda does not use.

Importing ``jsonschema`` also imports the optional libraries behind its ``format``
checkers; where JupyterLab is installed one of them, ``rfc3987_syntax``, compiles a grammar
at import and takes 1.5 s or more. Rienda checks no ``format``: when it is the first to
import ``jsonschema``, :func:`jsonschema` keeps ``rfc3987_syntax`` out of that import (the
only effect: ``jsonschema.FormatChecker`` then lacks the ``iri`` and ``iri-reference``
checks in this process; ``rfc3987_syntax`` itself stays importable).
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

__all__ = ["jsonschema"]

_SLOW_OPTIONAL = "rfc3987_syntax"


def jsonschema() -> ModuleType:
    """The ``jsonschema`` module, imported on the first call."""
    if "jsonschema" in sys.modules or _SLOW_OPTIONAL in sys.modules:
        return importlib.import_module("jsonschema")
    sys.modules[_SLOW_OPTIONAL] = None  # type: ignore[assignment]  # makes its import fail, quietly
    try:
        return importlib.import_module("jsonschema")
    finally:
        del sys.modules[_SLOW_OPTIONAL]
