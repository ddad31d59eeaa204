"""Children that a test interrupts start with SIGINT's default disposition.

A process started from a shell script's background job (``cmd &``, as CI runners and
``nohup`` do) inherits SIGINT *ignored*, as POSIX says, and so does every child it starts:
a Python child then never turns a Ctrl-C into KeyboardInterrupt. A test that signals a
child says what that child gets, whatever the suite inherited: :func:`interruptible`
starts the command through a few lines of Python that set SIGINT to its default and then
``exec`` it (same pid, so the test signals it as it would the command itself; portable,
unlike ``env --default-signal``; and with no ``preexec_fn``, which is unsafe in a process
with threads).
"""

from __future__ import annotations

import sys

__all__ = ["interruptible"]

_LAUNCH = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
           "os.execvp(sys.argv[1], sys.argv[1:])")


def interruptible(argv: list[str]) -> list[str]:
    """``argv`` as a command that starts with SIGINT at its default disposition."""
    return [sys.executable, "-S", "-c", _LAUNCH, *argv]


def to_another_thread(pid: int, signum: int) -> int:
    """Send ``signum`` to a thread of process ``pid`` other than its main thread, one that
    does not block it: what the system may do with any signal sent to a process (it picks
    a thread), made certain. Returns that thread's id (Linux: ``tgkill``)."""
    import ctypes
    import platform
    from pathlib import Path

    numbers = {"x86_64": 234, "aarch64": 131}  # tgkill's system call number
    if platform.system() != "Linux" or platform.machine() not in numbers:
        raise RuntimeError("to_another_thread needs Linux on x86_64 or aarch64")
    for task in sorted(Path(f"/proc/{pid}/task").iterdir(), key=lambda path: int(path.name), reverse=True):
        tid = int(task.name)
        status = dict(line.split(":\t", 1) for line in (task / "status").read_text().splitlines() if ":\t" in line)
        if tid != pid and not int(status.get("SigBlk", "0"), 16) & (1 << (signum - 1)):
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.syscall(numbers[platform.machine()], pid, tid, signum) != 0:
                raise OSError(ctypes.get_errno(), f"tgkill {pid} {tid} {signum}")
            return tid
    raise AssertionError(f"process {pid} has no other thread that takes signal {signum}")
