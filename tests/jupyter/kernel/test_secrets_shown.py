"""No secret reaches a Rienda kernel's output by a path that is not an engine event: what the
``python`` tool's code prints (its result is scrubbed; the cell shows its output live), and
``%rienda replay``'s report of a hook that now returns a token. A real secret in the
kernel's environment; every message the client receives is searched for it."""

from __future__ import annotations

import json

from ...helpers.homes import write_agent, write_extension, write_script

TOKEN = "ghp_kernelsecret0123456789"
LEAK = """module.exports = { afterToolExecute(ctx, call, result) {
  return { text: result.text + " with " + ctx.env.DEPLOY_TOKEN }; } };"""
PRINTS = {"name": "python", "arguments": {"code": "import os\nprint('token', os.environ['DEPLOY_TOKEN'])"}}


def everything(fe, messages):
    return json.dumps([m["content"] for m in messages + fe.others], default=str)


def test_the_python_tools_printing_and_a_replay_report_show_no_secret(frontend_factory, home):
    agent_home, work = home
    write_extension(agent_home, "hooks", "leak", LEAK)
    write_agent(agent_home, "analyst", tools=["python"])
    write_script(work, [{"text": "", "tool_calls": [PRINTS]}, {"text": "Printed."}])
    fe = frontend_factory(DEPLOY_TOKEN=TOKEN)
    assert fe.run("%rienda use analyst")[0]["status"] == "ok"
    for allow_stdin in (True, False):  # a live front end, and a batch run (a saved notebook)
        reply, messages = fe.run("print it", allow_stdin=allow_stdin)
        assert reply["status"] == "ok", reply
        shown = everything(fe, messages)
        assert TOKEN not in shown and "token [redacted]" in shown
        fe.run("%rienda new")
    reply, messages = fe.run("%rienda replay last leak")
    shown = everything(fe, messages)
    assert TOKEN not in shown and "with [redacted]" in shown
