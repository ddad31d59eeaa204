"""Work started ahead in the background, which never outlives the process.

A warm-up (the HTTP client's CA certificates, a slow import) runs beside the caller's
own work so that what needs it later finds it done. It runs on a thread the interpreter
waits for at exit (not a daemon): a daemon thread still inside native code (OpenSSL
loading certificates) when the interpreter finalizes kills the process by SIGSEGV or
SIGABRT, so a run that ended in well under a second would exit 139 or 134 instead of 0
or 1. A process that ends before a warm-up is done waits the rest of it at exit.

Contract: ``work`` must end by itself in bounded time (it waits on nothing another
thread must do), and must not raise for an expected failure: the caller that needs the
result meets the error itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["warm_up"]


def warm_up(work: Callable[[], object], *, name: str) -> threading.Thread:
    """Start ``work`` on a thread named ``name`` that the interpreter joins at exit."""
    thread = threading.Thread(target=work, name=name, daemon=False)
    thread.start()
    return thread
