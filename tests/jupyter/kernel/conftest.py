"""A real Rienda kernel started through jupyter_client, and clients that act as front ends.

The kernelspec is installed into a temporary prefix found through JUPYTER_PATH, so tests
never depend on what the machine has installed; IPython's history goes to a temporary
IPYTHONDIR.
"""

from __future__ import annotations

import os

import pytest

from rienda_kernel.jupyter.install import install

from ...helpers.frontend import Frontend, JupyterLab
from ...helpers.homes import scripted_home


@pytest.fixture(scope="session")
def kernelspec_path(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("jupyter-prefix")
    install(prefix=str(prefix))
    path = str(prefix / "share" / "jupyter")
    previous = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = path + (os.pathsep + previous if previous else "")
    yield path
    if previous is None:
        os.environ.pop("JUPYTER_PATH", None)
    else:
        os.environ["JUPYTER_PATH"] = previous


@pytest.fixture
def home(tmp_path):
    return scripted_home(tmp_path)


@pytest.fixture
def frontend_factory(kernelspec_path, home, tmp_path):
    """``start(kind=JupyterLab, **env)`` starts a Rienda kernel with a front end of that
    kind; ``start(kind, attach_to=fe)`` connects a second client to ``fe``'s kernel."""
    started = []

    def start(kind: type[Frontend] = JupyterLab, attach_to: Frontend | None = None, **env: str) -> Frontend:
        env = {"IPYTHONDIR": str(tmp_path / "ipython"), **env}
        frontend = kind(*home, env, attach_to=attach_to)
        started.append(frontend)
        return frontend

    yield start
    for frontend in reversed(started):
        frontend.close()
