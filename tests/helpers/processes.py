"""Watching real processes and the files they write, with deadlines (never fixed sleeps)."""

from __future__ import annotations

import time
from pathlib import Path


def wait_for_file(path: Path, deadline_s: float = 30) -> str:
    """The text of ``path`` once a process has written it whole (a line ending in a newline)."""
    deadline = time.monotonic() + deadline_s
    while not (path.exists() and path.read_text().endswith("\n")):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    return path.read_text().strip()


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped does not count)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False
