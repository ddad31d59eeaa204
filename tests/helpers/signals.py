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
