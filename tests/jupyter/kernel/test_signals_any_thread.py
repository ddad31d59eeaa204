"""SIGTERM to a Rienda kernel during a turn, handed by the system to a thread other than the
main one: the kernel's loop wakes for it, the turn ends as interrupted (afterRun, run_end)
and the kernel terminates as asked."""

from __future__ import annotations

import json
import signal
import subprocess

from ...helpers.homes import write_agent, write_extension, write_script
from ...helpers.processes import alive, wait_for_file
from ...helpers.signals import to_another_thread

SLEEPER = ('module.exports = { description: "s", parameters: { type: "object" }, execute(ctx) { ctx.log("sleeping");'
           ' ctx.system.exec("echo $$ > child.pid; exec sleep 60"); return "woke"; } };')


def test_sigterm_given_to_another_thread_ends_the_turn_and_the_kernel(frontend_factory, home):
    agent_home, work = home
    write_extension(agent_home, "tools", "sleeper", SLEEPER)
    write_agent(agent_home, "agent", tools=["sleeper"])
    write_script(work, [{"text": "", "tool_calls": [{"name": "sleeper", "arguments": {}}]}, {"text": "never"}])
    fe = frontend_factory()
    assert fe.run("%rienda use agent")[0]["status"] == "ok"
    msg_id = fe.submit("go")
    fe.collect(msg_id, until=lambda m: m["msg_type"] == "stream" and "sleeping" in m["content"]["text"])
    child = int(wait_for_file(work / "child.pid"))
    fe.disconnect()
    to_another_thread(fe.km.provisioner.pid, signal.SIGTERM)
    try:
        fe.km.provisioner.process.wait(30)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the kernel did not end; child alive: {alive(child)}") from None
    assert not alive(child)
    [session] = (agent_home / "sessions").glob("*.jsonl")
    assert json.loads(session.read_text().splitlines()[-1]) == {"type": "run_end", "reason": "interrupted",
                                                                 "error": None}
