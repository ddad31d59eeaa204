"""Reading a child process's pipe up to a marker, with a deadline (never a hang)."""

from __future__ import annotations

import codecs
import os
import select
import subprocess
import time


def read_until(proc: subprocess.Popen, stream: str, marker: str, timeout: float = 30.0) -> str:
    """What ``proc``'s ``stream`` ("stdout" or "stderr") delivered up to and including
    ``marker``.

    Reads the file descriptor directly (the pipe object's own buffer is left unused, so a
    later ``communicate()`` gets exactly what follows). If the marker has not come within
    ``timeout`` seconds, or the pipe closes first, kills ``proc`` and fails the test quoting
    what arrived.
    """
    fd = getattr(proc, stream).fileno()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    received = ""
    deadline = time.monotonic() + timeout
    while marker not in received:
        ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
        data = os.read(fd, 1) if ready else None
        if not data:
            proc.kill()
            proc.communicate(timeout=60)
            why = f"did not arrive within {timeout:g} s" if data is None else "never came: the pipe closed"
            raise AssertionError(f"{marker!r} on {stream} {why}; got {received!r}")
        received += decoder.decode(data)
    return received
