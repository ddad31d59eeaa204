"""The Rienda kernel through jupyter_client: cells as turns, live output, commands, interrupts."""

from __future__ import annotations

import json
import re

import pytest

from ...helpers.extensions import SLOW
from ...helpers.frontend import Console, streams, texts
from ...helpers.hook_walk import THROW_AT, walk_home
from ...helpers.homes import call_script, write_agent, write_agent_file, write_extension, write_script
from ...helpers.processes import alive, wait_for_file


def displays(messages, kind: str) -> list[dict]:
    """Display messages whose display id names ``kind`` (message, tool, result, log, status...)."""
    return [m for m in messages if m["msg_type"] in ("display_data", "update_display_data")
            and f"-{kind}-" in m["content"].get("transient", {}).get("display_id", "")]


def test_kernel_info_describes_markdown(frontend_factory):
    fe = frontend_factory()
    reply = fe.reply(fe.kc.kernel_info())
    assert reply["language_info"]["name"] == "markdown"
    assert reply["implementation"] == "rienda"
    assert "debugger" not in reply["supported_features"]  # no Python debugger for a Markdown kernel (kernel.json)


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
    words = " ".join(f"w{i}" for i in range(40))
    write_script(work, [{"text": words, "chunk_delay_ms": 10}])
    fe = frontend_factory()
    _, messages = fe.run("talk", allow_stdin=True)
    shown = displays(messages, "message")
    assert len({m["content"]["transient"]["display_id"] for m in shown}) == 1
    assert [m["msg_type"] for m in shown][1:] == ["update_display_data"] * (len(shown) - 1)
    partial = [m["content"]["data"]["text/markdown"] for m in shown[:-1]]
    assert partial and all(text.endswith(" ▍") for text in partial)
    grown = [text.removesuffix(" ▍") for text in partial]
    assert all(words.startswith(text) for text in grown)
    assert all(len(a) < len(b) for a, b in zip(grown, grown[1:]))  # each update shows more
    assert shown[-1]["content"]["data"]["text/markdown"] == words  # the end: all of it, no cursor


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


LOGGER = """module.exports = { description: "Logs a lot.", parameters: { type: "object" },
  execute(ctx) {
    for (let i = 1; i <= 400; i++) ctx.log("line " + i);
    ctx.log("LAST");
    ctx.system.exec("while [ ! -e release ]; do sleep 0.02; done");
    return "logged";
  } };"""


def test_a_flood_of_log_lines_folds_with_the_last_lines_in_view(frontend_factory, home):
    agent_home, work = home
    write_extension(agent_home, "tools", "logger", LOGGER)
    write_agent(agent_home, "logger", tools=["logger"])
    write_script(work, call_script("logger"))
    fe = frontend_factory()
    fe.run("%rienda use logger")
    msg_id = fe.submit("go", allow_stdin=True)
    live = fe.collect(msg_id, until=lambda m: m in displays([m], "log") and "LAST" in str(m["content"]))
    assert "[tool:logger] line 12\n" in streams(live) and "line 13" not in streams(live)  # the first lines as they are
    (work / "release").touch()
    rest = fe.collect(msg_id)
    final = displays(live + rest, "log")[-1]["content"]["data"]
    assert final["text/plain"].splitlines()[0] == "… 377 more lines"  # 401 lines: 12 above, 12 in view
    assert final["text/plain"].splitlines()[-1] == "[tool:logger] LAST"
    assert "<details><summary>377 more lines</summary>" in final["text/html"]
    assert "line 13\n" in final["text/html"] and "line 390" in final["text/html"]


def test_a_batch_run_gets_each_display_once_final(frontend_factory, home):
    """nbclient, nbconvert, nbval (allow_stdin false): no live status line, no partial text:
    the stored notebook holds the final answer, then the line naming the session (as
    ``rienda run`` ends)."""
    _, work = home
    write_script(work, [{"text": " ".join(f"w{i}" for i in range(40)), "chunk_delay_ms": 5}])
    fe = frontend_factory()
    _, messages = fe.run("talk", allow_stdin=False)
    assert not [m for m in messages if m["msg_type"] == "update_display_data"]
    assert texts(messages)[:-1] == [" ".join(f"w{i}" for i in range(40))]
    assert re.fullmatch(r"session \S+ · usage: none reported by the model \(1 model turn\)", texts(messages)[-1])


