"""MCP servers in a real Rienda kernel (through jupyter_client): listed by ``%rienda tools``,
called from a cell and shown like any tool call, gated by a hook, interrupted with the
kernel's stop button; the server lives as long as the kernel and stops with it."""

from __future__ import annotations

import yaml

from ...helpers.frontend import streams, texts
from ...helpers.homes import write_agent, write_extension, write_script
from ...helpers.mcp_servers import gone, lab_server, pids, traces, wait_until

GUARD = """module.exports = { beforeToolExecute(ctx, call) {
  ctx.log("checking " + call.name);
  if (call.name === "mcp__lab__double" && call.arguments.n > 100) return { allow: false, reason: "too big" }; } };"""


def configure(agent_home, work):
    lab = work.parent / "lab"
    lab.mkdir()
    (agent_home / "config.yaml").write_text(yaml.safe_dump({"default_model": "scripted/script.yaml",
                                                            "mcp_servers": {"lab": lab_server(lab)}}))
    write_extension(agent_home, "hooks", "guard", GUARD)
    write_agent(agent_home, "agent", tools=["mcp__lab"], hooks=["guard"])
    return lab


def test_an_mcp_tool_in_a_cell_listed_called_gated_and_shown_like_any_tool(frontend_factory, home):
    agent_home, work = home
    lab = configure(agent_home, work)
    write_script(work, [{"text": "Doubling.", "tool_calls": [{"name": "mcp__lab__double", "arguments": {"n": 21}},
                                                             {"name": "mcp__lab__double", "arguments": {"n": 500}}]},
                        {"text": "Done."}])
    fe = frontend_factory()
    reply, messages = fe.run("%rienda tools")
    assert reply["status"] == "ok"
    [listing] = [t for t in texts(messages) if "mcp__lab__double" in t]
    assert "Doubles a whole number" in listing and "MCP server lab" in listing
    assert "mcp__lab__a_name_that" in listing  # the diagnostic: a tool skipped, naming server and tool
    fe.run("%rienda use agent")
    reply, messages = fe.run("go")
    assert reply["status"] == "ok"
    shown = "\n".join(texts(messages))
    assert "mcp__lab__double" in shown and "42" in shown and "too big" in shown
    assert "[hook:guard.beforeToolExecute] checking mcp__lab__double" in streams(messages)
    assert traces(lab, "calls") == ["21"]  # the refused call never reached the server
    assert len(pids(lab)) == 1


def test_the_stop_button_ends_a_slow_mcp_call_and_shutdown_stops_the_server(frontend_factory, home):
    agent_home, work = home
    lab = configure(agent_home, work)
    write_script(work, [{"text": "", "tool_calls": [{"name": "mcp__lab__slow", "arguments": {"seconds": 120}}]},
                        {"text": "never"}])
    fe = frontend_factory()
    fe.run("%rienda use agent")
    msg_id = fe.submit("go")
    live = fe.collect(msg_id, until=lambda m: m["msg_type"] == "stream" and "step 3 (3/3)" in m["content"]["text"])
    assert "[tool:mcp__lab__slow] warming up" in streams(live)  # the server's log, while the call runs
    fe.km.interrupt_kernel()
    fe.collect(msg_id, timeout=30)
    reply = fe.reply(msg_id)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    wait_until(lambda: traces(lab, "cancelled"), "the server hearing notifications/cancelled")
    [pid] = pids(lab)
    write_script(work, [{"text": "", "tool_calls": [{"name": "mcp__lab__double", "arguments": {"n": 2}}]},
                        {"text": "Done."}])
    assert fe.run("%rienda new")[0]["status"] == "ok"
    reply, messages = fe.run("again")
    assert reply["status"] == "ok" and "4" in "\n".join(texts(messages))
    assert pids(lab) == [pid]  # one server for the kernel's lifetime
    fe.disconnect()
    fe.km.shutdown_kernel(now=False)  # what Jupyter does: a shutdown request, then the kernel exits
    assert gone(pid), "the MCP server outlived the kernel"


def test_shutdown_ends_a_server_still_busy_in_a_call_it_ignored_the_cancellation_of(frontend_factory, home):
    """A server deaf to cancellation and to its stdin closing (its tool sleeps in a thread)
    would outlive the kernel by the tool's two minutes: shutdown ends its process group."""
    agent_home, work = home
    lab = configure(agent_home, work)
    write_script(work, [{"text": "", "tool_calls": [{"name": "mcp__lab__stubborn", "arguments": {"seconds": 120}}]},
                        {"text": "never"}])
    fe = frontend_factory()
    fe.run("%rienda use agent")
    msg_id = fe.submit("go")
    wait_until(lambda: traces(lab, "started"), "the stubborn tool running")
    fe.km.interrupt_kernel()
    fe.collect(msg_id, timeout=30)
    assert fe.reply(msg_id)["ename"] == "KeyboardInterrupt"
    [pid] = pids(lab)
    fe.disconnect()
    fe.km.shutdown_kernel(now=False)
    assert gone(pid), "the busy MCP server outlived the kernel"
