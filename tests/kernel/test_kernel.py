"""The Rienda kernel through jupyter_client: cells as turns, live output, confirms, interrupts."""

from __future__ import annotations

import json
import time

import pytest

from ..frontend import PUBLISH, SLOW, buttons, streams, texts, write_agent, write_extension, write_script
from ..processes import alive, wait_for_file




def publisher(agent_home, work, turns: int = 1) -> None:
    """The agent "pub" with the publish tool, and a script that calls it ``turns`` times."""
    write_extension(agent_home, "tools", "publish", PUBLISH)
    write_agent(agent_home, "pub", tools=["publish"])
    write_script(work, call_script("publish") * turns)


def call_script(tool: str, then: str = "Finished.") -> list:
    return [{"text": "Calling.", "tool_calls": [{"name": tool, "arguments": {}}]}, {"text": then}]


def test_kernel_info_describes_markdown(frontend_factory):
    fe = frontend_factory()
    reply = fe.reply(fe.kc.kernel_info())
    assert reply["language_info"]["name"] == "markdown"
    assert reply["implementation"] == "rienda"


def test_a_cell_is_a_turn_and_the_next_cell_continues_the_session(frontend_factory, home):
    agent_home, work = home
    write_script(work, [{"text": "Hello **there**."}, {"text": "Second answer."}])
    fe = frontend_factory()
    reply, messages = fe.run("Say hello", allow_stdin=True)  # a live front end: text streams
    assert reply["status"] == "ok"
    final = [m for m in messages if m["msg_type"] == "update_display_data"
             and m["content"]["data"].get("text/plain") == "Hello **there**."]
    assert final and final[-1]["content"]["data"]["text/markdown"] == "Hello **there**."
    reply, messages = fe.run("And again")
    assert "Second answer." in texts(messages)
    sessions = list((agent_home / "sessions").glob("*.jsonl"))
    assert len(sessions) == 1
    assert sessions[0].read_text().count('"role": "user"') == 2


def test_text_streams_into_one_display_updated_in_place(frontend_factory, home):
    _, work = home
    write_script(work, [{"text": " ".join(f"w{i}" for i in range(40)), "chunk_delay_ms": 10}])
    fe = frontend_factory()
    _, messages = fe.run("talk", allow_stdin=True)
    message_displays = {m["content"]["transient"]["display_id"] for m in messages
                        if m["msg_type"] in ("display_data", "update_display_data")
                        and "message" in m["content"]["transient"]["display_id"]}
    updates = [m for m in messages if m["msg_type"] == "update_display_data"
               and "message" in m["content"]["transient"]["display_id"]]
    assert len(message_displays) == 1
    assert len(updates) >= 3


def test_log_lines_and_exec_output_arrive_while_the_tool_runs(frontend_factory, home):
    agent_home, work = home
    write_extension(agent_home, "tools", "slow", SLOW)
    write_agent(agent_home, "waiter", tools=["slow"])
    write_script(work, call_script("slow"))
    fe = frontend_factory()
    fe.run("%rienda use waiter")
    msg_id = fe.submit("go")
    early = fe.collect(msg_id, until=lambda m: m["msg_type"] == "stream" and "exec-started" in m["content"]["text"])
    assert "[tool:slow] waiting for release" in streams(early)
    assert not any(m["msg_type"] == "status" and m["content"]["execution_state"] == "idle" for m in early)
    (work / "release").touch()
    rest = fe.collect(msg_id)
    assert fe.reply(msg_id)["status"] == "ok"
    assert any("exec-started\nexec-done" in t for t in texts(rest))


@pytest.mark.parametrize(("choice", "expected"), [("Allow", "pushed"), ("Deny", "cancelled")])
def test_confirm_is_answered_by_clicking_a_button(frontend_factory, home, choice, expected):
    publisher(*home)
    fe = frontend_factory()
    fe.announce_widgets()
    fe.run("%rienda use pub")
    msg_id = fe.submit("publish", allow_stdin=True)
    seen = fe.collect(msg_id, until=lambda m: len(buttons([m])) > 0 and "Deny" in buttons([m]))
    time.sleep(0.3)
    seen += fe.drain()
    found = buttons(seen)
    assert set(found) >= {"Allow", "Deny"}
    assert any("Push the current branch?" in str(m["content"]) for m in seen if m["msg_type"] == "comm_open")
    fe.click(found[choice])
    rest = fe.collect(msg_id)
    assert fe.reply(msg_id)["status"] == "ok"
    assert any(expected in t for t in texts(rest))
    updates = [m for m in rest + fe.others if m["msg_type"] == "comm_msg"]  # a click's updates have the click as parent
    disabled = [m for m in updates if m["content"]["data"].get("state", {}).get("disabled") is True]
    assert {m["content"]["comm_id"] for m in disabled} >= {found["Allow"], found["Deny"]}
    assert any(("Allowed" if choice == "Allow" else "Denied") in str(m["content"]) for m in updates)


