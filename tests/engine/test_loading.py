"""Loading extensions never hangs: bounded by load_timeout, stopped by the run's token or
Ctrl-C, and limited to what a run declares."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rienda_kernel.engine import CancelToken, ConfigError, Log, NonInteractiveUI, Rienda, RunEnd

from ..helpers.homes import write_agent, write_script
from ..helpers.processes import wait_for
from ..helpers.signals import interruptible

SPIN = "for (;;) {}\nmodule.exports = { afterRun() {} };\n"
GOOD_HOOK = 'module.exports = { afterRun(ctx, e) { ctx.log("afterRun " + e.reason); } };\n'


def engine(rig, load_timeout: float | None = None, **agents: tuple[list[str], list[str]]) -> Rienda:
    if load_timeout is not None:
        (rig.home / "config.yaml").write_text(f"load_timeout: {load_timeout}\n")
    (rig.home / "agents").mkdir(exist_ok=True)
    for name, (tools, hooks) in agents.items():
        write_agent(rig.home, name, tools, hooks, description=None, body="Hi.")
    write_script(rig.workdir, [{"text": "done"}])
    return Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)


def test_a_file_that_does_not_finish_loading_is_a_diagnostic_after_load_timeout(rig):
    spin = rig.write_hook("spin", SPIN)
    rig.write_hook("good", GOOD_HOOK)
    catalog = engine(rig, load_timeout=0.5).catalog()
    assert [d.message for d in catalog.diagnostics] == [f"{spin}: did not finish loading within 0.5 s; skipped"]
    assert set(catalog.hooks) == {"good"}


def test_a_run_loads_only_the_extensions_its_agent_declares(rig):
    rig.write_hook("spin", SPIN)  # loading it would take the whole (long) load timeout
    rig.write_hook("good", GOOD_HOOK)
    ui, box = NonInteractiveUI(), {}
    conversation = engine(rig, load_timeout=600, plain=([], ["good"])).conversation("plain")
    thread = threading.Thread(target=lambda: box.update(result=conversation.run("go", ui)), daemon=True)
    thread.start()
    thread.join(120)  # far beyond a run's time, far below the spinning file's load timeout
    result = box["result"]
    assert (result.reason, result.text) == ("end_turn", "done")
    assert [e.text for e in ui.events if isinstance(e, Log)] == ["afterRun end_turn"]


def test_a_declared_extension_that_does_not_load_fails_the_run_naming_it(rig):
    rig.write_hook("spin", SPIN)
    ui = NonInteractiveUI()
    result = engine(rig, load_timeout=0.5, spinner=([], ["spin"])).conversation("spinner").run("go", ui)
    assert result.reason == "error" and result.messages == []
    assert "declares hook 'spin', which does not exist" in result.error
    assert "did not finish loading within 0.5 s" in result.error


def test_the_runs_cancel_token_stops_loading(rig):
    rig.write_hook("spin", SPIN)
    rienda = engine(rig, load_timeout=600, spinner=([], ["spin"]))
    cancel, box = CancelToken(), {}
    ui = NonInteractiveUI()
    thread = threading.Thread(target=lambda: box.update(result=rienda.conversation("spinner").run("go", ui, cancel)),
                              daemon=True)
    thread.start()
    wait_for(lambda: rig.sandbox.pool.pids()[1], what="a worker loading the file")
    cancel.cancel()
    thread.join(60)
    assert box["result"].reason == "interrupted"
    assert ui.events[-1] == RunEnd("interrupted", None)
    assert not (rig.home / "sessions").exists(), "a run stopped while loading has nothing to save"


@pytest.mark.parametrize("value", ["-1", "0", "'two'", "true"])
def test_a_load_timeout_that_is_not_a_positive_number_is_a_config_error(rig, value):
    with pytest.raises(ConfigError) as caught:
        engine(rig, load_timeout=value).catalog()  # type: ignore[arg-type]
    assert str(caught.value).startswith(f"{rig.home / 'config.yaml'}:1: load_timeout must be a positive number of seconds, got ")


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except FileNotFoundError:  # the thread ended meanwhile
            continue
    return found


def test_rienda_tools_stops_on_ctrl_c_with_one_line_and_exit_130(rig):
    rig.write_tool("spin", SPIN)
    (rig.home / "config.yaml").write_text("load_timeout: 600\n")
    cli = subprocess.Popen(interruptible([sys.executable, "-m", "rienda_kernel.cli", "--home", str(rig.home), "tools"]),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        # Loading has begun once a worker spends CPU time well beyond its start.
        wait_for(lambda: any(_cpu_seconds(child) > 1.5 for child in _children(cli.pid)), timeout=120,
                 what="a worker spinning in the file's top level")
        os.killpg(cli.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        out, err = cli.communicate(timeout=60)
    finally:
        cli.kill()
    assert (cli.returncode, err) == (130, "rienda: interrupted\n")
