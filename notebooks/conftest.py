"""nbval runs these notebooks with the kernel their metadata names (never the current
environment); the Rienda kernelspec is installed into a temporary prefix for the run, and
RIENDA_HOME points at an empty home, so what a notebook shows before it picks its own home
never depends on the machine's ``~/.rienda``. notebooks/execute.py does the same."""

from __future__ import annotations

import os
import tempfile

from rienda_kernel.jupyter.install import install


def pytest_configure(config):
    prefix = tempfile.mkdtemp(prefix="rienda-kernelspec-")
    install(prefix=prefix)
    path = os.path.join(prefix, "share", "jupyter")
    previous = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = path + (os.pathsep + previous if previous else "")
    os.environ["RIENDA_HOME"] = tempfile.mkdtemp(prefix="rienda-empty-home-")
