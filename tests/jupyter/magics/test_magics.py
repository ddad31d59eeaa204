"""The %rienda magics in a real python3 ipykernel (through jupyter_client) and in IPython."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ...helpers import terminal_ipython
from ...helpers.extensions import PUBLISH, SLOW, WORD_COUNT
from ...helpers.frontend import (
    WIDGET_VIEW,
    Console,
    JupyterLab,
    VSCode,
    buttons,
    outputs,
    records,
    streams,
    texts,
    value_of,
)
from ...helpers.homes import call_script, write_agent, write_extension, write_script


def test_a_prompt_with_variables_and_the_result_object(python_kernel):
    home, work, start = python_kernel
    write_extension(home, "tools", "word-count", WORD_COUNT)
    write_agent(home, "counter", tools=["word-count"])
    (work / "notes.txt").write_text("one two three")
    write_script(work, call_script("word-count", {"path": "notes.txt"}, then="It has 3 words."))
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


def test_the_cell_magic_takes_the_body_as_the_prompt_and_its_agent_is_for_that_cell(python_kernel):
    home, work, start = python_kernel
    write_agent(home, "writer")
    write_script(work, [{"text": "A haiku."}, {"text": "Default here."}, {"text": "Another haiku."}])
    fe = start()
    outputs(fe, "topic = 'autumn'")
    messages = outputs(fe, "%%rienda --agent writer\nWrite a haiku about {topic}.")
    assert any("A haiku." in t for t in texts(messages))
    outputs(fe, "r = %rienda ask And you?")  # the notebook's current agent is still the default one
    outputs(fe, "%%rienda --agent writer\nAnother one.")
    outputs(fe, "s = _")  # the cell's TurnResult
    sessions = {p.stem: p.read_text() for p in (home / "sessions").glob("*.jsonl")}
    assert len(sessions) == 2
    writer = value_of(fe, "s.session_id")
    assert '"agent": "writer"' in sessions[writer] and sessions[writer].count('"role": "user"') == 2
    default = value_of(fe, "r.session_id")
    assert '"agent": "default"' in sessions[default] and "And you?" in sessions[default]
    reply, _ = fe.run("%%rienda --agent nobody\nhello")
    assert reply["status"] == "error" and reply["ename"] == "UsageError"


def test_a_failed_turn_is_an_error_batch_runners_see_in_one_line(python_kernel):
    home, work, start = python_kernel
    write_script(work, [])  # the script is exhausted at once
    fe = start(Console)
    reply, messages = fe.run("%rienda ask hello", allow_stdin=False)
    assert reply["status"] == "error" and reply["ename"] == "TurnFailed"
    [error] = [m["content"] for m in messages if m["msg_type"] == "error"]
    assert len(error["traceback"]) == 1 and error["traceback"][0].startswith("\x1b[0;31mRiendaError\x1b[0m: the turn failed:")
    assert "is exhausted" in error["evalue"]


def test_tab_completes_commands_agents_and_options_in_a_python_kernel(python_kernel):
    home, _, start = python_kernel
    write_agent(home, "counter")
    fe = start(Console)

    def complete(code):
        reply = fe.reply(fe.kc.complete(code, len(code)))
        return reply["matches"], code[reply["cursor_start"]:reply["cursor_end"]]

    assert complete("%rienda us") == (["use"], "us")
    assert complete("%rienda use co") == (["counter"], "co")
    assert complete("r = %rienda use c")[0] == ["counter"]
    matches, word = complete("%rienda confirm a")
    assert (sorted(matches), word) == (["allow", "ask"], "a")
    assert complete("%%rienda --agent c\nWrite it.".split("\n")[0]) == (["counter"], "c")
    assert complete("%%rienda --mo") == (["--model"], "--mo")
    assert "counter" not in complete("counter_value = 1; count")[0]  # plain Python is left to IPython


@pytest.mark.parametrize("kind", [JupyterLab, VSCode])
@pytest.mark.parametrize(("choice", "expected"), [("Allow", "pushed"), ("Deny", "cancelled")])
def test_confirm_shows_buttons_after_load_ext_and_a_click_answers_while_the_magic_runs(python_kernel, kind, choice,
                                                                                      expected):
    home, work, start = python_kernel
    write_extension(home, "tools", "publish", PUBLISH)
    write_agent(home, "pub", tools=["publish"])
    write_script(work, call_script("publish"))
    fe = start(kind)
    if kind is JupyterLab:
        assert fe.widgets.control is None  # the page connected before %load_ext: the control comm was refused
    outputs(fe, "%rienda use pub")
    msg_id = fe.submit("r = %rienda ask publish", allow_stdin=True)
    seen = fe.collect(msg_id, until=lambda m: m["msg_type"] == "display_data" and WIDGET_VIEW in m["content"]["data"])
    found = buttons(seen)
    fe.click(found[choice])
    rest = fe.collect(msg_id)
    assert fe.reply(msg_id)["status"] == "ok"
    assert fe.no_input_request()
    assert value_of(fe, "r.tool_calls[0].text") == expected
    [record] = records(rest)
    assert record["text/plain"].startswith(f"{'✓' if choice == 'Allow' else '✗'} Publish: ")
    assert "(answered with the buttons)" in record["text/plain"]


def test_jupyter_console_gets_the_y_n_prompt_in_a_python_kernel(python_kernel):
    home, work, start = python_kernel
    write_extension(home, "tools", "publish", PUBLISH)
    write_agent(home, "pub", tools=["publish"])
    write_script(work, call_script("publish"))
    fe = start(Console)
    outputs(fe, "%rienda use pub")
    msg_id = fe.submit("r = %rienda ask publish", allow_stdin=True)
    request = fe.input_request()
    assert request["content"]["prompt"].endswith("Allow? [y = once, s = for this session, N = no] ")
    fe.answer("y")
    messages = fe.collect(msg_id)
    assert fe.reply(msg_id)["status"] == "ok"
    assert [r["text/plain"].split(";")[0] for r in records(messages)] == ["✓ Publish: allowed (answered with y/N)"]
    assert value_of(fe, "r.tool_calls[0].text") == "pushed"


def test_load_ext_prints_one_line(python_kernel):
    home, _, start = python_kernel
    fe = start(Console)
    assert streams(fe.load_messages) == (f"Rienda: home {home}, agent default (model scripted/script.yaml); "
                                         "%rienda help lists the commands.\n")


def test_load_ext_with_a_bad_setting_says_so_in_one_line(python_kernel):
    _, _, start = python_kernel
    fe = start(Console, RIENDA_CONFIRM="sometimes")
    assert streams(fe.load_messages, "stderr") == (
        "Rienda magics loaded, but: $RIENDA_CONFIRM must be one of ask, allow, deny, got 'sometimes'\n")
    reply, _ = fe.run("%rienda agents")
    assert reply["status"] == "error" and reply["ename"] == "UsageError" and "RIENDA_CONFIRM" in reply["evalue"]


def test_live_log_lines_arrive_before_the_cell_finishes(python_kernel):
    home, work, start = python_kernel
    write_extension(home, "tools", "slow", SLOW)
    write_agent(home, "waiter", tools=["slow"])
    write_script(work, call_script("slow"))
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
    write_script(work, call_script("slow"))
    fe = start()
    outputs(fe, "%rienda use waiter")
    msg_id = fe.submit("%rienda ask go")
    fe.collect(msg_id, until=lambda m: m["msg_type"] == "stream" and "exec-started" in m["content"]["text"])
    fe.km.interrupt_kernel()
    messages = fe.collect(msg_id, timeout=30)
    reply = fe.reply(msg_id)
    assert reply["status"] == "error" and reply["ename"] == "TurnInterrupted"
    [error] = [m["content"] for m in messages if m["msg_type"] == "error"]
    assert error["traceback"] == ["\x1b[0;31mKeyboardInterrupt\x1b[0m: the turn was interrupted; the session kept "
                                  f"what was produced ({error['evalue'].rsplit('(', 1)[1]}"]
    assert "afterRun interrupted" in streams(messages)
    assert value_of(fe, "1 + 1") == 2


def test_rienda_hook_cell_shows_a_broken_hooks_diagnostic_and_loads_a_good_one(python_kernel):
    home, work, start = python_kernel
    fe = start()
    messages = outputs(fe, "%%rienda_hook guard\nmodule.exports = { beforeToolExec(ctx, call) {} };")
    text = streams(messages, "stderr")
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
    assert "%rienda [subcommand] [args ...]" in pager and "ask [--error] PROMPT" in pager and "use AGENT" in pager


def in_terminal_ipython(tmp_path, magics: list[str], answers: str) -> subprocess.CompletedProcess:
    """A terminal IPython (no kernel) that loads the magics, uses agent ``pub`` (the
    publish tool, which asks first) and runs each of ``magics``; ``answers`` on stdin."""
    home, work = tmp_path / "home", tmp_path / "work"
    (home / "agents").mkdir(parents=True)
    work.mkdir()
    write_extension(home, "tools", "publish", PUBLISH)
    write_agent(home, "pub", tools=["publish"])
    write_script(work, call_script("publish"))
    program = terminal_ipython.program('ip.run_line_magic("rienda", "use pub")', *magics)
    return subprocess.run([sys.executable, "-c", program], cwd=work, input=answers, capture_output=True, text=True,
                          timeout=60, env=terminal_ipython.environment(tmp_path, home))


def test_terminal_ipython_confirms_on_stdin(tmp_path):
    done = in_terminal_ipython(tmp_path, ['r = ip.run_line_magic("rienda", "ask publish it")',
                                          'print("RESULT", r.tool_calls[0].text, r.reason)'], "y\n")
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


def test_terminal_ipython_says_how_the_magics_allow_a_confirm_the_policy_refused(tmp_path):
    done = in_terminal_ipython(tmp_path, ['ip.run_line_magic("rienda", "confirm deny")',
                                          'r = ip.run_line_magic("rienda", "ask publish it")',
                                          'print("RESULT", r.reason)'], "")
    assert "RESULT end_turn" in done.stdout, done.stderr
    assert "confirm 'Publish': denied (auto-deny); to allow it: %rienda confirm allow\n" in done.stderr


def test_the_ask_result_carries_the_usage_and_the_fill(python_kernel):
    home, work, start = python_kernel
    (home / "agents" / "small.md").write_text("---\ndescription: d\nmodel: scripted/script.yaml\n"
                                              "options: {context_window: 4000}\n---\nBe brief.\n")
    write_script(work, [{"text": "Hi.", "usage": {"input_tokens": 1000, "output_tokens": 10}}])
    fe = start()
    outputs(fe, "%rienda use small")
    outputs(fe, "r = %rienda ask hello")
    assert value_of(fe, "(r.context.tokens, r.context.window, r.context.percent, r.context.line())") == (
        1010, 4000, 25, "context 25 % of 4,000")
    assert value_of(fe, "r.messages[-1].usage.to_dict()") == {"input_tokens": 1000, "output_tokens": 10}
    assert value_of(fe, "r.usage.to_dict()") == {"input_tokens": 1000, "output_tokens": 10}  # the turn's, summed