def test_a_non_interactive_run_denies_and_says_so(frontend_factory, home):
    publisher(*home)
    fe = frontend_factory()
    fe.run("%rienda use pub")
    reply, messages = fe.run("publish", allow_stdin=False)
    assert reply["status"] == "ok"
    assert "was denied: this run cannot ask" in streams(messages)
    assert any("cancelled" in t for t in texts(messages))


@pytest.mark.parametrize(("setting", "expected"), [("allow", "pushed"), ("deny", "cancelled")])
def test_an_explicit_confirm_setting_wins(frontend_factory, home, setting, expected):
    publisher(*home)
    fe = frontend_factory()
    fe.announce_widgets()
    fe.run("%rienda use pub")
    fe.run(f"%rienda confirm {setting}")
    reply, messages = fe.run("publish", allow_stdin=True)
    assert not buttons(messages)
    assert any(expected in t for t in texts(messages))


def test_the_environment_variable_sets_the_policy(frontend_factory, home):
    publisher(*home)
    fe = frontend_factory(RIENDA_CONFIRM="allow")
    fe.run("%rienda use pub")
    _, messages = fe.run("publish", allow_stdin=False)
    assert any("pushed" in t for t in texts(messages))


def test_without_widgets_a_terminal_front_end_gets_a_y_n_prompt(frontend_factory, home):
    publisher(*home)
    fe = frontend_factory()
    fe.run("%rienda use pub")
    msg_id = fe.submit("publish", allow_stdin=True)
    request = fe.kc.get_stdin_msg(timeout=30)
    assert request["msg_type"] == "input_request"
    assert "Push the current branch?" in request["content"]["prompt"] and "s = for this session" in request["content"]["prompt"]
    fe.kc.input("y")
    messages = fe.collect(msg_id)
    assert any("pushed" in t for t in texts(messages))


def _interrupted(fe, msg_id):
    fe.km.interrupt_kernel()
    messages = fe.collect(msg_id, timeout=30)
    reply = fe.reply(msg_id)
    return reply, messages


@pytest.mark.parametrize("state", ["confirm", "stream", "tool"])
def test_interrupt_stops_the_turn_keeps_the_session_and_the_next_cell_works(frontend_factory, home, state):
    agent_home, work = home
    write_extension(agent_home, "tools", "publish", PUBLISH)
    write_extension(agent_home, "tools", "slow", SLOW)
    write_extension(agent_home, "hooks", "audit", 'module.exports = { afterRun(ctx, e) { ctx.log("afterRun " + e.reason); } };')
    write_agent(agent_home, "agent", tools=["publish", "slow"], hooks=["audit"])
    first = {"confirm": call_script("publish")[0], "tool": call_script("slow")[0],
             "stream": {"text": " ".join(["word"] * 400), "chunk_delay_ms": 20}}[state]
    write_script(work, [first, {"text": "after the interrupt"}, {"text": "next cell"}])
    fe = frontend_factory()
    fe.announce_widgets()
    fe.run("%rienda use agent")
    msg_id = fe.submit("go", allow_stdin=True)
    marker = {"confirm": lambda m: "Deny" in buttons([m]),
              "tool": lambda m: m["msg_type"] == "stream" and "exec-started" in m["content"]["text"],
              "stream": lambda m: m["msg_type"] == "update_display_data" and "word word word" in str(m["content"])}[state]
    fe.collect(msg_id, until=marker)
    reply, messages = _interrupted(fe, msg_id)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    assert "afterRun interrupted" in streams(messages)
    errors = [m for m in messages if m["msg_type"] == "error"]
    assert errors and errors[0]["content"]["ename"] == "KeyboardInterrupt"
    session = next((agent_home / "sessions").glob("*.jsonl")).read_text()
    assert '"reason": "interrupted"' in session
    reply, messages = fe.run("next")
    assert reply["status"] == "ok"


def test_a_batch_run_gets_each_display_once_final(frontend_factory, home):
    """nbclient, nbconvert, nbval (allow_stdin false, no widgets): no status line, no
    partial text: the stored notebook holds the final answer."""
    _, work = home
    write_script(work, [{"text": " ".join(f"w{i}" for i in range(40)), "chunk_delay_ms": 5}])
    fe = frontend_factory()
    _, messages = fe.run("talk", allow_stdin=False)
    assert not [m for m in messages if m["msg_type"] == "update_display_data"]
    assert texts(messages) == [" ".join(f"w{i}" for i in range(40))]


