"""A python3 ipykernel started through jupyter_client, with ``%load_ext rienda_kernel``."""

from __future__ import annotations

import pytest

from ...helpers.frontend import JupyterLab
from ...helpers.homes import scripted_home


@pytest.fixture
def python_kernel(tmp_path):
    """``start(kind)``: a python3 kernel with a front end of that kind connected *before*
    ``%load_ext rienda_kernel`` (JupyterLab's widget control comm is refused then)."""
    home, work = scripted_home(tmp_path)
    started = []

    def start(kind=JupyterLab, **env):
        env = {"IPYTHONDIR": str(tmp_path / "ipython"), **env}
        frontend = kind(home, work, env, kernel_name="python3")
        started.append(frontend)
        reply, messages = frontend.run("%load_ext rienda_kernel")
        assert reply["status"] == "ok", reply
        frontend.load_messages = messages
        return frontend

    yield home, work, start
    for frontend in started:
        frontend.close()
