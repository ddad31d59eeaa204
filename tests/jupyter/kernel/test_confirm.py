"""``ctx.confirm`` in the Rienda kernel, as each kind of front end meets it: buttons where a
widget view reports itself (JupyterLab, VS Code), a y/N prompt where none does (jupyter
console), the policy's answer in a batch run; one answer per confirm, whatever comes late;
and the static record that replaces the buttons."""

from __future__ import annotations

import re

import pytest

from rienda_kernel.jupyter.confirm import VIEW_WAIT

from ...helpers.extensions import PUBLISH
from ...helpers.frontend import (
    BackgroundTab,
    WIDGET_VIEW,
    Console,
    JupyterLab,
    VSCode,
    buttons,
    records,
    streams,
    texts,
    widget_displays,
)
from ...helpers.homes import write_agent, write_extension, write_script


CALL = {"text": "Calling.", "tool_calls": [{"name": "publish", "arguments": {}}]}


def publisher(agent_home, work, turns: int = 1) -> None:
    """The agent "pub" with the publish tool, and a script that calls it ``turns`` times."""
    write_extension(agent_home, "tools", "publish", PUBLISH)
    write_agent(agent_home, "pub", tools=["publish"])
    write_script(work, [CALL, {"text": "Finished."}] * turns)


def started(frontend_factory, home, kind=JupyterLab, turns: int = 1, **env):
    publisher(*home, turns=turns)
    fe = frontend_factory(kind, **env)
    fe.run("%rienda use pub")
    return fe


def waited_past_the_view_window(seen):
    """A predicate true at the first status line showing the kernel waited longer than
    VIEW_WAIT (plus a second) since it first said it waits for the answer: the kernel's
    own clock, read from what it shows, instead of a sleep in the test."""
    def elapsed(m):
        found = re.search(r"waiting for your answer.* · ([\d.]+) s", m["content"]["data"].get("text/plain", "")) \
            if m["msg_type"] == "update_display_data" else None
        return float(found.group(1)) if found else None

    first = next(t for t in map(elapsed, seen) if t is not None) if any(map(elapsed, seen)) else None
    state = {"first": first}

    def until(m):
        now = elapsed(m)
        if now is not None and state["first"] is None:
            state["first"] = now
        return now is not None and now >= state["first"] + VIEW_WAIT + 1

    return until


def until_buttons(m) -> bool:
    return m["msg_type"] == "display_data" and WIDGET_VIEW in m["content"]["data"]


@pytest.mark.parametrize("kind", [JupyterLab, VSCode])
@pytest.mark.parametrize(("choice", "expected", "verdict"), [("Allow", "pushed", "allowed"),
                                                             ("Deny", "cancelled", "denied")])
def test_a_front_end_that_shows_the_view_gets_buttons_and_a_click_answers(frontend_factory, home, kind, choice,
                                                                         expected, verdict):
    fe = started(frontend_factory, home, kind)
    msg_id = fe.submit("publish", allow_stdin=True)
    seen = fe.collect(msg_id, until=until_buttons)
    found = buttons(seen)
    assert set(found) == {"Allow", "Allow for this session", "Deny"}
    box = widget_displays(seen)[0]["content"]
    assert box["data"]["text/plain"] == "? Publish\n  Push the current branch?"
    assert "[tool:publish] about to ask" in streams(seen)  # ctx.log arrived while the tool waits
    seen += fe.collect(msg_id, until=waited_past_the_view_window(seen))  # the person takes their time...
    assert fe.no_input_request()  # ...and, the view being reported, no y/N prompt went out
    fe.click(found[choice])
    rest = fe.collect(msg_id)
    assert fe.reply(msg_id)["status"] == "ok"
    assert any(expected in t for t in texts(rest))
    assert fe.no_input_request()
    record = [m for m in rest if m["msg_type"] == "update_display_data"
              and m["content"]["transient"]["display_id"] == box["transient"]["display_id"]]
    assert len(record) == 1 and WIDGET_VIEW not in record[0]["content"]["data"]
    assert record[0]["content"]["data"]["text/plain"] == (
        f"{'✓' if verdict == 'allowed' else '✗'} Publish: {verdict} (answered with the buttons); "
        "asked by tool:publish\n  Push the current branch?")
    assert "Push the current branch?" in record[0]["content"]["data"]["text/html"]
    closed = {m["content"]["comm_id"] for m in rest + fe.others if m["msg_type"] == "comm_close"}
    assert set(found.values()) <= closed  # the buttons are gone from the kernel too


