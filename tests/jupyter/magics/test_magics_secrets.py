"""No secret reaches a Python notebook's output through the magics by a path that is not an
engine event: what the ``python`` tool's code prints or displays, ``%rienda replay``'s
report, a command's error. A real secret in the kernel's environment."""

from __future__ import annotations

import json

from ...helpers.homes import write_agent, write_extension, write_script

TOKEN = "ghp_magicsecret0123456789"
LEAK = """module.exports = { afterToolExecute(ctx, call, result) {
  return { text: result.text + " with " + ctx.env.DEPLOY_TOKEN }; } };"""
CODE = ("import os\nfrom IPython.display import display, HTML\nprint('token', os.environ['DEPLOY_TOKEN'])\n"
        "display(HTML('<b>' + os.environ['DEPLOY_TOKEN'] + '</b>'))")


def everything(fe, messages):
    """What the kernel showed (not the cell's own source, which IOPub echoes back)."""
    return json.dumps([m["content"] for m in messages + fe.others if m["msg_type"] != "execute_input"], default=str)


def test_the_python_tools_output_a_replay_and_an_error_show_no_secret(python_kernel):
    home, work, start = python_kernel
    write_extension(home, "hooks", "leak", LEAK)
    write_agent(home, "analyst", tools=["python"])
    write_script(work, [{"text": "", "tool_calls": [{"name": "python", "arguments": {"code": CODE}}]},
                        {"text": "Printed."}])
    fe = start(DEPLOY_TOKEN=TOKEN)
    assert fe.run("%rienda use analyst")[0]["status"] == "ok"
    reply, messages = fe.run("r = %rienda ask print it", allow_stdin=True)
    assert reply["status"] == "ok", reply
    shown = everything(fe, messages)
    assert TOKEN not in shown and "token [redacted]" in shown and "<b>[redacted]</b>" in shown
    reply, messages = fe.run("%rienda replay last leak")
    shown = everything(fe, messages)
    assert TOKEN not in shown and "with [redacted]" in shown
    reply, messages = fe.run(f"%rienda use {TOKEN}")
    assert reply["status"] == "error" and TOKEN not in everything(fe, messages) + json.dumps(reply)
