"""``rienda chat`` on a real pty: turns in one session, commands from the ``%rienda``
table, confirms asked inline, Ctrl-C stopping a turn (not the chat), Ctrl-D leaving."""

from __future__ import annotations

import json

import pytest

from ...helpers.homes import write_agent
from ...helpers.terminals import CTRL_C, CTRL_D, PtyChat
from ...helpers.trees import shell
from ...helpers.homes import write_script

PROMPT = "default> "


@pytest.fixture
def chats():
    """Start chats with ``chats(home, work, *args)``; each is killed at the end if alive."""
    started: list[PtyChat] = []

    def start(home, work, *args: str) -> PtyChat:
        chat = PtyChat(home, work, *args)
        started.append(chat)
        return chat

    yield start
    for chat in started:
        chat.close()


def saved(home, session_id: str) -> list[dict]:
    path = home / "sessions" / f"{session_id}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def session_of(shown: str) -> str:
    """The id on the ``session ID · usage`` line of what a turn showed."""
    [line] = [line for line in shown.splitlines() if line.startswith("session ")]
    return line.split()[1]


def test_two_turns_share_one_session_and_ctrl_d_leaves_naming_it(setup, chats):
    home, work = setup
    write_script(work, [{"text": "First answer."}, {"text": "Second answer.", "usage": {"input_tokens": 7,
                                                                                          "output_tokens": 3}}])
    chat = chats(home, work)
    chat.expect(PROMPT)
    chat.line("one")
    first = chat.expect(PROMPT)
    assert "First answer." in first
    chat.line("two")
    second = chat.expect(PROMPT)
    # the scripted model answers by how many answers the conversation holds: the second turn saw the first
    assert "Second answer." in second and "usage: 7 in, 3 out over 1 model turn" in second
    session_id = session_of(first)
    assert session_of(second) == session_id
    messages = [(r["role"], r["text"]) for r in saved(home, session_id) if r.get("type") == "message"]
    assert messages == [("user", "one"), ("assistant", "First answer."), ("user", "two"),
                        ("assistant", "Second answer.")]
    chat.send(CTRL_D)
    assert chat.wait() == 0
    assert f"bye: session {session_id} (rienda chat --resume {session_id} continues it)" in chat.text


def test_commands_come_from_the_rienda_table(setup, chats):
    home, work = setup
    write_script(work, [{"text": "Answered."}])
    chat = chats(home, work)
    chat.expect(PROMPT)
    chat.line("/tools")
    listed = chat.expect(PROMPT)
    assert "shell" in listed and "publish" in listed and "origin" in listed
    chat.line("hello")
    first = session_of(chat.expect(PROMPT))
    chat.line("/new")
    assert "New session with agent default" in chat.expect(PROMPT)
    chat.line("hello again")
    second = session_of(chat.expect(PROMPT))
    assert second != first
    chat.line(f"/resume {first}")
    assert f"Resumed session {first}: agent default" in chat.expect(PROMPT)
    chat.line("/sessions")
    assert "2 sessions" in chat.expect(PROMPT)
    chat.line("/use pub")
    assert "Using agent pub" in chat.expect("pub> ")
    chat.line("/confirm allow")
    assert "Confirm policy: allow" in chat.expect("pub> ")
    chat.line("/model wrong/thing")
    assert "wrong" in chat.expect("pub> ")
    chat.line("/exit")
    assert chat.wait() == 0


def test_help_unknown_and_notebook_only_commands_are_one_line_each(setup, chats):
    home, work = setup
    chat = chats(home, work)
    chat.expect(PROMPT)
    chat.line("/help")
    shown = chat.expect(PROMPT)
    for usage in ("/use AGENT", "/new", "/resume ID|last", "/tools", "/hooks", "/show [ID|last]", "/confirm", "/exit"):
        assert usage in shown
    assert "/ask" not in shown and "%rienda" not in shown
    chat.line("/help use")
    assert "/use AGENT" in chat.expect(PROMPT)
    chat.line("/tols")
    assert chat.expect(PROMPT).count("\n") == 2  # the echo, one line, the prompt
    assert "unknown command /tols (did you mean /tools?); /help lists them" in chat.text
    chat.line("/ask hi")
    assert "/ask: in chat, type the prompt itself" in chat.expect(PROMPT)
    chat.line("/use")
    assert "usage: /use AGENT" in chat.expect(PROMPT)
    chat.line("/use nobody")
    assert "nobody" in chat.expect(PROMPT)
    chat.send(CTRL_D)
    assert chat.wait() == 0
    assert "bye (no session was started)" in chat.text