def test_a_second_click_or_a_late_click_is_ignored(frontend_factory, home):
    fe = started(frontend_factory, home, VSCode, turns=2)
    msg_id = fe.submit("publish", allow_stdin=True)
    found = buttons(fe.collect(msg_id, until=until_buttons))
    fe.click(found["Deny"])
    fe.click(found["Allow"])  # too late: Deny won
    rest = fe.collect(msg_id)
    assert any("cancelled" in t for t in texts(rest)) and not any("pushed" in t for t in texts(rest))
    assert [r["text/plain"].split(" (")[0] for r in records(rest)] == ["✗ Publish: denied"]
    fe.click(found["Allow"])  # after the cell: the widgets are closed, nothing happens
    msg_id = fe.submit("publish again", allow_stdin=True)
    again = buttons(fe.collect(msg_id, until=until_buttons))
    assert not set(again.values()) & set(found.values())
    fe.click(again["Allow"])
    assert any("pushed" in t for t in texts(fe.collect(msg_id)))


def test_jupyter_console_gets_a_y_n_prompt_and_then_gets_it_at_once(frontend_factory, home):
    fe = started(frontend_factory, home, Console, turns=2)
    msg_id = fe.submit("publish", allow_stdin=True)
    request = fe.input_request()  # no view reported the buttons: the y/N prompt goes out too
    assert request["content"]["prompt"] == "Publish\nPush the current branch?\nAllow? [y = once, s = for this session, N = no] "
    fe.answer("y")  # jupyter console answers without a parent header
    messages = fe.collect(msg_id)
    assert any("pushed" in t for t in texts(messages))
    assert [r["text/plain"].split(";")[0] for r in records(messages)] == ["✓ Publish: allowed (answered with y/N)"]
    # The kernel now knows this client shows no widgets: no buttons, the prompt at once.
    msg_id = fe.submit("publish again", allow_stdin=True)
    fe.answer("n", fe.input_request())
    messages = fe.collect(msg_id)
    assert not buttons(messages) and not widget_displays(messages)
    assert any("cancelled" in t for t in texts(messages))


def test_a_view_reported_by_another_client_does_not_count(frontend_factory, home):
    """The console runs the cell; VS Code, connected to the same kernel, renders the
    buttons and reports its view: the console's person still gets the y/N prompt."""
    console = started(frontend_factory, home, Console)
    watcher = frontend_factory(VSCode, attach_to=console)
    msg_id = console.submit("publish", allow_stdin=True)
    request = console.input_request()
    assert watcher.widgets.views  # the other client did display the view
    console.answer("y", request)
    assert any("pushed" in t for t in texts(console.collect(msg_id)))


def test_both_ways_are_live_and_the_first_answer_wins(frontend_factory, home):
    """A page whose view does not report in time gets the y/N prompt as well: a click
    still answers, and the typed answer that comes after it is ignored (now and at the
    next confirm)."""
    fe = started(frontend_factory, home, BackgroundTab, turns=2)
    msg_id = fe.submit("publish", allow_stdin=True)
    request = fe.input_request()
    found = buttons(fe.collect(msg_id, until=until_buttons))
    fe.widgets.release_views()  # the page shows the buttons at last
    fe.click(found["Deny"])
    first = fe.collect(msg_id)
    assert any("cancelled" in t for t in texts(first))
    assert [r["text/plain"].split(";")[0] for r in records(first)] == ["✗ Publish: denied (answered with the buttons)"]
    fe.answer("y", request)  # the prompt's late answer, with its parent (as JupyterLab sends it)
    msg_id = fe.submit("publish again", allow_stdin=True)
    found = buttons(fe.collect(msg_id, until=until_buttons))  # the page showed views: buttons only
    assert fe.no_input_request()
    fe.click(found["Deny"])
    assert any("cancelled" in t for t in texts(fe.collect(msg_id)))  # "y" did not answer this one