def test_queued_cells_run_in_order(frontend_factory, home):
    _, work = home
    write_script(work, [{"text": "one", "chunk_delay_ms": 30}, {"text": "two"}, {"text": "three"}])
    fe = frontend_factory()
    ids = [fe.submit(prompt) for prompt in ("first", "second", "third")]
    replies = [fe.reply(msg_id) for msg_id in ids]
    assert [r["status"] for r in replies] == ["ok"] * 3
    assert [r["execution_count"] for r in replies] == [1, 2, 3]


def test_a_failed_run_is_a_jupyter_error_without_a_python_traceback(frontend_factory, home):
    _, work = home
    write_script(work, [])
    fe = frontend_factory()
    reply, messages = fe.run("hello")
    assert reply["status"] == "error" and reply["ename"] == "RiendaError"
    assert "is exhausted" in reply["evalue"]
    assert not any("Traceback" in line for line in reply["traceback"])


def test_rienda_commands(frontend_factory, home):
    agent_home, work = home
    write_agent(agent_home, "helper")
    fe = frontend_factory()
    reply, messages = fe.run("%rienda agents")
    assert reply["status"] == "ok"
    assert "helper" in " ".join(texts(messages))
    reply, messages = fe.run("%rienda use nobody")
    assert reply["status"] == "error" and reply["ename"] == "UsageError"
    assert not any("Traceback" in line for line in reply["traceback"])
    reply, _ = fe.run("%rienda frobnicate")
    assert reply["status"] == "error" and "unknown command" in reply["evalue"]
    reply, messages = fe.run("%rienda help")
    assert "use AGENT" in " ".join(texts(messages))


def test_completion_of_commands_and_agents(frontend_factory, home):
    agent_home, _ = home
    write_agent(agent_home, "helper")
    fe = frontend_factory()
    reply = fe.reply(fe.kc.complete("%rienda us", 10))
    assert "use" in reply["matches"]
    reply = fe.reply(fe.kc.complete("%rienda use he", 14))
    assert reply["matches"] == ["helper"] and reply["cursor_start"] == 12


def test_is_complete_lets_jupyter_console_submit(frontend_factory):
    fe = frontend_factory()
    assert fe.reply(fe.kc.is_complete("Count the words in notes.txt"))["status"] == "complete"


def test_allow_for_this_session_is_not_asked_again_and_says_so(frontend_factory, home):
    agent_home, work = home
    write_extension(agent_home, "tools", "publish", PUBLISH)
    write_agent(agent_home, "pub", tools=["publish"])
    write_script(work, call_script("publish") * 2)
    fe = frontend_factory()
    fe.announce_widgets()
    fe.run("%rienda use pub")
    msg_id = fe.submit("publish", allow_stdin=True)
    found = buttons(fe.collect(msg_id, until=lambda m: "Deny" in buttons([m])))
    assert set(found) == {"Allow", "Allow for this session", "Deny"}
    fe.click(found["Allow for this session"])
    assert any("pushed" in t for t in texts(fe.collect(msg_id)))
    reply, messages = fe.run("publish again", allow_stdin=True)
    assert reply["status"] == "ok"
    assert not buttons(messages)
    assert "✓ confirm “Publish”: allowed (allowed earlier in this session)" in streams(messages)
    assert any("pushed" in t for t in texts(messages))


def test_the_ledger_shows_under_each_tool_call(frontend_factory, home):
    agent_home, work = home
    write_extension(agent_home, "tools", "echo", 'module.exports = { description: "e", parameters: { type: "object" }, '
                                                  'execute: (ctx, a) => JSON.stringify(a) };')
    write_extension(agent_home, "hooks", "https", """module.exports = { beforeToolExecute(ctx, call) {
      return { arguments: { ...call.arguments, url: call.arguments.url.replace("http://", "https://") } }; } };""")
    write_extension(agent_home, "hooks", "deny", """module.exports = { beforeToolExecute(ctx, call) {
      if (call.arguments.url.includes("secret")) return { allow: false, reason: "not that one" }; } };""")
    write_extension(agent_home, "hooks", "broken", 'module.exports = { afterToolExecute() { throw new Error("oops"); } };')
    write_agent(agent_home, "fetcher", tools=["echo"], hooks=["https", "deny", "broken"])
    write_script(work, [{"text": "", "tool_calls": [{"name": "echo", "arguments": {"url": "http://a.org"}},
                                                    {"name": "echo", "arguments": {"url": "http://secret.org"}}]},
                        {"text": "done"}])
    fe = frontend_factory()
    fe.run("%rienda use fetcher")
    _, messages = fe.run("go")
    shown = "\n".join(m["content"]["data"].get("text/markdown", "") for m in messages if m["msg_type"] == "display_data")
    assert "hook **https** (beforeToolExecute) rewrote `arguments.url`" in shown
    assert "refused by hook **deny**: not that one" in shown
    assert "hook **broken** (afterToolExecute) threw: Error: oops" in shown


