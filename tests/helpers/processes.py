"""Watching real processes and the files they write, with deadlines (never fixed sleeps)."""

from __future__ import annotations

import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any, Callable


def wait_for(predicate: Callable[[], Any], timeout: float = 60.0, what: str = "the condition") -> Any:
    """Poll ``predicate`` until it returns something truthy, and return that (a deadline,
    not a delay); fail the test if ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def wait_for_file(path: Path, deadline_s: float = 30) -> str:
    """The text of ``path`` once a process has written it whole (a line ending in a newline)."""
    wait_for(lambda: path.exists() and path.read_text().endswith("\n"), deadline_s, f"{path} to appear")
    return path.read_text().strip()


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped, or a process being torn down, does not count)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False


def wait_exit(pid: int, timeout: float = 60.0) -> bool:
    """Whether process ``pid`` (not necessarily our child) exits within ``timeout`` (a
    pidfd: no polling; a zombie has exited)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
        return bool(readable)
    finally:
        os.close(fd)


def children(pid: int) -> list[int]:
    """The child processes of ``pid``, ended but unreaped ones (zombies) included."""
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def ends_by_itself(km: Any, kc: Any, timeout: float = 20.0) -> int:
    """Ask the kernel of ``km`` (through its client ``kc``), which has child processes (its
    V8 workers), to shut down, the request alone (no signal, no kill from jupyter_client),
    and return its exit status; fail if it is still there after ``timeout`` s. ipykernel
    waits for its children to be gone: a child ended and left unreaped kept a kernel
    waiting until jupyter_client killed it."""
    process = km.provisioner.process
    assert children(process.pid), "the kernel has no child process to wait for"
    kc.shutdown()
    try:
        return int(process.wait(timeout))
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the kernel did not end after its shutdown request; its children: "
                             f"{children(process.pid)}") from None