def test_a_typed_answer_wins_over_buttons_nobody_saw(frontend_factory, home):
    fe = started(frontend_factory, home, BackgroundTab, turns=1)
    msg_id = fe.submit("publish", allow_stdin=True)
    request = fe.input_request()
    found = buttons(fe.collect(msg_id, until=until_buttons))
    fe.answer("y", request)
    rest = fe.collect(msg_id)
    assert any("pushed" in t for t in texts(rest))
    fe.click(found["Deny"])  # too late, and the buttons are closed
    assert [r["text/plain"].split(";")[0] for r in records(rest)] == ["✓ Publish: allowed (answered with y/N)"]
    assert fe.run("%rienda model")[0]["status"] == "ok"


@pytest.mark.parametrize("with_parent", [True, False])
def test_a_late_reply_to_an_interrupted_prompt_never_answers_the_next_confirm(frontend_factory, home, with_parent):
    fe = started(frontend_factory, home, Console)
    write_script(home[1], [CALL, CALL, {"text": "Finished."}])  # the interrupted turn uses one call
    msg_id = fe.submit("publish", allow_stdin=True)
    request = fe.input_request()
    fe.km.interrupt_kernel()
    messages = fe.collect(msg_id)
    assert fe.reply(msg_id)["ename"] == "KeyboardInterrupt"
    assert [r["text/plain"].split(";")[0] for r in records(messages)] == [
        "✗ Publish: denied (not answered: the turn was interrupted)"]
    fe.answer("y", request if with_parent else None)  # typed after the prompt was abandoned
    assert fe.run("%rienda model")[0]["status"] == "ok"  # the late reply has reached the kernel
    msg_id = fe.submit("publish again", allow_stdin=True)
    fe.answer("n", fe.input_request())
    assert any("cancelled" in t for t in texts(fe.collect(msg_id)))


def test_a_reply_naming_another_prompt_is_ignored(frontend_factory, home):
    """An answer to an abandoned prompt that arrives while the next one is open (JupyterLab
    sends the prompt it answers as the reply's parent) does not answer the open one."""
    fe = started(frontend_factory, home, Console)
    write_script(home[1], [CALL, CALL, {"text": "Finished."}])
    msg_id = fe.submit("publish", allow_stdin=True)
    abandoned = fe.input_request()
    fe.km.interrupt_kernel()
    fe.collect(msg_id)
    msg_id = fe.submit("publish again", allow_stdin=True)
    current = fe.input_request()
    fe.answer("y", abandoned)  # after the new prompt went out: only its parent tells them apart
    fe.answer("n", current)
    assert any("cancelled" in t for t in texts(fe.collect(msg_id)))


def test_a_batch_run_gets_the_default_deny_and_a_record_saying_so(frontend_factory, home):
    fe = started(frontend_factory, home, JupyterLab)
    reply, messages = fe.run("publish", allow_stdin=False)  # nbclient, nbval, papermill
    assert reply["status"] == "ok"
    assert not buttons(messages) and fe.no_input_request()
    assert any("cancelled" in t for t in texts(messages))
    [record] = records(messages)
    assert record["text/plain"].startswith("✗ Publish: denied (nobody could be asked (no stdin in this run); "
                                           "set %rienda confirm allow|deny or $RIENDA_CONFIRM)")


@pytest.mark.parametrize(("setting", "expected"), [("allow", "pushed"), ("deny", "cancelled")])
def test_an_explicit_confirm_setting_wins(frontend_factory, home, setting, expected):
    fe = started(frontend_factory, home, JupyterLab)
    fe.run(f"%rienda confirm {setting}")
    reply, messages = fe.run("publish", allow_stdin=True)
    assert not buttons(messages) and fe.no_input_request()
    assert any(expected in t for t in texts(messages))
    [record] = records(messages)
    assert f"(by the confirm policy: {setting})" in record["text/plain"]


