"""Jupyter's shutdown of the Rienda kernel: a shutdown request alone ends the process (a
real kernel through jupyter_client; a turn running at shutdown: test_kernel.py)."""

from __future__ import annotations

from ...helpers.homes import write_hooked_agent
from ...helpers.processes import ends_by_itself


def test_a_shutdown_request_ends_the_kernel_and_its_v8_worker_by_itself(frontend_factory, home):
    write_hooked_agent(*home)
    fe = frontend_factory()
    assert fe.run("%rienda use agent")[0]["status"] == "ok"
    assert fe.run("hello")[0]["status"] == "ok"  # its hook ran in a V8 worker
    assert ends_by_itself(fe.km, fe.kc) == 0