def test_a_live_cell_ends_with_the_tokens_the_provider_reported(frontend_factory, home):
    _, work = home
    write_script(work, [{"text": "Let me read.", "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}],
                         "usage": {"input_tokens": 1200, "output_tokens": 30}},
                        {"text": "Four.", "usage": {"input_tokens": 1300, "output_tokens": 5}}])
    (work / "notes.txt").write_text("one two three four")
    fe = frontend_factory()
    reply, messages = fe.run("count", allow_stdin=True)
    assert reply["status"] == "ok"
    status = [m for m in messages if m["msg_type"] == "update_display_data"
              and "status" in m["content"]["transient"]["display_id"]]
    assert status[-1]["content"]["data"]["text/plain"].startswith("tokens: 2,500 in · 35 out over 2 model turns · ")


def test_jupyter_shutdown_during_a_turn_ends_it_stops_a_stuck_after_run_and_closes_the_session(frontend_factory, home):
    agent_home, work = home
    write_extension(agent_home, "tools", "sleeper", 'module.exports = { description: "s", parameters: { type: "object" },'
                    ' execute(ctx) { ctx.log("sleeping"); ctx.system.exec("echo $$ > child.pid; exec sleep 60"); return "woke"; } };')
    write_extension(agent_home, "hooks", "stuck", 'module.exports = { afterRun(ctx, e) { ctx.log("afterRun " + e.reason); for (;;) {} } };')
    write_agent(agent_home, "agent", tools=["sleeper"], hooks=["stuck"])
    write_script(work, call_script("sleeper"))
    fe = frontend_factory()
    fe.run("%rienda use agent")
    msg_id = fe.submit("go")
    fe.collect(msg_id, until=lambda m: m["msg_type"] == "stream" and "sleeping" in m["content"]["text"])
    child = int(wait_for_file(work / "child.pid"))
    fe.kc.stop_channels()
    fe.km.shutdown_kernel(now=False)  # what Jupyter does: an interrupt, then a shutdown request
    assert not alive(child)
    [session] = (agent_home / "sessions").glob("*.jsonl")
    records = [json.loads(line) for line in session.read_text().splitlines()]
    assert [r["type"] for r in records[-2:]] == ["stopped", "run_end"]
    assert records[-2]["point"] == "afterRun" and records[-1]["reason"] == "interrupted"


def test_a_second_interrupt_stops_an_after_run_hook_that_never_returns(frontend_factory, home):
    agent_home, work = home
    write_extension(agent_home, "hooks", "stuck", 'module.exports = { afterRun(ctx, e) { ctx.log("afterRun " + e.reason);'
                    ' while (e.reason === "interrupted") {} } };')
    write_agent(agent_home, "agent", hooks=["stuck"])
    write_script(work, [{"text": " ".join(["word"] * 400), "chunk_delay_ms": 20}, {"text": "next cell"}])
    fe = frontend_factory()
    fe.run("%rienda use agent")
    msg_id = fe.submit("go", allow_stdin=True)  # a live cell: the text streams
    fe.collect(msg_id, until=lambda m: m["msg_type"] == "update_display_data" and "word word word" in str(m["content"]))
    fe.km.interrupt_kernel()
    fe.collect(msg_id, until=lambda m: m["msg_type"] == "stream" and "afterRun interrupted" in m["content"]["text"])
    reply, messages = _interrupted(fe, msg_id)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    [session] = (agent_home / "sessions").glob("*.jsonl")
    records = [json.loads(line) for line in session.read_text().splitlines()]
    assert [r["type"] for r in records[-2:]] == ["stopped", "run_end"]
    assert fe.run("next")[0]["status"] == "ok"


def test_no_secret_reaches_a_notebook_output(frontend_factory, home):
    agent_home, work = home
    key = "sk-live-0123456789abcdef"
    write_extension(agent_home, "tools", "leak", 'module.exports = { description: "l", parameters: { type: "object" },'
                    ' execute(ctx) { ctx.log("log " + ctx.env.OPENAI_API_KEY); return "result " + ctx.env.OPENAI_API_KEY; } };')
    write_agent(agent_home, "agent", tools=["leak"])
    write_script(work, [{"text": f"the key is {key}", "tool_calls": [{"name": "leak", "arguments": {"k": key}}]},
                        {"text": f"again {key}"}])
    fe = frontend_factory(OPENAI_API_KEY=key)
    fe.run("%rienda use agent")
    reply, messages = fe.run("go", allow_stdin=True)
    assert reply["status"] == "ok"
    shown = json.dumps([m["content"] for m in messages])
    assert key not in shown and "[redacted]" in shown