def test_a_confirm_is_asked_inline_once_yes_once_no(setup, chats):
    home, work = setup
    publish = {"text": "Publishing.", "tool_calls": [{"name": "publish", "arguments": {}}]}
    write_script(work, [publish, {"text": "Done one."}, publish, {"text": "Done two."}])
    chat = chats(home, work, "--agent", "pub")
    chat.expect("pub> ")
    chat.line("publish")
    chat.expect("Allow? [y = once, s = for this session, N = no]")
    chat.line("y")
    shown = chat.expect("pub> ")
    assert "confirm 'Publish': allowed (user)" in shown and "← publish: pushed" in shown and "Done one." in shown
    chat.line("again")
    chat.expect("Allow? [y = once, s = for this session, N = no]")
    chat.line("n")
    shown = chat.expect("pub> ")
    assert "confirm 'Publish': denied (user)" in shown and "✗ publish: cancelled" in shown and "Done two." in shown
    chat.send(CTRL_D)
    assert chat.wait() == 0


def test_ctrl_c_stops_the_turn_not_the_chat(tmp_path, chats):
    from ...helpers.homes import scripted_home

    home, work = scripted_home(tmp_path)
    write_agent(home, "sleeper", tools=["shell"])
    write_script(work, [shell("sleep 30", "Sleeping."), {"text": "Awake again."}])
    chat = chats(home, work, "--agent", "sleeper", "--yes")
    chat.expect("sleeper> ")
    chat.send("typed, then cleared")
    chat.expect("typed, then cleared")  # readline echoed it: it is reading (a Ctrl-C before then is lost)
    chat.send(CTRL_C)
    chat.expect("sleeper> ")  # Ctrl-C at the prompt clears the line: the chat goes on
    chat.line("sleep")
    chat.expect('→ shell {"command": "sleep 30"}')
    chat.send(CTRL_C)
    shown = chat.expect("sleeper> ")
    assert "interrupted; the session kept what was produced" in shown
    chat.line("and now?")
    assert "Awake again." in chat.expect("sleeper> ")
    chat.send(CTRL_D)
    assert chat.wait() == 0
    assert "typed, then cleared" not in chat.text.split("sleeper> ")[2]  # the cleared line did not run


def test_the_prompt_edits_completes_and_keeps_a_history_in_the_home(setup, chats):
    home, work = setup
    write_script(work, [{"text": "Answered."}])
    chat = chats(home, work)
    chat.expect(PROMPT)
    chat.send("wXrld\x1b[D\x1b[D\x1b[D\x08o")  # three steps left, a backspace over the X, an o: "world"
    chat.expect("o")
    chat.send("\r")
    chat.expect(PROMPT)
    chat.send("/too\t")  # Tab completes a command's name
    chat.expect("ls")
    chat.send("\r")
    assert "6 tools" in chat.expect(PROMPT)
    chat.send(CTRL_D)
    assert chat.wait() == 0
    assert (home / "chat_history").read_text().splitlines() == ["world", "/tools "]
    assert [r["text"] for r in saved(home, session_of(chat.text)) if r.get("role") == "user"] == ["world"]
    again = chats(home, work)
    again.expect(PROMPT)
    again.send("\x1b[A\x1b[A")  # the previous chat's lines, newest first
    again.expect("world")
    again.send(CTRL_C)
    again.expect(PROMPT)
    again.send(CTRL_D)
    assert again.wait() == 0
    assert not (work / "chat_history").exists()


def test_ctrl_c_at_a_confirm_stops_that_turn_and_the_next_one_is_asked_again(setup, chats):
    home, work = setup
    publish = {"text": "Publishing.", "tool_calls": [{"name": "publish", "arguments": {}}]}
    write_script(work, [publish, publish, {"text": "Done."}])
    chat = chats(home, work, "--agent", "pub")
    chat.expect("pub> ")
    chat.line("publish")
    chat.expect("Allow? [y = once, s = for this session, N = no]")
    chat.send(CTRL_C)
    assert "interrupted; the session kept what was produced" in chat.expect("pub> ")
    chat.line("again")
    chat.expect("Allow? [y = once, s = for this session, N = no]")
    chat.line("s")
    assert "Done." in chat.expect("pub> ")
    chat.send(CTRL_D)
    assert chat.wait() == 0
