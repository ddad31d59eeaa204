"""Foreign text is repaired once at the boundary: lone surrogates become U+FFFD."""

from rienda_kernel.engine.common.text import REPLACEMENT, repair


def test_a_lone_surrogate_becomes_the_replacement_character():
    assert repair("abc\ud83d") == "abc" + REPLACEMENT
    assert repair("\udc00 then text") == REPLACEMENT + " then text"


def test_a_pair_split_over_two_code_points_is_joined():
    assert repair("\ud83d\ude00!") == "😀!"


def test_keys_and_nested_values_are_repaired():
    assert repair({"k\ud800": ["x\udfff", ("\ud800",)], "n": 1}) == {
        "k" + REPLACEMENT: ["x" + REPLACEMENT, (REPLACEMENT,)], "n": 1}


def test_well_formed_text_is_returned_as_is():
    text = "déjà vu 😀"
    assert repair(text) is text
    assert repair(text).encode("utf-8")


# -- every path where foreign text reaches an output (issue 25: a model's lone surrogate
# -- ended `rienda run` with "internal error: UnicodeEncodeError ... surrogates not allowed")

import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from rienda_kernel.engine import NonInteractiveUI, ToolCall  # noqa: E402
from rienda_kernel.engine.providers import (  # noqa: E402
    PROVIDERS,
    NoticeChunk,
    Provider,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    VendorStateChunk,
)
from rienda_kernel.engine.runtime.rienda import Rienda  # noqa: E402

from ...helpers.vendor_wire import counting_agent  # noqa: E402

LONE = "\ud83d"
SCRIPT = """\
- text: "broken \\ud83d emoji"
  thinking: "thought \\udc00"
  tool_calls:
    - {name: read, arguments: {path: "missing-\\ud800.txt"}}
- error: "the model failed \\ud83d"
"""


def rienda(home, work, *args):
    env = {**os.environ, "RIENDA_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", *args], cwd=work, env=env,
                          capture_output=True, timeout=120)


def test_rienda_run_shows_a_scripted_models_lone_surrogates_as_replacement_characters(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    (home / "agents").mkdir(parents=True)
    work.mkdir()
    (home / "agents" / "a.md").write_text("---\nmodel: scripted/script.yaml\ntools: [read]\n---\nHi.\n")
    (work / "script.yaml").write_text(SCRIPT)
    done = rienda(home, work, "run", "--agent", "a", "go")
    out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")  # strict: both must be UTF-8
    assert "UnicodeEncodeError" not in err and "Traceback" not in err
    assert done.returncode == 1 and "broken \ufffd emoji" in out
    assert "the model failed \ufffd" in err and "missing-\ufffd.txt" in err
    (session,) = (home / "sessions").glob("*.jsonl")
    session.read_bytes().decode("utf-8")  # valid UTF-8 ...
    assert "\\ud8" not in session.read_text() and "\\udc" not in session.read_text()  # ... and no escaped surrogate


class Surrogates(Provider):
    """A provider of its own whose every field holds a lone surrogate."""

    def stream(self, request, cancel):
        if any(m.role == "tool" for m in request.messages):
            yield TextChunk("done " + LONE)
            return
        yield NoticeChunk("provider:" + LONE, "title " + LONE, "body " + LONE)
        yield ThinkingChunk("thinking " + LONE)
        yield TextChunk("text " + LONE)
        yield VendorStateChunk({"x": {"thinking": [{"signature": "s" + LONE}]}})
        yield ToolCallChunk(ToolCall("id" + LONE, "word-count", {"path" + LONE: "notes" + LONE}))


def test_a_providers_lone_surrogates_are_repaired_where_its_stream_enters_the_engine(rig, monkeypatch):
    monkeypatch.setitem(PROVIDERS, "odd", lambda config: Surrogates())
    counting_agent(rig, "writer", "odd/m")
    engine = Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)
    ui = NonInteractiveUI()
    result = engine.conversation("writer").run("go", ui)
    assert (result.reason, result.error, result.text) == ("end_turn", None, "done \ufffd")
    for event in ui.events:
        json.dumps(event.to_dict(), ensure_ascii=False).encode("utf-8")  # every event can be printed
    [answer] = [m for m in result.messages if m.role == "assistant" and m.tool_calls]
    assert (answer.text, answer.thinking) == ("text \ufffd", "thinking \ufffd")
    assert answer.tool_calls == (ToolCall("id\ufffd", "word-count", {"path\ufffd": "notes\ufffd"}),)
    assert answer.meta.vendor == {"x": {"thinking": [{"signature": "s\ufffd"}]}}


def test_a_session_file_with_escaped_surrogates_loads_and_shows_repaired(tmp_path):
    home = tmp_path / "home"
    (home / "sessions").mkdir(parents=True)
    header = {"type": "session", "version": 1, "id": "s1", "agent": "a\ud800", "model": "scripted/x"}
    lines = [header, {"type": "message", "role": "user", "text": "title \ud83d"},
             {"type": "message", "role": "assistant", "text": "answer \udc00"}]
    (home / "sessions" / "s1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))  # \u escapes
    engine = Rienda(home=home, workdir=tmp_path)
    loaded = engine.load_session("s1")
    assert [m.text for m in loaded.messages] == ["title \ufffd", "answer \ufffd"]
    assert loaded.header.agent == "a\ufffd" and engine.sessions()[0].title == "title \ufffd"
    for args in (["show", "s1"], ["sessions"]):
        done = rienda(home, tmp_path, *args)
        assert done.returncode == 0, done.stderr
        assert "\ufffd" in done.stdout.decode("utf-8")


def test_undecodable_bytes_in_a_prompt_or_a_workdir_path_reach_no_output_unrepaired(tmp_path):
    home = tmp_path / "home"
    (home / "agents").mkdir(parents=True)
    work = os.path.join(os.fsencode(tmp_path), b"work-\xff")
    os.mkdir(work)
    (home / "agents" / "a.md").write_text("---\nmodel: scripted/script.yaml\ntools: [read]\n---\nHi.\n")
    with open(os.path.join(work, b"script.yaml"), "w") as script:
        script.write('- tool_calls: [{name: read, arguments: {path: "gone.txt"}}]\n- text: "ok"\n')
    env = {**os.environ, "RIENDA_HOME": str(home)}
    done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "run", "--agent", "a", b"go \xfe"], cwd=work,
                          env=env, capture_output=True, timeout=120)
    err = done.stderr.decode("utf-8")
    assert done.returncode == 0, err
    assert "no such file: gone.txt\n" in err  # the read tool's error names the path once, as the reader sees it
    (session,) = (home / "sessions").glob("*.jsonl")
    assert "go \ufffd" in session.read_text(encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "run", "--agent", "a", "--workdir", b"work-\xff",
                           "again"], cwd=tmp_path, env=env, capture_output=True, timeout=120)  # the path as given: found
    err = done.stderr.decode("utf-8")
    assert done.returncode == 0 and "no such file: work-\ufffd/gone.txt\n" in err, err
