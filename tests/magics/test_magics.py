"""The %rienda magics in a real python3 ipykernel (through jupyter_client) and in IPython."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from ..frontend import PUBLISH, SLOW, Frontend, buttons, streams, texts, write_agent, write_extension, write_script


WORD_COUNT = """
module.exports = {
  description: "Counts words.",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  execute: function (ctx, args) { return String(ctx.file.read(args.path).trim().split(/\\s+/).length); },
};
"""


def call(tool, arguments=None, then="Finished."):
    return [{"text": "Calling.", "tool_calls": [{"name": tool, "arguments": arguments or {}}]}, {"text": then}]


@pytest.fixture
def python_kernel(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    (home / "agents").mkdir(parents=True)
    (home / "config.yaml").write_text("default_model: scripted/script.yaml\n")  # the built-in default agent's
    work.mkdir()
    started = []

    def start(**env):
        frontend = Frontend(home, work, env, kernel_name="python3")
        started.append(frontend)
        reply, messages = frontend.run("%load_ext rienda_kernel")
        assert reply["status"] == "ok", reply
        return frontend

    yield home, work, start
    for frontend in started:
        frontend.close()


def outputs(frontend, code, **kwargs):
    reply, messages = frontend.run(code, **kwargs)
    assert reply["status"] == "ok", reply
    return messages


def value_of(frontend, expression):
    messages = outputs(frontend, f"print(repr({expression}))")
    return eval(streams(messages))  # the kernel printed a Python literal


def test_a_prompt_with_variables_and_the_result_object(python_kernel):
    home, work, start = python_kernel
    write_extension(home, "tools", "word-count", WORD_COUNT)
    write_agent(home, "counter", tools=["word-count"])
    (work / "notes.txt").write_text("one two three")
    write_script(work, call("word-count", {"path": "notes.txt"}, then="It has 3 words."))
    fe = start()
    outputs(fe, "%rienda use counter")
    outputs(fe, "name = 'notes.txt'")
    messages = outputs(fe, "r = %rienda ask How many words are in {name}? {{literally}}")
    assert any("It has 3 words." in t for t in texts(messages))
    assert value_of(fe, "r.text") == "It has 3 words."
    assert value_of(fe, "r.reason") == "end_turn"
    assert value_of(fe, "[(c.name, c.arguments, c.text) for c in r.tool_calls]") == [
        ("word-count", {"path": "notes.txt"}, "3")]
    assert value_of(fe, "r.messages[0].text") == "How many words are in notes.txt? {literally}"
    session_file = home / "sessions" / f"{value_of(fe, 'r.session_id')}.jsonl"
    assert session_file.exists()
    shown = outputs(fe, "r")
    assert [m["content"]["data"]["text/markdown"] for m in shown if m["msg_type"] == "display_data"] == [
        "It has 3 words."]


def test_a_missing_variable_is_a_clear_error_before_any_model_call(python_kernel):
    home, work, start = python_kernel
    write_script(work, [{"text": "should not be used"}])
    fe = start()
    reply, messages = fe.run("%rienda ask What is in {nowhere}?")
    assert reply["status"] == "error" and reply["ename"] == "UsageError"
    assert "{nowhere}, which is not defined" in reply["evalue"]
    assert not (home / "sessions").exists()


def test_the_cell_magic_takes_the_body_as_the_prompt(python_kernel):
    home, work, start = python_kernel
    write_agent(home, "writer")
    write_script(work, [{"text": "A haiku."}])
    fe = start()
    outputs(fe, "topic = 'autumn'")
    messages = outputs(fe, "%%rienda --agent writer\nWrite a haiku about {topic}.")
    assert any("A haiku." in t for t in texts(messages))
    session = next((home / "sessions").glob("*.jsonl")).read_text()
    assert "Write a haiku about autumn." in session and '"agent": "writer"' in session


@pytest.mark.parametrize(("choice", "expected"), [("Allow", "pushed"), ("Deny", "cancelled")])
def test_confirm_is_answered_by_a_click_while_the_magic_runs(python_kernel, choice, expected):
    home, work, start = python_kernel
    write_extension(home, "tools", "publish", PUBLISH)
    write_agent(home, "pub", tools=["publish"])
    write_script(work, call("publish"))
    fe = start()
    fe.announce_widgets()
    outputs(fe, "%rienda use pub")
    msg_id = fe.submit("r = %rienda ask publish", allow_stdin=True)
    seen = fe.collect(msg_id, until=lambda m: "Deny" in buttons([m]))
    found = buttons(seen)
    fe.click(found[choice])
    rest = fe.collect(msg_id)
    assert fe.reply(msg_id)["status"] == "ok"
    assert value_of(fe, "r.tool_calls[0].text") == expected
    updates = [m for m in rest + fe.others if m["msg_type"] == "comm_msg"]
    assert any(m["content"]["data"].get("state", {}).get("disabled") is True for m in updates)


def test_live_log_lines_arrive_before_the_cell_finishes(python_kernel):
    home, work, start = python_kernel
    write_extension(home, "tools", "slow", SLOW)
    write_agent(home, "waiter", tools=["slow"])
    write_script(work, call("slow"))
    fe = start()
    outputs(fe, "%rienda use waiter")
    msg_id = fe.submit("%rienda ask go")
    early = fe.collect(msg_id, until=lambda m: m["msg_type"] == "stream" and "exec-started" in m["content"]["text"])
    assert "[tool:slow] waiting for release" in streams(early)
    (work / "release").touch()
    fe.collect(msg_id)
    assert fe.reply(msg_id)["status"] == "ok"


def test_interrupt_during_a_tool_stops_the_turn_and_the_kernel_goes_on(python_kernel):
    home, work, start = python_kernel
    write_extension(home, "tools", "slow", SLOW)
    write_extension(home, "hooks", "audit", 'module.exports = { afterRun(ctx, e) { ctx.log("afterRun " + e.reason); } };')
    write_agent(home, "waiter", tools=["slow"], hooks=["audit"])
    write_script(work, call("slow"))
    fe = start()
    outputs(fe, "%rienda use waiter")
    msg_id = fe.submit("%rienda ask go")
    fe.collect(msg_id, until=lambda m: m["msg_type"] == "stream" and "exec-started" in m["content"]["text"])
    fe.km.interrupt_kernel()
    messages = fe.collect(msg_id, timeout=30)
    reply = fe.reply(msg_id)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    assert "afterRun interrupted" in streams(messages)
    assert value_of(fe, "1 + 1") == 2


def test_rienda_hook_cell_shows_a_broken_hooks_diagnostic_and_loads_a_good_one(python_kernel):
    home, work, start = python_kernel
    fe = start()
    messages = outputs(fe, "%%rienda_hook guard\nmodule.exports = { beforeToolExec(ctx, call) {} };")
    text = streams(messages)
    assert "'beforeToolExec' is not a hook point" in text and "did you mean 'beforeToolExecute'?" in text
    assert (home / "hooks" / "guard" / "index.js").exists()
    messages = outputs(fe, "%%rienda_hook guard\nmodule.exports = { beforeToolExecute(ctx, call) {} };")
    assert streams(messages).strip() == "loaded hook guard: beforeToolExecute"
    messages = outputs(fe, "%%rienda_tool shout\nmodule.exports = { description: 'Shouts.', "
                           "parameters: { type: 'object', properties: { text: { type: 'string' } } }, "
                           "execute: (ctx, a) => a.text.toUpperCase() };")
    assert streams(messages).strip() == "loaded tool shout: Shouts. (text)"
    reply, _ = fe.run("%%rienda_tool bad name\nx")
    assert reply["status"] == "error" and reply["ename"] == "UsageError"


def test_rienda_home_points_the_notebook_at_its_own_home(python_kernel, tmp_path):
    home, work, start = python_kernel
    local = tmp_path / "notebook-home"
    fe = start()
    outputs(fe, f"%rienda home {local}")
    outputs(fe, "%%rienda_tool local-tool\nmodule.exports = { description: 'Local.', parameters: { type: 'object' }, "
                "execute: () => 'x' };")
    assert (local / "tools" / "local-tool" / "index.js").exists()
    assert not (home / "tools").exists()
    messages = outputs(fe, "%rienda tools")
    assert any("local-tool" in t for t in texts(messages))


def test_bad_usage_is_a_usage_error_without_a_traceback(python_kernel):
    _, _, start = python_kernel
    fe = start()
    reply, _ = fe.run("%rienda frobnicate")
    assert reply["status"] == "error" and reply["ename"] == "UsageError"
    assert "unknown command 'frobnicate'" in reply["evalue"]
    reply, _ = fe.run("%rienda?")  # IPython sends help as a pager payload of the reply
    pager = json.dumps(reply["payload"])
    assert "%rienda [subcommand] [args ...]" in pager and "ask PROMPT" in pager and "use AGENT" in pager


def test_terminal_ipython_confirms_on_stdin(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    (home / "agents").mkdir(parents=True)
    work.mkdir()
    write_extension(home, "tools", "publish", PUBLISH)
    write_agent(home, "pub", tools=["publish"])
    write_script(work, call("publish"))
    program = textwrap.dedent("""
        from IPython.testing.globalipapp import start_ipython
        ip = start_ipython()
        ip.run_line_magic("load_ext", "rienda_kernel")
        ip.run_line_magic("rienda", "use pub")
        r = ip.run_line_magic("rienda", "ask publish it")
        print("RESULT", r.tool_calls[0].text, r.reason)
    """)
    done = subprocess.run([sys.executable, "-c", program], cwd=work, input="y\n", capture_output=True, text=True,
                          timeout=60, env={**os.environ, "RIENDA_HOME": str(home)})
    assert "RESULT pushed end_turn" in done.stdout, done.stderr
    assert "Allow? [y = once, s = for this session, N = no]" in done.stderr
    assert "confirm 'Publish': allowed (user)" in done.stderr


def test_a_question_mark_at_the_end_is_part_of_the_prompt_not_help(python_kernel):
    home, work, start = python_kernel
    write_script(work, [{"text": "Forty-two."}])
    fe = start()
    outputs(fe, "r = %rienda ask What is the answer?")
    assert value_of(fe, "r.messages[0].text") == "What is the answer?"
    assert value_of(fe, "r.text") == "Forty-two."
