"""Sub-agents in a real Rienda kernel through jupyter_client: the child's run nested under
its ``agent`` call (live, then folded with its answer visible), and a confirm the child
raises answered by the buttons in the running cell, titled with the sub-agent's name."""

from __future__ import annotations

import json

import pytest

from ...helpers.frontend import Console, JupyterLab, buttons, records, streams, widget_displays
from ...helpers.trees import (
    ASKING_GUARD,
    SHOWN_BEFORE_ASKING,
    delegate,
    lead_to_asker,
    nested,
    shell,
    tracer,
    write_agent,
    write_hook,
    write_script,
)

def lead_and_cleaner(home, work):
    write_hook(home, "guard", ASKING_GUARD)
    write_agent(home, "lead", tools=("agent",), hooks=("guard",))
    write_agent(home, "cleaner", tools=("shell",))
    write_script(work, "lead", [delegate("cleaner", "Clean up."), {"text": "Lead: the cleaner reported back."}])
    write_script(work, "cleaner", [shell("echo cleaning; rm -rf victim", text="Cleaning now."),
                                   {"text": "Cleaner: finished."}])
    (work / "victim").mkdir()
    (work / "victim" / "keep.txt").write_text("precious")


def until_buttons(m) -> bool:
    return bool(widget_displays([m]))


def test_a_childs_confirm_gets_buttons_in_the_running_cell_and_its_run_is_nested_under_the_call(
        frontend_factory, home):
    agent_home, work = home
    lead_and_cleaner(agent_home, work)
    fe = frontend_factory(JupyterLab)
    fe.run("%rienda use lead")
    msg_id = fe.submit("Clean the workspace.", allow_stdin=True)
    seen = fe.collect(msg_id, until=until_buttons)
    [box] = widget_displays(seen)
    assert box["content"]["data"]["text/plain"] == "? Dangerous command (sub-agent cleaner)\n  echo cleaning; rm -rf victim"
    # before it asks, the child's run is shown, under the agent call, live: its text, the guard's log
    live = nested(seen)[-1]
    assert "sub-agent cleaner" in live["text/plain"] and "running…" in live["text/html"]
    assert "Cleaning now." in live["text/html"]
    assert "[hook:guard.beforeToolExecute] checking echo cleaning; rm -rf victim" in live["text/html"]
    call_shown = next(i for i, m in enumerate(seen) if m["msg_type"] == "display_data"
                      and m["content"]["data"].get("text/plain", "").startswith("tool agent "))
    first_box = next(i for i, m in enumerate(seen) if nested([m]))
    assert call_shown < first_box
    fe.click(buttons(seen)["Deny"])
    rest = fe.collect(msg_id)
    assert fe.reply(msg_id)["status"] == "ok"
    assert (work / "victim" / "keep.txt").exists()
    [record] = records(rest)
    assert record["text/plain"].startswith("✗ Dangerous command (sub-agent cleaner): denied (answered with the buttons)")
    final = nested(rest)[-1]
    assert "<details>" in final["text/html"] and "answer:</b> Cleaner: finished." in final["text/html"]
    assert "✋ hook guard refused the call: refused by the user" in final["text/html"]
    assert "answer: Cleaner: finished." in final["text/plain"]
    # the lead's own answer is the cell's, not the child's
    assert any("Lead: the cleaner reported back." in m["content"]["data"].get("text/plain", "")
               for m in rest if m["msg_type"] in ("display_data", "update_display_data")
               and m["content"]["transient"]["display_id"].startswith("rienda-message-"))


def test_a_batch_run_shows_the_childs_box_once_final_and_the_policy_answers(frontend_factory, home):
    agent_home, work = home
    lead_and_cleaner(agent_home, work)
    fe = frontend_factory(JupyterLab)
    fe.run("%rienda use lead")
    reply, messages = fe.run("Clean the workspace.")  # no stdin: nbclient, nbval, papermill
    assert reply["status"] == "ok"
    shown = nested(messages)
    assert len(shown) == 1 and "<details>" in shown[0]["text/html"]
    assert "default-deny" in shown[0]["text/html"] and (work / "victim").exists()
    assert not widget_displays(messages)


def test_a_secret_in_a_childs_output_is_scrubbed_from_the_nested_box(frontend_factory, home):
    agent_home, work = home
    secret = "sk-live-0123456789abcdef"
    write_agent(agent_home, "lead", tools=("agent",))
    write_agent(agent_home, "leaker", tools=("shell",))
    write_script(work, "lead", [delegate("leaker", "Find the key."), {"text": "ok"}])
    write_script(work, "leaker", [shell("echo key=$OPENAI_API_KEY"), {"text": f"The key is {secret}."}])
    fe = frontend_factory(JupyterLab, OPENAI_API_KEY=secret)
    fe.run("%rienda use lead")
    reply, messages = fe.run("Find it.", allow_stdin=True)
    assert reply["status"] == "ok"
    assert "key=[redacted]" in nested(messages)[-1]["text/html"]
    assert secret not in repr(messages)


