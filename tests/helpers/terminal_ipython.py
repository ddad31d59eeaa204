"""IPython as a terminal user runs it, in a process of its own: ``start_ipython()`` (IPython's
test shell), ``%load_ext rienda_kernel``, then the test's lines.

IPython's test shell keeps its history in a file it makes in the temporary folder and never
removes: :func:`environment` points that folder (and IPython's own) into the test's
``tmp_path``, so a run leaves nothing in the machine's ``/tmp``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["environment", "program"]


def program(*lines: str) -> str:
    """Python source: the shell ``ip`` with the extension loaded, then ``lines``."""
    return "\n".join(("from IPython.testing.globalipapp import start_ipython", "ip = start_ipython()",
                      'ip.run_line_magic("load_ext", "rienda_kernel")', *lines, ""))


def environment(tmp_path: Path, home: Path) -> dict[str, str]:
    """This process's environment with Rienda's home ``home`` and the temporary folders under
    ``tmp_path``."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {**os.environ, "RIENDA_HOME": str(home), "TMPDIR": str(tmp_path / "tmp"),
            "IPYTHONDIR": str(tmp_path / "ipython")}