def test_queued_cells_run_in_order_each_with_its_own_output(frontend_factory, home):
    _, work = home
    write_script(work, [{"text": "one", "chunk_delay_ms": 30}, {"text": "two"}, {"text": "three"}])
    fe = frontend_factory()
    ids = [fe.submit(prompt) for prompt in ("first", "second", "third")]
    outputs = [texts(fe.collect(msg_id))[:-1] for msg_id in ids]  # each: its answer, then its session's line
    replies = [fe.reply(msg_id) for msg_id in ids]
    assert [r["status"] for r in replies] == ["ok"] * 3
    assert [r["execution_count"] for r in replies] == [1, 2, 3]
    assert outputs == [["one"], ["two"], ["three"]]


def test_a_failed_run_is_a_jupyter_error_without_a_python_traceback(frontend_factory, home):
    _, work = home
    write_script(work, [])
    fe = frontend_factory()
    reply, messages = fe.run("hello")
    assert reply["status"] == "error" and reply["ename"] == "RiendaError"
    assert "is exhausted" in reply["evalue"]
    assert reply["traceback"] == [f"\x1b[0;31mRiendaError\x1b[0m: {reply['evalue']}"]
    assert [m["content"]["ename"] for m in messages if m["msg_type"] == "error"] == ["RiendaError"]


@pytest.mark.parametrize("state", ["stream", "tool"])
def test_interrupt_stops_the_turn_keeps_the_session_and_the_next_cell_works(frontend_factory, home, state):
    agent_home, work = home
    write_extension(agent_home, "tools", "slow", SLOW)
    write_extension(agent_home, "hooks", "audit", 'module.exports = { afterRun(ctx, e) { ctx.log("afterRun " + e.reason); } };')
    write_agent(agent_home, "agent", tools=["slow"], hooks=["audit"])
    first = {"tool": call_script("slow")[0], "stream": {"text": " ".join(["word"] * 400), "chunk_delay_ms": 20}}[state]
    write_script(work, [first, {"text": "after the interrupt"}, {"text": "next cell"}])
    fe = frontend_factory()
    fe.run("%rienda use agent")
    msg_id = fe.submit("go", allow_stdin=True)
    marker = {"tool": lambda m: m["msg_type"] == "stream" and "exec-started" in m["content"]["text"],
              "stream": lambda m: m["msg_type"] == "update_display_data" and "word word word" in str(m["content"])}[state]
    seen = fe.collect(msg_id, until=marker)
    fe.km.interrupt_kernel()
    messages = fe.collect(msg_id, timeout=30)
    reply = fe.reply(msg_id)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    assert reply["traceback"] == [f"\x1b[0;31mKeyboardInterrupt\x1b[0m: {reply['evalue']}"]
    assert reply["evalue"].startswith("the turn was interrupted; the session kept what was produced")
    assert "afterRun interrupted" in streams(messages)
    errors = [m for m in messages if m["msg_type"] == "error"]
    assert errors and errors[0]["content"]["ename"] == "KeyboardInterrupt"
    if state == "stream":  # the answer ends as it stood, without the streaming cursor
        last = displays(seen + messages, "message")[-1]["content"]["data"]["text/markdown"]
        assert last.startswith("word word") and not last.endswith("▍")
    session = next((agent_home / "sessions").glob("*.jsonl")).read_text()
    assert '"reason": "interrupted"' in session
    reply, messages = fe.run("next")
    assert reply["status"] == "ok"


def test_silent_requests_are_not_prompts(frontend_factory, home):
    """VS Code sends probes and startup code with ``silent: true`` to any kernel."""
    agent_home, work = home
    write_script(work, [{"text": "the first real answer"}])
    fe = frontend_factory()
    msg_id = fe.submit("import sys; print(sys.version)", silent=True)
    reply = fe.reply(msg_id)
    assert reply["status"] == "ok"
    assert [m["msg_type"] for m in fe.collect(msg_id)] == ["status", "status"]
    assert not (agent_home / "sessions").exists()
    _, messages = fe.run("hello")
    assert texts(messages)[:-1] == ["the first real answer"]


