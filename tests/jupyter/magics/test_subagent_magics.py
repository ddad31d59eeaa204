"""Sub-agents under the %rienda magics in a real python3 kernel (through jupyter_client):
the child's run nested under its agent call, its confirm answered by buttons while the
magic runs, and the result object holding the lead's answer and the child's session."""

from __future__ import annotations

from ...helpers.frontend import VSCode, buttons, streams, widget_displays
from ...helpers.trees import delegate, shell, write_agent, write_hook, write_script
from ...helpers.trees import ASKING_GUARD, SHOWN_BEFORE_ASKING, lead_to_asker, nested
from ...helpers.frontend import value_of


def test_the_magics_nest_a_childs_run_and_its_confirm_gets_buttons(python_kernel):
    home, work, start = python_kernel
    write_hook(home, "guard", ASKING_GUARD)
    write_agent(home, "lead", tools=("agent",), hooks=("guard",))
    write_agent(home, "cleaner", tools=("shell",))
    write_script(work, "lead", [delegate("cleaner", "Clean up."), {"text": "Lead done."}])
    write_script(work, "cleaner", [shell("rm -rf victim", text="Cleaning."), {"text": "Cleaner done."}])
    (work / "victim").mkdir()
    fe = start(VSCode)
    fe.run("%rienda use lead")
    msg_id = fe.submit("r = %rienda ask Clean the workspace.", allow_stdin=True)
    seen = fe.collect(msg_id, until=lambda m: bool(widget_displays([m])))
    [box] = widget_displays(seen)
    assert box["content"]["data"]["text/plain"].startswith("? Dangerous command (sub-agent cleaner)")
    fe.click(buttons(seen)["Allow"])
    rest = fe.collect(msg_id)
    assert fe.reply(msg_id)["status"] == "ok"
    assert not (work / "victim").exists()  # allowed: the child's rm -rf ran
    final = nested(seen + rest)[-1]
    assert "<details>" in final["text/html"] and "answer:</b> Cleaner done." in final["text/html"]
    assert value_of(fe, "r.text") == "Lead done."
    assert value_of(fe, "[c.name for c in r.tool_calls]") == ["agent"]
    child = value_of(fe, "r.messages[-2].meta.subagent.session_id")
    assert (home / "sessions" / f"{child}.jsonl").exists()
    assert "Traceback" not in streams(seen + rest)


def test_the_magics_show_what_a_grandchild_did_before_its_buttons(python_kernel):
    """The box's last display published before the buttons holds the grandchild's command
    output, notice, log lines and tool call (IOPub order), under the magic's pump."""
    home, work, start = python_kernel
    lead_to_asker(home, work, 2)
    fe = start(VSCode)
    fe.run("%rienda use lead")
    msg_id = fe.submit("%rienda ask Go.", allow_stdin=True)
    seen = fe.collect(msg_id, until=lambda m: bool(widget_displays([m])))
    before = nested(seen[:-1])
    assert before and all(text in before[-1]["text/html"] for text in SHOWN_BEFORE_ASKING), before[-1:]
    fe.click(buttons(seen)["Allow"])
    rest = fe.collect(msg_id)
    assert fe.reply(msg_id)["status"] == "ok"
    assert "shipped" in nested(rest)[-1]["text/html"]
