"""The ``rienda`` command as a real process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any


def rienda(home: Path, cwd: Path | None, *args: str, **kwargs: Any) -> subprocess.CompletedProcess:
    """``rienda *args`` with RIENDA_HOME=``home`` in ``cwd``, its output captured as text,
    within 60 s; ``kwargs`` go to :func:`subprocess.run` (``input=``...)."""
    env = {**os.environ, "RIENDA_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60, **kwargs)


def popen_rienda(home: Path, cwd: Path | None, *args: str, **kwargs: Any) -> subprocess.Popen:
    """``rienda *args`` started (not waited for) with RIENDA_HOME=``home`` in ``cwd``, its
    output piped as text; the caller bounds every wait on it."""
    env = {**os.environ, "RIENDA_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-m", "rienda_kernel.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def table_rows(stdout: str) -> list[dict[str, str]]:
    """A listing's table as ``rienda sessions``, ``agents``, ``tools``, ``hooks`` print it,
    read back: one dict a row, by column header (a column starts where its header does)."""
    lines = stdout.splitlines()
    if not lines:
        return []
    heads = [(found.start(), found.group()) for found in re.finditer(r"\S+(?: \S+)*", lines[0])]
    ends = [start for start, _ in heads[1:]] + [None]
    return [{name: line[start:end].strip() for (start, name), end in zip(heads, ends)} for line in lines[1:]]
