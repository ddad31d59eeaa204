"""The agent in a Python notebook: the ``python`` and ``variables`` tools in the user's own
namespace, the last error as context, all gated by hooks (a real python3 ipykernel through
jupyter_client, with ``%load_ext rienda_kernel``)."""

from __future__ import annotations

import re
from ...helpers.extensions import CAREFUL
from ...helpers.frontend import outputs, streams, texts, value_of
from ...helpers.homes import python_call, session_lines, write_agent, write_extension, write_script


def session_lines_of_r(home, fe):
    """The records of the session of the kernel's result ``r``."""
    return session_lines(home, value_of(fe, "r.session_id"))


def test_python_runs_in_the_users_namespace_and_returns_what_a_person_would_have_seen(python_kernel):
    home, work, start = python_kernel
    write_agent(home, "analyst", tools=["python", "variables"])
    write_script(work, [
        {"text": "", "tool_calls": [{"name": "variables", "arguments": {}}]},
        {"text": "", "tool_calls": [python_call("print('summing')\ntotal = sum(sales)\ntotal")]},
        {"text": "", "tool_calls": [python_call("def ratio(d):\n    return d['north'] / d['south']\nratio({'north': 1})")]},
        {"text": "The total is 12."},
    ])
    fe = start()
    outputs(fe, "%rienda use analyst")
    outputs(fe, "sales = [3, 4, 5]\nregion = 'north'")
    messages = outputs(fe, "r = %rienda ask What is the total?")
    listing, printed, failed = value_of(fe, "[(c.name, c.text, c.is_error) for c in r.tool_calls]")
    assert listing == ("variables", "region: str = 'north'\nsales: list = 3 items", False)
    assert printed == ("python", "summing\n12", False)
    name, text, is_error = failed
    assert is_error and text.startswith("Traceback (most recent call last):") and text.endswith("KeyError: 'south'")
    assert "return d['north'] / d['south']" in text
    assert value_of(fe, "total") == 12  # the variable the code created is the user's now
    assert "summing" in streams(messages, "stdout")  # what the code printed went to the cell, live
    assert "12" not in texts(messages)  # a plain value is in the result; the cell is not given it twice
    needle = "'total = ' + 'sum(sales)'"  # the code, without writing it into this cell
    assert value_of(fe, f"any({needle} in cell for cell in In)") is False  # not in the notebook's history


def test_variables_describes_one_variable_in_full_and_summarizes_large_ones(python_kernel):
    home, work, start = python_kernel
    write_agent(home, "analyst", tools=["variables"])
    write_script(work, [{"text": "", "tool_calls": [{"name": "variables", "arguments": {}},
                                                    {"name": "variables", "arguments": {"name": "rows"}}]},
                        {"text": "Seen."}])
    fe = start()
    outputs(fe, "%rienda use analyst")
    outputs(fe, "import json\nrows = list(range(100_000))\n_private = 1")
    outputs(fe, "r = %rienda ask Look.")
    listing, one = value_of(fe, "[c.text for c in r.tool_calls]")
    assert listing == "rows: list = 100,000 items"  # no modules, no private names, no IPython internals
    assert one.startswith("rows: list\n100,000 items: [0, 1, 2") and len(one) < 300


def test_interrupt_stops_a_loop_in_the_code_and_the_kernel_goes_on(python_kernel):
    home, work, start = python_kernel
    write_agent(home, "analyst", tools=["python"])
    write_script(work, [{"text": "", "tool_calls": [python_call("spins = 0\nwhile True:\n    spins += 1\n"
                                                            "    if spins == 1000:\n        print('looping', flush=True)")]},
                        {"text": "never"}])
    fe = start()
    outputs(fe, "%rienda use analyst")
    msg_id = fe.submit("%rienda ask Spin.")
    fe.collect(msg_id, until=lambda m: m["msg_type"] == "stream" and "looping" in m["content"]["text"])
    fe.km.interrupt_kernel()
    fe.collect(msg_id, timeout=30)
    reply = fe.reply(msg_id)
    assert reply["status"] == "error" and reply["ename"] == "TurnInterrupted"
    spins = value_of(fe, "spins")
    assert spins >= 1000 and value_of(fe, "spins") == spins  # the loop is not running any more
    session = sorted((home / "sessions").glob("*.jsonl"))[-1].read_text()
    assert '"reason": "interrupted"' in session