def test_rienda_commands_are_the_cells_result(frontend_factory, home):
    agent_home, work = home
    write_agent(agent_home, "helper")
    fe = frontend_factory()
    reply, messages = fe.run("%rienda agents")
    assert reply["status"] == "ok"
    results = [m for m in messages if m["msg_type"] == "execute_result"]
    assert len(results) == 1 and results[0]["content"]["execution_count"] == reply["execution_count"]
    assert "helper" in results[0]["content"]["data"]["text/plain"]
    reply, messages = fe.run("%rienda use nobody")
    assert reply["status"] == "error" and reply["ename"] == "UsageError"
    assert not any("Traceback" in line for line in reply["traceback"])
    reply, _ = fe.run("%rienda frobnicate")
    assert reply["status"] == "error" and "unknown command" in reply["evalue"]
    reply, messages = fe.run("%rienda help")
    assert "use AGENT" in " ".join(texts(messages))


def test_rienda_ask_and_the_help_pager(frontend_factory, home):
    _, work = home
    write_script(work, [{"text": "Asked."}])
    fe = frontend_factory()
    _, messages = fe.run("%rienda ask What is this?")
    assert texts(messages)[:-1] == ["Asked."] and texts(messages)[-1].startswith("session ")
    reply, _ = fe.run("%rienda?")
    assert [p["source"] for p in reply["payload"]] == ["page"]
    assert "%rienda use AGENT" in reply["payload"][0]["data"]["text/plain"]
    reply, _ = fe.run("%rienda use?")
    assert reply["payload"][0]["data"]["text/plain"].startswith("%rienda use AGENT  Switch to AGENT")


TOOL_CELL = """%%rienda_tool shout
module.exports = { description: "Shouts.", parameters: { type: "object", properties: { text: { type: "string" } } },
  execute: (ctx, a) => a.text.toUpperCase() };"""


def test_tool_and_hook_cells_save_and_load_and_are_never_prompts(frontend_factory, home):
    agent_home, work = home
    write_script(work, [{"text": "should never be used"}])
    fe = frontend_factory()
    reply, messages = fe.run(TOOL_CELL)
    assert reply["status"] == "ok"
    assert streams(messages, "stdout") == "loaded tool shout: Shouts. (text)\n"
    assert (agent_home / "tools" / "shout" / "index.js").read_text().startswith("module.exports")
    reply, messages = fe.run("%%rienda_hook guard\nmodule.exports = { beforeToolExec(ctx, call) {} };")
    assert reply["status"] == "ok"
    assert "did you mean 'beforeToolExecute'?" in streams(messages, "stderr")
    for cell in ("%%rienda_tool\nmodule.exports = {};", "%load_ext rienda_kernel", "%%time\nhello"):
        reply, messages = fe.run(cell)
        assert reply["status"] == "error" and reply["ename"] == "UsageError", cell
        assert len(reply["traceback"]) == 1
    assert not (agent_home / "sessions").exists()  # no cell became a model turn


def test_completion_and_inspection_of_commands_and_agents(frontend_factory, home):
    agent_home, _ = home
    write_agent(agent_home, "helper")
    fe = frontend_factory()
    reply = fe.reply(fe.kc.complete("%rienda us", 10))
    assert "use" in reply["matches"]
    reply = fe.reply(fe.kc.complete("%rienda use he", 14))
    assert reply["matches"] == ["helper"] and reply["cursor_start"] == 12
    reply = fe.reply(fe.kc.inspect("%rienda use helper", 15))
    assert reply["found"] and reply["data"]["text/plain"].startswith("agent helper: test\nmodel: scripted/script.yaml")
    reply = fe.reply(fe.kc.inspect("%rienda resume", 10))
    assert reply["found"] and "Continue the saved session" in reply["data"]["text/plain"]
    assert not fe.reply(fe.kc.inspect("Count the words", 3))["found"]


def test_is_complete_lets_jupyter_console_submit(frontend_factory):
    fe = frontend_factory(Console)
    assert fe.reply(fe.kc.is_complete("Count the words in notes.txt"))["status"] == "complete"


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
    shown = "\n".join(m["content"]["data"].get("text/plain", "") for m in messages if m["msg_type"] == "display_data")
    assert '  ✎ hook https rewrote the call\'s arguments: url "http://a.org" → "https://a.org"' in shown
    assert "  ✋ hook deny refused the call: not that one" in shown
    thrown = "  ⚠ hook broken threw in afterToolExecute and was skipped: Error: oops (at "
    assert shown.count(thrown) == 1, shown  # under the result of the call that ran (a refused one has no afterToolExecute)
    assert "hooks/broken/index.js:1:" in shown.split(thrown)[1].splitlines()[0]
    markdown = "\n".join(m["content"]["data"].get("text/markdown", "") for m in messages
                         if m["msg_type"] == "display_data")
    assert '- ✎ hook https rewrote the call\'s arguments: url "http://a.org" → "https://a.org"' in markdown


