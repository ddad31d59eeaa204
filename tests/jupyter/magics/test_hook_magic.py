"""``%rienda hook`` in a real python3 ipykernel (through jupyter_client): the report as the
cell's output, and an interrupt that stops a hook while the kernel goes on."""

from __future__ import annotations

import pytest

from ...helpers.frontend import Frontend, streams, texts
from ...helpers.homes import write_extension
from ...helpers.processes import wait_for

SPIN = """module.exports = { beforeToolExecute(ctx) { ctx.file.write("started", "yes"); while (true) {} } };"""


@pytest.fixture
def kernel(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    (home / "agents").mkdir(parents=True)
    work.mkdir()
    frontend = Frontend(home, work, {}, kernel_name="python3")
    reply, _ = frontend.run("%load_ext rienda_kernel")
    assert reply["status"] == "ok", reply
    yield home, work, frontend
    frontend.close()


def test_the_report_is_the_cells_output(kernel):
    home, work, fe = kernel
    write_extension(home, "hooks", "upper", "module.exports = { afterToolExecute: (ctx, c, r) => ({ text: r.text.toUpperCase() }) };")
    reply, messages = fe.run('%rienda hook upper afterToolExecute {"call": {"name": "shell"}, "result": {"text": "ok"}}')
    assert reply["status"] == "ok", reply
    shown = texts(messages)[0].splitlines()
    assert shown[0].startswith('upper.afterToolExecute returned {"text": "OK"} in ')
    assert shown[1:] == ["  rewrote text (2 → 2 characters)", '  now: {"text": "OK", "isError": false}']


def test_an_interrupt_stops_the_hook_and_the_kernel_goes_on(kernel):
    home, work, fe = kernel
    write_extension(home, "hooks", "spin", SPIN)
    msg_id = fe.submit('%rienda hook spin beforeToolExecute {"name": "shell"}')
    wait_for(lambda: (work / "started").exists(), 60, "the hook to start")  # it is in its loop once it wrote this
    fe.km.interrupt_kernel()
    messages = fe.collect(msg_id, timeout=30)
    assert "spin.beforeToolExecute was interrupted" in streams(messages)
    reply, messages = fe.run("print(1 + 1)")
    assert reply["status"] == "ok" and streams(messages) == "2\n"
