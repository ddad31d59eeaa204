"""nbval runs these notebooks with the kernel their metadata names (never the current
environment); the Rienda kernelspec is installed into a temporary prefix for the run, and
RIENDA_HOME points at an empty home, so what a notebook shows before it picks its own home
never depends on the machine's ``~/.rienda``. notebooks/execute.py does the same. IPython's
own folder (history, profile) is an empty temporary one too: the suite runs notebooks side
by side (pytest-xdist), and they need not share, nor read, ``~/.ipython``. All three
folders are removed when the run ends."""

from __future__ import annotations

import os
import shutil
import tempfile

from rienda_kernel.jupyter.install import install

_MADE: list[str] = []  # the temporary folders of this process's run, removed at its end


def _folder(prefix: str) -> str:
    _MADE.append(tempfile.mkdtemp(prefix=prefix))
    return _MADE[-1]


def pytest_configure(config):
    prefix = _folder("rienda-kernelspec-")
    install(prefix=prefix)
    path = os.path.join(prefix, "share", "jupyter")
    previous = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = path + (os.pathsep + previous if previous else "")
    os.environ["RIENDA_HOME"] = _folder("rienda-empty-home-")
    os.environ["IPYTHONDIR"] = _folder("rienda-ipython-")


def pytest_unconfigure(config):
    while _MADE:
        shutil.rmtree(_MADE.pop(), ignore_errors=True)


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup``: the suite's own grouping, a notebook's cells in one worker
    (tests/helpers/scheduling.py, loaded by path: this folder may be run alone)."""
    import importlib.util
    import sys

    name = "rienda_tests_scheduling"
    if name not in sys.modules:
        path = os.path.join(os.path.dirname(__file__), os.pardir, "tests", "helpers", "scheduling.py")
        spec = importlib.util.spec_from_file_location(name, path)
        sys.modules[name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[name].make_scheduler(config, log)
