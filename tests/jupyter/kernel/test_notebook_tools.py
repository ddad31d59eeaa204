"""The notebook tools in the Rienda kernel: its own IPython namespace, kept from cell to
cell, code on the main thread that an interrupt stops (a real kernel, jupyter_client)."""

from __future__ import annotations


from ...helpers.frontend import streams
from ...helpers.homes import only_session_lines, python_call, write_agent, write_script


def tool_texts(home):
    return [record["text"] for record in only_session_lines(home) if record.get("role") == "tool"]


def test_the_agents_variables_last_from_cell_to_cell(frontend_factory, home):
    agent_home, work = home
    write_agent(agent_home, "analyst", tools=["python", "variables"])
    write_script(work, [
        {"text": "", "tool_calls": [python_call("import threading\nrows = [2, 3]\nprint(threading.current_thread().name)")]},
        {"text": "Made rows."},
        {"text": "", "tool_calls": [{"name": "variables", "arguments": {}}, python_call("sum(rows)")]},
        {"text": "Five."},
    ])
    fe = frontend_factory()
    assert fe.run("%rienda use analyst")[0]["status"] == "ok"
    reply, messages = fe.run("Make rows.")
    assert reply["status"] == "ok"
    assert "MainThread" in streams(messages, "stdout")  # the code ran on the kernel's main thread, into this cell
    assert fe.run("Add them up.")[0]["status"] == "ok"
    assert tool_texts(agent_home) == ["MainThread", "rows: list = 2 items", "5"]


def test_interrupt_stops_a_loop_in_the_code_and_the_kernel_goes_on(frontend_factory, home):
    agent_home, work = home
    write_agent(agent_home, "analyst", tools=["python"])
    write_script(work, [
        {"text": "", "tool_calls": [python_call("spins = 0\nwhile True:\n    spins += 1\n"
                                           "    if spins == 1000:\n        print('looping', flush=True)")]},
        {"text": "", "tool_calls": [python_call("spins")]},  # the next turn (the interrupted one asked no more)
        {"text": "Counted."},
    ])
    fe = frontend_factory()
    fe.run("%rienda use analyst")
    msg_id = fe.submit("Spin.")
    fe.collect(msg_id, until=lambda m: m["msg_type"] == "stream" and "looping" in m["content"]["text"])
    fe.km.interrupt_kernel()
    fe.collect(msg_id, timeout=30)
    assert fe.reply(msg_id)["status"] == "error"
    assert fe.run("How far did it get?")[0]["status"] == "ok"
    interrupted, counted = tool_texts(agent_home)
    assert "interrupted" in interrupted.lower()
    assert int(counted) >= 1000


def test_ask_error_says_it_needs_a_python_notebook(frontend_factory):
    fe = frontend_factory()
    reply, _ = fe.run("%rienda ask --error why?")
    assert reply["status"] == "error" and reply["ename"] == "UsageError"
    assert "use it in a Python notebook after %load_ext rienda_kernel" in reply["evalue"]
