"""The JSON Lines session store: header, appends, resume, damaged files, listing, secrets."""

from __future__ import annotations

import json
import re
import threading
from datetime import datetime, timezone

import pytest

from rienda_kernel.engine.errors import ConfigError
from rienda_kernel.engine.events import HookDecision
from rienda_kernel.engine.sessions.records import UnknownRecord, parse_record, record_json
from rienda_kernel.engine.sessions.messages import Message, MessageMeta, ToolCall, Usage
from rienda_kernel.engine.secrets import Scrubber
from rienda_kernel.engine.sessions.store import (
    SessionError,
    SessionStore,
    new_session_id,
)

SECRET = "sk-test-1234567890"


@pytest.fixture
def store(tmp_path):
    return SessionStore(tmp_path, scrubber=Scrubber({}))


def lines_of(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def assistant_turn() -> Message:
    call = ToolCall("call_1", "shell", {"command": "ls"})
    return Message("assistant", "Listing.", thinking="look first", tool_calls=(call,), usage=Usage(12, 3))


# ---------------------------------------------------------------- ids


def test_an_id_encodes_the_utc_time_and_four_hex_digits():
    moment = datetime(2024, 5, 1, 12, 30, 45, 123456, tzinfo=timezone.utc)
    assert re.fullmatch(r"20240501-123045-123456-[0-9a-f]{4}", new_session_id(moment))


def test_ids_sort_by_creation_even_within_one_microsecond():
    ids = [new_session_id() for _ in range(2000)]
    assert ids == sorted(ids)
    stamps = [session_id.rsplit("-", 1)[0] for session_id in ids]
    assert len(set(stamps)) == len(stamps), "each id gets its own microsecond"


def test_sessions_created_later_sort_later(store):
    first = store.create("default", "openai/gpt-4o")
    second = store.create("default", "openai/gpt-4o")
    assert first.id < second.id
    assert [info.id for info in store.list()] == [first.id, second.id]


# ---------------------------------------------------------------- writing


def test_create_writes_the_header_and_makes_the_directory_lazily(store, tmp_path):
    assert not store.directory.exists()
    assert store.directory == tmp_path / "sessions"
    with store.create("coder", "openai/gpt-4o") as writer:
        pass
    assert writer.path == tmp_path / "sessions" / f"{writer.id}.jsonl"
    [header] = lines_of(writer.path)
    assert header["type"] == "session" and header["version"] == 1
    assert (header["id"], header["agent"], header["model"]) == (writer.id, "coder", "openai/gpt-4o")
    created = datetime.fromisoformat(header["created"])
    assert created.utcoffset().total_seconds() == 0


def test_create_refuses_an_existing_id(store):
    store.create("a", "p/m", session_id="mine").close()
    with pytest.raises(SessionError, match="'mine' already exists"):
        store.create("a", "p/m", session_id="mine")


def test_each_append_is_on_disk_before_close(store):
    writer = store.create("a", "p/m")
    writer.append_message(Message.user("hello"))
    with open(writer.path, encoding="utf-8") as other:  # another handle, writer still open
        written = [json.loads(line) for line in other]
    assert written[1]["type"] == "message" and written[1]["text"] == "hello"
    datetime.fromisoformat(written[1]["time"])
    writer.close()


def test_messages_and_records_round_trip_in_order(store):
    call = ToolCall("call_1", "shell", {"command": "ls"})
    messages = [Message.user("list files"), assistant_turn(), Message.tool_result(call, "a.txt", False)]
    with store.create("a", "p/m") as writer:
        writer.append_message(messages[0])
        writer.append_record(HookDecision(hook="guard", point="beforeRun", effect="none"))
        writer.append_message(messages[1])
        writer.append_record(parse_record({"type": "log", "text": "ran"}))
        writer.append_message(messages[2])
    loaded = store.load(writer.id)
    assert loaded.messages == messages
    assert loaded.records == [
        HookDecision(hook="guard", point="beforeRun", effect="none"),
        UnknownRecord("log", {"type": "log", "text": "ran"}),
    ]
    assert loaded.header.id == writer.id
    assert loaded.warnings == []
    assert loaded.entries == [(2, messages[0]), (3, loaded.records[0]), (4, messages[1]),
                              (5, loaded.records[1]), (6, messages[2])]
    assert (loaded.message_lines, loaded.record_lines) == ([2, 4, 6], [3, 5])


def test_a_record_needs_a_type_and_cannot_pose_as_a_message(store):
    with store.create("a", "p/m") as writer:
        with pytest.raises(ValueError, match="append_message"):
            writer.append_record(UnknownRecord("session", {"type": "session"}))
        with pytest.raises(ValueError, match="append_message"):
            writer.append_record(UnknownRecord("message", {"type": "message", "role": "user"}))
    assert len(lines_of(writer.path)) == 1


def test_appending_after_close_is_an_error(store):
    writer = store.create("a", "p/m")
    writer.close()
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.append_message(Message.user("late"))


def test_non_ascii_text_is_kept(store):
    with store.create("a", "p/m") as writer:
        writer.append_message(Message.user("riendas sueltas — ñandú \u2028 fin"))
    assert store.load(writer.id).messages[0].text == "riendas sueltas — ñandú \u2028 fin"


def test_concurrent_appends_never_interleave(store):
    writer = store.create("a", "p/m")

    def append(worker: int) -> None:
        for index in range(200):
            writer.append_message(Message.user(f"{worker}-{index} " + "x" * (index * 37 % 5000)))
            writer.append_record(parse_record({"type": "log", "worker": worker, "index": index}))

    threads = [threading.Thread(target=append, args=(worker,)) for worker in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    lines = lines_of(writer.path)  # every line is valid JSON
    assert len(lines) == 1 + 6 * 200 * 2
    loaded = store.load(writer.id)
    assert (len(loaded.messages), len(loaded.records), loaded.warnings) == (1200, 1200, [])


# ---------------------------------------------------------------- resume


def test_resume_appends_after_the_existing_lines(store):
    with store.create("a", "p/m") as writer:
        writer.append_message(Message.user("one"))
    with store.resume(writer.id) as again:
        assert (again.id, again.path) == (writer.id, writer.path)
        again.append_message(Message("assistant", "two"))
    assert [m.text for m in store.load(writer.id).messages] == ["one", "two"]
    assert len(lines_of(writer.path)) == 3


def test_an_unknown_session_names_the_directory_and_close_ids(store):
    store.create("a", "p/m", session_id="20240501-120000-000000-abcd").close()
    with pytest.raises(SessionError) as caught:
        store.resume("20240501-120000-000000-abce")
    message = str(caught.value)
    assert "no session '20240501-120000-000000-abce'" in message
    assert str(store.directory) in message
    assert "closest: 20240501-120000-000000-abcd" in message
    assert isinstance(caught.value, ConfigError)


def test_an_unknown_session_in_an_empty_store(store):
    with pytest.raises(SessionError, match="there are no sessions yet"):
        store.load("nothing")


def test_a_session_id_cannot_leave_the_directory(store):
    with pytest.raises(SessionError, match="not a valid session id"):
        store.load("../config")


# ---------------------------------------------------------------- damaged files


def test_a_torn_last_line_is_a_warning_and_nothing_before_it_is_lost(store):
    with store.create("a", "p/m") as writer:
        writer.append_message(Message.user("one"))
        writer.append_message(assistant_turn())
    with open(writer.path, "a", encoding="utf-8") as file:
        file.write('{"type": "message", "time": "2024-05-01T12:00:00Z", "role": "us')
    loaded = store.load(writer.id)
    assert loaded.messages == [Message.user("one"), assistant_turn()]
    assert loaded.warnings == [
        f"{writer.path}:4: the last line is incomplete (the session was interrupted while writing); ignored"
    ]


def test_resuming_after_a_torn_line_keeps_new_lines_apart(store):
    with store.create("a", "p/m") as writer:
        writer.append_message(Message.user("one"))
    with open(writer.path, "a", encoding="utf-8") as file:
        file.write('{"type": "message", "ro')
    with store.resume(writer.id) as again:
        again.append_message(Message("assistant", "two"))
    loaded = store.load(writer.id)
    assert [m.text for m in loaded.messages] == ["one", "two"]
    assert loaded.warnings == [f"{writer.path}:3: not valid JSON; skipped"]


def test_a_garbled_middle_line_is_skipped_with_its_line_number(store):
    with store.create("a", "p/m") as writer:
        writer.append_message(Message.user("one"))
    with open(writer.path, "a", encoding="utf-8") as file:
        file.write("this is not json\n")
        file.write('["an array"]\n')
        file.write('{"type": "message", "text": "no role"}\n')
    with store.resume(writer.id) as again:
        again.append_message(Message("assistant", "two"))
    loaded = store.load(writer.id)
    assert [m.text for m in loaded.messages] == ["one", "two"]
    assert len(loaded.warnings) == 3
    assert loaded.warnings[0] == f"{writer.path}:3: not valid JSON; skipped"
    assert loaded.warnings[1].startswith(f"{writer.path}:4: not a JSON object")
    assert loaded.warnings[2].startswith(f"{writer.path}:5: not a valid message")


@pytest.mark.parametrize(
    "first_line, problem",
    [
        ("", "not a Rienda session"),
        ('{"type": "message", "role": "user", "text": "hi"}', "not a Rienda session"),
        ('{"type": "sess', "not a Rienda session"),
        ('{"type": "session", "id": "s"}', "no valid version"),
        ('{"type": "session", "version": 2, "id": "s"}', "version 2 is newer than this Rienda supports"),
    ],
)
def test_a_missing_wrong_or_newer_header_is_an_error_naming_the_file(store, first_line, problem):
    store.directory.mkdir()
    path = store.directory / "s.jsonl"
    path.write_text(first_line + "\n" if first_line else "", encoding="utf-8")
    for action in (store.load, store.resume):
        with pytest.raises(SessionError, match=re.escape(problem)) as caught:
            action("s")
        assert str(caught.value).startswith(f"{path}")


# ---------------------------------------------------------------- listing


def test_list_gives_titles_counts_and_skips_broken_files(store):
    assert store.list() == []
    with store.create("coder", "openai/gpt-4o", session_id="20240101-000000-000000-aaaa") as first:
        first.append_record(parse_record({"type": "log", "text": "start"}))
        first.append_message(Message.user("\n  Fix the failing build please\nthen run the tests"))
        first.append_message(Message("assistant", "ok"))
    with store.create("default", "scripted/s.yaml", session_id="20240102-000000-000000-bbbb") as second:
        second.append_message(Message.user("y" * 100))
    with store.create("default", "scripted/s.yaml", session_id="20240103-000000-000000-cccc"):
        pass
    (store.directory / "20240104-000000-000000-dddd.jsonl").write_text("garbage\n")
    with open(first.path, "a", encoding="utf-8") as file:
        file.write('{"type": "message", "ro')  # a torn line is not counted
    infos = store.list()
    assert [info.id for info in infos] == [first.id, second.id, "20240103-000000-000000-cccc"]
    assert (infos[0].agent, infos[0].model, infos[0].messages) == ("coder", "openai/gpt-4o", 2)
    assert infos[0].title == "Fix the failing build please"
    assert infos[0].created == store.load(first.id).header.created
    assert (infos[1].messages, infos[1].title) == (1, "y" * 60)
    assert (infos[2].messages, infos[2].title) == (0, "")


# ---------------------------------------------------------------- secrets


def test_the_scrubber_collects_secret_looking_variables_only():
    scrubber = Scrubber({
        "OPENAI_API_KEY": SECRET,
        "GITHUB_TOKEN": "ghp_abcdefgh",
        "DB_PASSWORD": "short",  # under 8 characters
        "HOME": "/home/someone/long/enough",
    })
    found = set(scrubber.secrets)  # with any secret this process remembered (a header a tool sent)
    assert {SECRET, "ghp_abcdefgh"} <= found and not {"short", "/home/someone/long/enough"} & found
    source = {"a": [f"key={SECRET}", ("ghp_abcdefgh",)], "home": "/home/someone/long/enough", "n": 3}
    assert scrubber.scrub(source) == {"a": ["key=[redacted]", ("[redacted]",)],
                                      "home": "/home/someone/long/enough", "n": 3}
    assert source["a"][0] == f"key={SECRET}", "the input is not modified"


def test_the_scrubber_redacts_authorization_and_api_key_fields():
    scrubber = Scrubber({})
    headers = {"Authorization": "Bearer abc", "X-API-Key": "k1", "api_key": "k2", "Accept": "json",
               "nested": [{"authorization": "Basic xyz"}]}
    assert scrubber.scrub(headers) == {
        "Authorization": "[redacted]", "X-API-Key": "[redacted]", "api_key": "[redacted]",
        "Accept": "json", "nested": [{"authorization": "[redacted]"}],
    }


def test_secrets_never_reach_the_session_file(tmp_path):
    store = SessionStore(tmp_path, scrubber=Scrubber({"OPENAI_API_KEY": SECRET}))
    call = ToolCall("c1", "http", {"url": "https://api.example", "headers": {"Authorization": "Bearer zzz"},
                                   "body": f"token {SECRET}"})
    with store.create("a", "p/m") as writer:
        writer.append_message(Message.user(f"my key is {SECRET}, keep it safe"))
        writer.append_message(Message("assistant", "calling", tool_calls=(call,)))
        writer.append_message(Message.tool_result(call, f"echo: {SECRET}", False))
        writer.append_record(parse_record({"type": "log", "text": f"env {SECRET}", SECRET: "as a key"}))
    text = writer.path.read_text(encoding="utf-8")
    assert SECRET not in text
    assert "Bearer zzz" not in text
    loaded = store.load(writer.id)
    assert loaded.messages[0].text == "my key is [redacted], keep it safe"
    arguments = loaded.messages[1].tool_calls[0].arguments
    assert arguments["headers"]["Authorization"] == "[redacted]"
    assert arguments["body"] == "token [redacted]"
    assert [record_json(r) for r in loaded.records] == [{"type": "log", "text": "env [redacted]", "[redacted]": "as a key"}]


def test_the_default_scrubber_reads_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("RIENDA_TEST_SECRET_TOKEN", "tok-from-the-environment")
    store = SessionStore(tmp_path)
    with store.create("a", "p/m") as writer:
        writer.append_message(Message.user("tok-from-the-environment"))
    assert "tok-from-the-environment" not in writer.path.read_text(encoding="utf-8")


def test_a_key_set_after_the_store_was_made_is_scrubbed_too(tmp_path, monkeypatch):
    """In a notebook the key is often set by a cell after the kernel (and its store) started."""
    monkeypatch.delenv("LATE_API_KEY", raising=False)
    store = SessionStore(tmp_path)
    late = "late-secret-0123456789"
    with store.create("a", "p/m") as writer:
        writer.append_message(Message.user(f"before: {late}"))
        monkeypatch.setenv("LATE_API_KEY", late)
        writer.append_message(Message.user(f"after: {late}"))
    texts = [m.text for m in store.load(writer.id).messages]
    assert texts == [f"before: {late}", "after: [redacted]"]


# ---------------------------------------------------------------- tolerant readers

ILL_TYPED = [
    ('{"type": "message", "role": "assistant", "text": "x", "usage": "lots"}', "'usage' must be an object, got a string"),
    ('{"type": "message", "role": "assistant", "text": "x", "usage": {"input_tokens": "x"}}',
     "'usage.input_tokens' must be a whole number >= 0, got 'x'"),
    ('{"type": "message", "role": "assistant", "text": "x", "tool_calls": "c1"}', "'tool_calls' must be a list, got a string"),
    ('{"type": "message", "role": "assistant", "text": "x", "tool_calls": [{"name": "read"}]}', "'id' is missing"),
    ('{"type": "message", "role": "user", "text": 5}', "'text' must be a string, got a number"),
    ('{"type": "message", "role": "robot", "text": "beep"}', "'role' must be one of user, assistant, tool, got 'robot'"),
    ('{"type": "message", "role": "tool", "text": "r", "tool_call_id": "c1", "isError": "yes"}',
     "'isError' must be a boolean, got a string"),
    ('{"type": "message", "role": "tool", "text": "r"}', "'tool_call_id' is missing"),
]


@pytest.mark.parametrize(("line", "problem"), ILL_TYPED)
def test_a_message_line_with_a_missing_or_ill_typed_field_is_skipped_with_a_warning(store, line, problem):
    with store.create("a", "p/m") as writer:
        writer.append_message(Message.user("one"))
    with open(writer.path, "a", encoding="utf-8") as file:
        file.write(line + "\n")
    with store.resume(writer.id) as again:
        again.append_message(Message("assistant", "two"))
    loaded = store.load(writer.id)
    assert [m.text for m in loaded.messages] == ["one", "two"]
    assert loaded.warnings == [f"{writer.path}:3: not a valid message ({problem}); skipped"]


def test_resume_replay_and_script_survive_every_ill_typed_line(rig):
    from rienda_kernel.engine import NonInteractiveUI
    from rienda_kernel.engine.testing.replay import replay_session, session_script
    from rienda_kernel.engine.runtime.rienda import Rienda

    rienda = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    (rig.workdir / "script.yaml").write_text("- text: first\n- text: second\n")
    (rig.home / "config.yaml").write_text("default_model: scripted/script.yaml\n")
    first = rienda.conversation()
    session_id = first.run("hello", NonInteractiveUI()).session_id
    first.close()
    path = rig.home / "sessions" / f"{session_id}.jsonl"
    with open(path, "a", encoding="utf-8") as file:
        file.writelines(line + "\n" for line, _ in ILL_TYPED)
        file.write('{"type": "approval", "title": ["not", "text"], "body": {}}\n')
    resumed = rienda.conversation(session_id=session_id)
    # each ill-typed message, and the approval record, is one warning naming its line (issue 40)
    assert len(resumed.warnings) == len(ILL_TYPED) + 1
    assert resumed.warnings[-1] == (f"{path}:{2 + 2 + len(ILL_TYPED) + 1}: a 'approval' record this version cannot "
                                    "read; left out ('title' must be a string, got ['not', 'text'])")
    assert resumed.run("again", NonInteractiveUI()).text == "second"
    assert replay_session(rienda, session_id).calls == []
    assert session_script(rienda, session_id).count("- text:") == 2


def test_an_ill_typed_header_field_is_ignored_with_a_warning(store):
    store.directory.mkdir()
    (store.directory / "s.jsonl").write_text('{"type": "session", "version": 1, "id": "s", "agent": 7}\n')
    loaded = store.load("s")
    assert loaded.header.agent == ""
    assert loaded.warnings == [f"{store.directory / 's.jsonl'}:1: the header's 'agent' is not a string (int); ignored"]


# ---------------------------------------------------------------- one writer per session


def test_a_second_writer_is_refused_naming_the_session_and_the_pid_until_the_first_closes(store):
    import os

    from rienda_kernel.engine.errors import SessionBusy

    writer = store.create("a", "p/m")
    writer.append_message(Message.user("one"))
    before = writer.path.read_bytes()
    with pytest.raises(SessionBusy) as caught:
        store.resume(writer.id)
    assert str(caught.value).startswith(f"session {writer.id} is being written by another run (pid {os.getpid()}): "
                                        f"{writer.path};")
    assert writer.path.read_bytes() == before
    writer.close()
    with store.resume(writer.id) as again:
        again.append_message(Message("assistant", "two"))
    assert [m.text for m in store.load(writer.id).messages] == ["one", "two"]


# ---------------------------------------------------------------- a full disk

UNDER_A_LIMIT = """
import json, resource, sys
from pathlib import Path
from rienda_kernel.engine.errors import SessionWriteError
from rienda_kernel.engine.sessions.messages import Message
from rienda_kernel.engine.secrets import Scrubber
from rienda_kernel.engine.sessions.records import parse_record
from rienda_kernel.engine.sessions.store import SessionStore

store, limit = SessionStore(Path(sys.argv[1]), scrubber=Scrubber({})), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
seen = []
try:
    writer = store.create("a", "p/m", session_id="s")
    writer.append_message(Message.user("one"))
    try:
        writer.append_message(Message("assistant", "x" * 1000))
    except SessionWriteError as exc:
        seen.append(str(exc))
    seen.append(writer.failure is not None)
    writer.append_record(parse_record({"type": "note", "text": "y" * 1000}))  # after a failure: dropped quietly
    writer.append_message(Message("assistant", "fits"))
    seen.append(writer.failure is None)
except SessionWriteError as exc:
    seen.append(str(exc))
print(json.dumps(seen))
"""


def under_a_file_size_limit(directory, limit):
    """What the writer does in a process whose files may not grow past ``limit`` bytes (a
    full disk, as a writer sees it); run apart, so this process's own files are unaffected."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", UNDER_A_LIMIT, str(directory), str(limit)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_line_the_disk_refuses_is_cut_back_and_the_writer_goes_on_when_it_can(tmp_path):
    path = tmp_path / "sessions" / "s.jsonl"
    seen = under_a_file_size_limit(tmp_path, 400)  # the header and "one" fit, 1000 x's do not
    assert seen[0].startswith(f"cannot write to session file {path}: File too large;")
    assert seen[1:] == [True, True]
    loaded = SessionStore(tmp_path).load("s")
    assert ([m.text for m in loaded.messages], loaded.warnings) == (["one", "fits"], [])


def test_a_session_whose_header_cannot_be_written_leaves_no_file(tmp_path):
    [error] = under_a_file_size_limit(tmp_path, 20)
    assert "File too large" in error
    assert list((tmp_path / "sessions").iterdir()) == []


def test_lines_the_fast_reader_does_not_take_whole_read_as_json_loads_reads_them(store):
    """The reader hands each line to json's scanner; a line with whitespace around it, or
    a file with one line that is not UTF-8, goes through json.loads as before."""
    with store.create("a", "p/m") as writer:
        writer.append_message(Message.user("one"))
    with open(writer.path, "ab") as file:
        file.write(b'  {"type": "message", "role": "user", "text": "padded"} \n')
        file.write(b'{"type": "message", "role": "user", "text": "caf\xe9"}\n')  # Latin-1, not UTF-8
        file.write(b'{"type": "message", "role": "assistant", "text": "x", "tool_calls": [{"id": "c", "name": "n"}]}\n')
        file.write(b'{"type": "message", "role": "user", "text": "tail"} and more\n')
    loaded = store.load(writer.id)
    assert [(m.role, m.text, m.tool_calls) for m in loaded.messages] == [
        ("user", "one", ()), ("user", "padded", ()), ("assistant", "x", (ToolCall("c", "n", None),))]
    assert loaded.warnings == [f"{writer.path}:4: not valid JSON; skipped", f"{writer.path}:6: not valid JSON; skipped"]


def test_a_message_read_back_is_the_message_written(store):
    call = ToolCall("c1", "read", {"path": "a", "n": [1, None]})
    messages = [Message.user("hi"), Message("assistant", "a", "why", (call,), usage=Usage(3, 4)),
                Message("assistant", "b", "because", (call,)),
                Message.tool_result(call, "r", True, meta=MessageMeta(refused_by="guard")),
                Message("assistant", "", "", (call, ToolCall("c2", "x", "not json")))]
    with store.create("a", "p/m") as writer:
        for message in messages:
            writer.append_message(message)
    loaded = store.load(writer.id).messages
    assert loaded == messages
    assert [vars(m) for m in loaded] == [vars(m) for m in messages]