def test_hooks_refuse_and_rewrite_code_and_the_ledger_shows_who_decided(python_kernel):
    home, work, start = python_kernel
    write_extension(home, "hooks", "careful", CAREFUL)
    write_extension(home, "hooks", "rounding", r"""module.exports = { beforeToolExecute(ctx, call) {
      if (call.name === "python" && /\nmean$/.test(call.arguments.code))
        return { arguments: { code: call.arguments.code.replace(/\nmean$/, "\nround(mean, 1)") } };
    } };""")
    write_agent(home, "analyst", tools=["python"], hooks=["careful", "rounding"])
    write_script(work, [
        {"text": "", "tool_calls": [python_call("mean = sum(sales) / len(sales)\nmean"),
                                    python_call("open('report.txt', 'w').write(str(mean))")]},
        {"text": "Done."},
    ])
    fe = start()
    outputs(fe, "%rienda use analyst\n%rienda confirm deny")
    outputs(fe, "sales = [1, 2, 4]")
    outputs(fe, "r = %rienda ask Summarize.")
    calls = value_of(fe, "[(c.arguments['code'], c.text, c.is_error) for c in r.tool_calls]")
    assert calls[0][1:] == ("2.3", False)  # the rewritten code ran
    assert calls[1][2] and "it was not allowed" in calls[1][1]
    assert not (work / "report.txt").exists()
    decisions = [(d["call_id"], d["hook"], d["effect"]) for d in session_lines_of_r(home, fe) if d["type"] == "hook_decision"]
    assert decisions == [("call_1_1", "careful", "none"), ("call_1_1", "rounding", "rewrote"),
                         ("call_1_2", "careful", "refused")]  # the first refusal ends the chain


def test_ask_error_adds_the_last_cells_exception_and_its_lines(python_kernel):
    home, work, start = python_kernel
    write_script(work, [{"text": "The key 'south' is missing."}])
    fe = start()
    reply, _ = fe.run("%rienda ask --error")
    assert reply["status"] == "error" and "no cell has raised an exception" in reply["evalue"]
    reply, _ = fe.run("def ratio(d):\n    return d['north'] / d['south']\nratio({'north': 1})")
    assert reply["status"] == "error"
    outputs(fe, "r = %rienda ask --error")
    prompt = value_of(fe, "r.messages[0].text")
    assert prompt.startswith("Why does this fail, and how do I fix it?\n\nThe last error in my notebook:")
    assert "return d['north'] / d['south']" in prompt and "KeyError: 'south'" in prompt
    assert "interactiveshell.py" not in prompt  # IPython's own frames are left out
    # the cells named as IPython names them (its execution counts), not by their temporary files
    assert re.search(r'File "Cell In\[(\d+)\]", line 3, in <module>\n.*\n  File "Cell In\[\1\]", line 2, in ratio', prompt)
    assert "ipykernel_" not in prompt


def test_a_turn_cannot_be_started_from_the_python_tools_code(python_kernel):
    home, work, start = python_kernel
    write_agent(home, "analyst", tools=["python"])
    write_script(work, [{"text": "", "tool_calls": [python_call("get_ipython().run_line_magic('rienda', 'ask again')")]},
                        {"text": "Done."}])
    fe = start()
    outputs(fe, "%rienda use analyst")
    outputs(fe, "r = %rienda ask Go.")
    [(text, is_error)] = value_of(fe, "[(c.text, c.is_error) for c in r.tool_calls]")
    assert is_error and "a turn is already running in this kernel" in text


def test_the_result_object_holds_no_secret(python_kernel):
    home, work, start = python_kernel
    write_agent(home, "analyst", tools=["shell", "python"])
    write_script(work, [{"text": "", "tool_calls": [{"name": "shell", "arguments": {"command": "echo $DEMO_API_KEY"}},
                                                    python_call("import os\nos.environ['DEMO_API_KEY']")]},
                        {"text": "The key is sk-demo-0123456789abcdef."}])
    fe = start(DEMO_API_KEY="sk-demo-0123456789abcdef")
    outputs(fe, "%rienda use analyst")
    outputs(fe, "r = %rienda ask What is the key?")
    shown = value_of(fe, "repr(r) + repr(r.tool_calls) + repr(r.messages)")
    assert "sk-demo-0123456789abcdef" not in shown
    assert value_of(fe, "[c.text for c in r.tool_calls]") == ["[redacted]\n\nexit code 0", "'[redacted]'"]
    assert value_of(fe, "r.text") == "The key is [redacted]."


def test_a_rich_value_is_displayed_in_the_cell_as_the_code_runs(python_kernel):
    home, work, start = python_kernel
    write_agent(home, "analyst", tools=["python"])
    write_script(work, [{"text": "", "tool_calls": [python_call(
        "class Table:\n    def _repr_html_(self):\n        return '<table><tr><td>rich</td></tr></table>'\n"
        "    def __repr__(self):\n        return 'Table()'\nTable()")]}, {"text": "Shown."}])
    fe = start()
    outputs(fe, "%rienda use analyst")
    messages = outputs(fe, "r = %rienda ask Show it.")
    rich = [m["content"]["data"] for m in messages if m["msg_type"] == "display_data"
            and "text/html" in m["content"]["data"]]
    assert {"text/html": "<table><tr><td>rich</td></tr></table>", "text/plain": "Table()"} in rich
    assert value_of(fe, "r.tool_calls[0].text") == "Table()"