def test_the_environment_variable_sets_the_policy(frontend_factory, home):
    fe = started(frontend_factory, home, JupyterLab, RIENDA_CONFIRM="allow")
    _, messages = fe.run("publish", allow_stdin=False)
    assert any("pushed" in t for t in texts(messages))


def test_interrupting_a_shown_confirm_records_it_as_interrupted(frontend_factory, home):
    fe = started(frontend_factory, home, JupyterLab)
    msg_id = fe.submit("publish", allow_stdin=True)
    found = buttons(fe.collect(msg_id, until=until_buttons))
    fe.km.interrupt_kernel()
    messages = fe.collect(msg_id)
    assert fe.reply(msg_id)["ename"] == "KeyboardInterrupt"
    assert [r["text/plain"].split(";")[0] for r in records(messages)] == [
        "✗ Publish: denied (not answered: the turn was interrupted)"]
    fe.click(found["Allow"])  # after the interrupt: ignored
    assert fe.run("%rienda model")[0]["status"] == "ok"


def test_allow_for_this_session_is_not_asked_again_and_says_so(frontend_factory, home):
    fe = started(frontend_factory, home, JupyterLab, turns=2)
    msg_id = fe.submit("publish", allow_stdin=True)
    found = buttons(fe.collect(msg_id, until=until_buttons))
    fe.click(found["Allow for this session"])
    first = fe.collect(msg_id)
    assert any("pushed" in t for t in texts(first))
    assert "for the rest of this session, answered with the buttons" in records(first)[0]["text/plain"]
    reply, messages = fe.run("publish again", allow_stdin=True)
    assert reply["status"] == "ok"
    assert not buttons(messages)
    assert records(messages)[0]["text/plain"].startswith(
        "✓ Publish: allowed (allowed earlier in this session); asked by tool:publish")
    assert any("pushed" in t for t in texts(messages))


# The README's promise "the first answer wins", with two answers arriving before the turn
# reads one (the seam itself: tests/jupyter/test_confirm_race.py).
def test_two_clicks_before_the_turn_reads_one_the_first_wins(frontend_factory, home):
    fe = started(frontend_factory, home, BackgroundTab)
    msg_id = fe.submit("publish", allow_stdin=True)
    fe.input_request()  # the turn now waits on its prompt too, reading the stdin socket between polls
    found = buttons(fe.collect(msg_id, until=until_buttons))
    fe.click(found["Allow"])
    fe.click(found["Deny"])  # the kernel handles it right after the first, before the turn looks again
    messages = fe.collect(msg_id)
    assert any("pushed" in text for text in texts(messages))
    assert [r["text/plain"].split(";")[0] for r in records(messages)] == ["✓ Publish: allowed (answered with the buttons)"]


# Logs past the fold (12 lines go out as stream text, the rest to a display updated at most
# every 50 ms), the last two in a row, then asks.
MANY_LOGS = """module.exports = {
  description: "Logs a lot, then asks.",
  parameters: { type: "object", properties: {} },
  execute: function (ctx) {
    for (let i = 1; i <= 20; i++) ctx.log("line " + i);
    return ctx.confirm({ title: "Publish", body: "Push?" }) ? "pushed" : { text: "cancelled", isError: true };
  },
};
"""


def test_a_folded_log_shows_its_last_line_before_the_buttons(frontend_factory, home):
    agent_home, work = home
    write_extension(agent_home, "tools", "publish", MANY_LOGS)
    write_agent(agent_home, "pub", tools=["publish"])
    write_script(work, [CALL, {"text": "Finished."}])
    fe = frontend_factory(JupyterLab)
    fe.run("%rienda use pub")
    msg_id = fe.submit("publish", allow_stdin=True)
    seen = fe.collect(msg_id, until=until_buttons)
    folded = [m["content"]["data"]["text/plain"] for m in seen[:-1] if m["msg_type"] in (
        "display_data", "update_display_data") and m["content"]["transient"]["display_id"].startswith("rienda-log-")]
    assert folded and folded[-1].endswith("[tool:publish] line 20"), folded[-1:]
    fe.click(buttons(seen)["Allow"])
    assert any("pushed" in t for t in texts(fe.collect(msg_id)))
