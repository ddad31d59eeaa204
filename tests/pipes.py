"""Reading a child process's pipe up to a marker, with a deadline (never a hang)."""

from __future__ import annotations

import codecs
import os
import select
import time
from typing import IO


def read_until(pipe: IO, marker: str, timeout: float = 30.0) -> str:
    """What ``pipe`` delivered up to and including ``marker``.

    Reads the file descriptor directly (the pipe's own buffer is left unused, so a later
    ``communicate()`` gets exactly what follows). Fails the test, quoting what arrived, if
    the marker has not come within ``timeout`` seconds or the pipe closes first.
    """
    fd = pipe.fileno()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    received = ""
    deadline = time.monotonic() + timeout
    while marker not in received:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(left, 0))
        if not ready:
            raise AssertionError(f"{marker!r} did not arrive within {timeout:g} s; got {received!r}")
        data = os.read(fd, 1)
        if not data:
            raise AssertionError(f"the pipe closed before {marker!r} arrived; got {received!r}")
        received += decoder.decode(data)
    return received