def test_a_live_cell_ends_with_the_tokens_the_provider_reported(frontend_factory, home):
    _, work = home
    write_script(work, [{"text": "Let me read.", "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}],
                         "usage": {"input_tokens": 1200, "output_tokens": 30}},
                        {"text": "Four.", "usage": {"input_tokens": 1300, "output_tokens": 5}}])
    (work / "notes.txt").write_text("one two three four")
    fe = frontend_factory()
    reply, messages = fe.run("count", allow_stdin=True)
    assert reply["status"] == "ok"
    status = displays(messages, "status")
    assert re.match(r"session \S+ · tokens: 2,500 in · 35 out over 2 model turns · ",
                    status[-1]["content"]["data"]["text/plain"])


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
    fe.disconnect()
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
    fe.km.interrupt_kernel()  # the second interrupt stops afterRun
    fe.collect(msg_id, timeout=30)
    reply = fe.reply(msg_id)
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


def test_every_hook_action_and_a_readable_result_show_in_the_cell(frontend_factory, home):
    """The walk-through home (tests/helpers/hook_walk.py): each kind of hook action, as the
    cell shows it, in text/plain (what nbconvert and a console keep) and in Markdown."""
    agent_home, work = home
    walk_home(agent_home, work)
    fe = frontend_factory()
    fe.run("%rienda use walk")
    reply, messages = fe.run("go")
    assert reply["status"] == "ok"
    plain = [m["content"]["data"].get("text/plain", "") for m in messages if m["msg_type"] == "display_data"]
    shown = "\n".join(plain)
    assert 'tool shell {"command": "rm -rf victim"}\n  ✋ hook guard refused the call: no rm -rf here' in shown
    assert ('tool shell {"command": "ls -1 nothing-here"}\n'
            """  ✎ hook tidy rewrote the call's arguments: command "ls" → "ls -1 nothing-here\"""") in shown
    result = next(text for text in plain if text.startswith("← shell: {"))
    assert result.splitlines()[1:3] == ['  "items": [', "    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, "
                                                     "17, 18, 19, 20,"]
    assert "  ✎ hook redact rewrote the result: text 153 → 148 characters" in result
    assert "⚠ hook thrower threw in afterToolExecute and was skipped: TypeError" in result
    assert THROW_AT in result
    assert plain.count("✎ hook brief rewrote the model request: system 13 → 23 characters") == 4
    assert "✎ hook brief rewrote the model's answer: text 4 → 4 characters" in plain
    markdown = "\n".join(m["content"]["data"].get("text/markdown", "") for m in messages
                         if m["msg_type"] == "display_data")
    assert "<sub>✎ hook brief rewrote the model's answer: text 4 → 4 characters</sub>" in markdown
    assert "DONE" in markdown and (work / "victim").is_dir()


def test_a_live_cell_ends_with_how_full_the_models_window_is(frontend_factory, home):
    """The agent's options give the scripted model a window of 2,000 tokens; the last turn
    reports 1,300 input tokens: the status line ends as the tokens and the fill."""
    agent_home, work = home
    write_agent_file(agent_home, "small", "---\ndescription: d\nmodel: scripted/script.yaml\ntools: [read]\n"
                                          "options: {context_window: 2000}\n---\nBe brief.\n")
    write_script(work, [{"text": "Let me read.", "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}],
                         "usage": {"input_tokens": 1200, "output_tokens": 30}},
                        {"text": "Four.", "usage": {"input_tokens": 1300, "output_tokens": 5}}])
    (work / "notes.txt").write_text("one two three four")
    fe = frontend_factory()
    fe.run("%rienda use small")
    reply, messages = fe.run("count", allow_stdin=True)
    assert reply["status"] == "ok"
    last = displays(messages, "status")[-1]["content"]["data"]["text/plain"]
    assert re.match(r"session \S+ · tokens: 2,500 in · 35 out over 2 model turns · ", last)
    assert last.endswith(" s · context 65 % of 2,000")
