"""SIGTERM and Ctrl-C that the system hands to a thread other than the main one (it may pick
any thread of a process) stop ``rienda run`` all the same: the main thread wakes for them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from tests.helpers.pipes import read_until
from tests.helpers.processes import alive, wait_for_file
from tests.helpers.signals import interruptible, to_another_thread

SLEEPER = ('module.exports = { description: "s", parameters: { type: "object" }, execute(ctx) { ctx.log("sleeping");'
           ' ctx.system.exec("echo $$ > child.pid; exec sleep 60"); return "woke"; } };')
AUDIT = 'module.exports = { afterRun(ctx, e) { ctx.log("afterRun " + e.reason); } };'


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stop_signal_given_to_another_thread_stops_the_run(tmp_path, signum, status):
    home, work = tmp_path / "home", tmp_path / "work"
    for kind, name, source in (("tools", "sleeper", SLEEPER), ("hooks", "audit", AUDIT)):
        (home / kind / name).mkdir(parents=True)
        (home / kind / name / "index.js").write_text(source)
    (home / "agents").mkdir()
    (home / "agents" / "a.md").write_text("---\nmodel: scripted/script.yaml\ntools: [sleeper]\nhooks: [audit]\n---\nx\n")
    work.mkdir()
    (work / "script.yaml").write_text(json.dumps([{"text": "", "tool_calls": [{"name": "sleeper", "arguments": {}}]},
                                                  {"text": "never"}]))
    proc = subprocess.Popen(interruptible([sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), "run",
                                           "--agent", "a", "go"]), cwd=work, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=os.environ)
    try:
        read_until(proc, "stderr", "sleeping", timeout=120)
        child = int(wait_for_file(work / "child.pid"))
        to_another_thread(proc.pid, signum)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == status
    assert "afterRun interrupted" in err and not alive(child)