def test_interrupting_the_kernel_during_a_grandchilds_command_stops_the_whole_tree(frontend_factory, home):
    agent_home, work = home
    for name in ("top", "mid", "low"):
        write_hook(agent_home, name, tracer(name))
    write_agent(agent_home, "lead", tools=("agent",), hooks=("top",))
    write_agent(agent_home, "middle", tools=("agent",), hooks=("mid",))
    write_agent(agent_home, "bottom", tools=("shell",), hooks=("low",))
    write_script(work, "lead", [delegate("middle", "m"), {"text": "never"}])
    write_script(work, "middle", [delegate("bottom", "b"), {"text": "never"}])
    write_script(work, "bottom", [shell("echo sleeping; exec sleep 60"), {"text": "never"}])
    fe = frontend_factory(JupyterLab)
    fe.run("%rienda use lead")
    msg_id = fe.submit("Go deep.", allow_stdin=True)
    seen = fe.collect(msg_id, until=lambda m: any("sleeping" in shown["text/html"] for shown in nested([m])))
    fe.km.interrupt_kernel()
    rest = fe.collect(msg_id, timeout=60)
    reply = fe.reply(msg_id)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    final = nested(seen + rest)[-1]["text/plain"]
    # innermost first: the grandchild's afterRun (all three hooks), then the child's, then the lead's
    order = [line.strip().split("] ", 1)[1] for line in final.splitlines() if "afterRun" in line]
    assert order == ["top afterRun 2", "mid afterRun 2", "low afterRun 2", "top afterRun 1", "mid afterRun 1"]
    assert "ended: interrupted" in final
    assert "top afterRun 0" in streams(rest)
    ends = [json.loads(p.read_text().splitlines()[-1]) for p in (agent_home / "sessions").glob("*.jsonl")]
    assert ends == [{"type": "run_end", "reason": "interrupted", "error": None}] * 3
    reply, _ = fe.run("%rienda sessions")
    assert reply["status"] == "ok"  # the kernel goes on


@pytest.mark.parametrize("depth", [1, 2])
def test_what_a_sub_agent_showed_before_its_confirm_is_in_the_cell_before_the_buttons(frontend_factory, home, depth):
    """Its command output, notice, log lines and tool call are in the box's last display
    published before the buttons (IOPub order), a grandchild's inside its parent's box."""
    agent_home, work = home
    lead_to_asker(agent_home, work, depth)
    fe = frontend_factory(JupyterLab)
    fe.run("%rienda use lead")
    msg_id = fe.submit("Go.", allow_stdin=True)
    seen = fe.collect(msg_id, until=lambda m: bool(widget_displays([m])))
    before = nested(seen[:-1])
    assert before, [m["msg_type"] for m in seen]
    for text in SHOWN_BEFORE_ASKING:
        assert text in before[-1]["text/html"], (text, before[-1]["text/plain"])
    fe.click(buttons(seen)["Allow"])
    rest = fe.collect(msg_id)
    assert fe.reply(msg_id)["status"] == "ok"
    assert "shipped" in nested(rest)[-1]["text/html"]


def waiting(m) -> bool:
    """The status line saying the run waits for the person's answer."""
    return m["msg_type"] == "update_display_data" and "waiting for your answer" in str(m["content"]["data"])


def test_what_a_sub_agent_showed_is_in_the_cell_before_it_asks_y_n(frontend_factory, home):
    """A front end without widgets (jupyter console) answers y/N: the box showing what the
    child did is published before the status line says the run waits for the answer."""
    agent_home, work = home
    lead_to_asker(agent_home, work, 1)
    fe = frontend_factory(Console)
    fe.run("%rienda use lead")
    msg_id = fe.submit("Go.", allow_stdin=True)
    seen = fe.collect(msg_id, until=waiting)
    before = nested(seen[:-1])
    assert before and all(text in before[-1]["text/html"] for text in SHOWN_BEFORE_ASKING), before[-1:]
    request = fe.input_request()
    assert "Go on (sub-agent asker)" in request["content"]["prompt"]
    fe.answer("y")
    rest = fe.collect(msg_id)
    assert fe.reply(msg_id)["status"] == "ok"
    assert "shipped" in nested(rest)[-1]["text/html"]


def test_a_childs_hook_actions_show_in_its_box(frontend_factory, home):
    """A rewrite of a child's call (before → after), of its result and of its answer, and a
    JSON result pretty-printed: in the box's HTML and its plain text."""
    agent_home, work = home
    write_hook(agent_home, "tidy", """module.exports = { beforeToolExecute(ctx, call) {
      if (call.arguments.command === "ls") return { arguments: { command: "echo '{\\"n\\": [1, 2], \\"who\\": \\"child\\"}'" } };
    } };""")
    write_hook(agent_home, "mark", """module.exports = {
      afterToolExecute(ctx, call, result) { return { text: result.text + "(marked)" }; },
      afterModelResponse(ctx, response) { if (response.text) return { text: "Child: " + response.text }; } };""")
    write_agent(agent_home, "lead", tools=("agent",))
    write_agent(agent_home, "child", tools=("shell",), hooks=("tidy", "mark"))
    write_script(work, "lead", [delegate("child", "List."), {"text": "ok"}])
    write_script(work, "child", [shell("ls"), {"text": "listed"}])
    fe = frontend_factory(JupyterLab)
    fe.run("%rienda use lead")
    reply, messages = fe.run("Go.")
    assert reply["status"] == "ok"
    box = nested(messages)[-1]
    lines = box["text/plain"].splitlines()
    call = lines.index("""  tool shell {"command": "echo '{\\"n\\": [1, 2], \\"who\\": \\"child\\"}'"}""")
    assert lines[call + 1] == ("""    ✎ hook tidy rewrote the call's arguments: command "ls" → "echo '{\\"n\\": [1, 2], """
                               """\\"who\\": \\"child\\"}'\"""")
    assert lines[call + 2:call + 6] == ['    ← shell: {"n": [1, 2], "who": "child"}', "", "      exit code 0(marked)",
                                        "    ✎ hook mark rewrote the result: text 42 → 50 characters"]
    assert "✎ hook mark rewrote the model&#x27;s answer: text 6 → 13 characters" in box["text/html"]
    assert "  ✎ hook mark rewrote the model's answer: text 6 → 13 characters" in lines
