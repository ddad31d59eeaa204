"""``rienda chat`` on a real pseudo-terminal, as a person at a terminal runs it.

The child's stdin, stdout and stderr are the pty's slave end, and the pty is its
controlling terminal (a new session that opens it), so Ctrl-C typed on the master end is
the terminal's SIGINT to the child's process group, as in a shell. Every read is bounded:
:meth:`PtyChat.expect` fails after ``timeout`` seconds, and :meth:`PtyChat.close` kills the
child if it is still there.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

__all__ = ["CTRL_C", "CTRL_D", "PtyChat"]

CTRL_C, CTRL_D = "\x03", "\x04"
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\r")
# Starts with SIGINT at its default (see helpers.signals), makes the pty on stdin the
# controlling terminal of a new session, then becomes the command (same pid).
_LAUNCH = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
           "os.close(os.open(os.ttyname(0), os.O_RDWR)); os.execvp(sys.argv[1], sys.argv[1:])")


class PtyChat:
    """``rienda chat *args`` with RIENDA_HOME=``home`` in ``cwd``, on a pty."""

    def __init__(self, home: Path, cwd: Path, *args: str) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
        env = {**os.environ, "RIENDA_HOME": str(home), "TERM": "dumb"}
        command = [sys.executable, "-m", "rienda_kernel.cli", "chat", *args]
        self.proc = subprocess.Popen([sys.executable, "-S", "-c", _LAUNCH, *command], cwd=cwd, env=env,
                                     stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)
        self.master = master
        self.text = ""  # everything the terminal showed, escapes and carriage returns left out
        self._mark = 0  # where the next expect starts looking

    def expect(self, wanted: str, timeout: float = 60) -> str:
        """Read until ``wanted`` shows (after what earlier expects consumed); returns what
        showed up to and including it. AssertionError, with what did show, after
        ``timeout`` seconds or when the child closes the terminal first."""
        deadline = time.monotonic() + timeout
        while (found := self.text.find(wanted, self._mark)) < 0:
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                raise AssertionError(f"{wanted!r} did not show; the terminal showed:\n{self.text[self._mark:]}")
        end = found + len(wanted)
        shown, self._mark = self.text[self._mark:end], end
        return shown

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def line(self, text: str) -> None:
        self.send(text + "\r")

    def wait(self, timeout: float = 60) -> int:
        """The exit code, once the child ends (read what it still shows meanwhile)."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._read(0.2)
        while self._read(0.2):
            pass
        return self.proc.wait(timeout=max(deadline - time.monotonic(), 1))

    def close(self) -> None:
        """Kill the child if it is still running; close the terminal."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        os.close(self.master)

    def _read(self, timeout: float) -> bool:
        """What the child wrote within ``timeout``; False once it closed the terminal or
        nothing came."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: every slave end is closed (the child ended)
            return False
        self.text += _ESCAPES.sub("", data.decode("utf-8", "replace"))
        return bool(data)
