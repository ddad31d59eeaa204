"""The %rienda commands against a real RIENDA_HOME, real extensions and real sessions
(made by running conversations with the scripted model)."""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest
import yaml

from rienda_kernel.commands.vocabulary import (
    SUBCOMMANDS,
    CommandError,
    CommandOutput,
    is_command,
    run_rienda_command,
)
from rienda_kernel.engine import NonInteractiveUI, RiendaError
from rienda_kernel.engine.errors import ConfigError
from rienda_kernel.engine.providers import PROVIDERS
from rienda_kernel.engine.sessions.store import SessionInfo
from rienda_kernel.jupyter.completion import complete
from rienda_kernel.commands.session import TurnSession
from rienda_kernel.commands.tables import escape

from ..helpers.homes import write_agent_file, write_extension

WORD_COUNT = """module.exports = {
  description: "Counts words | fast.",
  parameters: { type: "object", properties: { path: { type: "string" } } },
  execute(ctx, args) { return "4"; },
};"""
MY_READ = """module.exports = {
  description: "Reads, my way.",
  parameters: { type: "object" },
  execute(ctx, args) { return "mine"; },
};"""
AUDIT = 'module.exports = { afterRun(ctx, e) { ctx.log("afterRun " + e.reason); } };'
TYPO_HOOK = 'module.exports = { afterRn(ctx, e) {} };'


def _agent(home, name, model="scripted/script.yaml", description="A test agent.", extra=""):
    """An agent with no tools or hooks line, its description quoted, and ``extra`` front matter."""
    write_agent_file(home, name, f"---\ndescription: {json.dumps(description)}\nmodel: {model}\n{extra}---\nYou help.\n")


@pytest.fixture(autouse=True)
def no_confirm_env(monkeypatch):
    monkeypatch.delenv("RIENDA_CONFIRM", raising=False)


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    _agent(home, "pub", description="Publishes | reviews\nsecond line")
    _agent(home, "writer", extra="colour: blue\n")
    (home / "agents" / "broken.md").write_text("no front matter\n")
    write_extension(home, "tools", "word-count", WORD_COUNT)
    write_extension(home, "tools", "read", MY_READ)
    write_extension(home, "tools", "bad", "module.exports = { description: 'no execute' ;")
    write_extension(home, "hooks", "audit", AUDIT)
    write_extension(home, "hooks", "typo", TYPO_HOOK)
    (home / "config.yaml").write_text("default_model: scripted/script.yaml\n")  # the built-in default agent's
    return home


@pytest.fixture
def work(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "script.yaml").write_text(yaml.safe_dump([{"text": "first"}, {"text": "second"}, {"text": "third"}]))
    return work


@pytest.fixture
def nb(home, work):
    return TurnSession(home=home, workdir=work)


def run(nb, line) -> CommandOutput:
    return run_rienda_command(nb, line)


def prompt(nb, text):
    result = nb.conversation.run(text, NonInteractiveUI())
    assert result.reason == "end_turn", result.error
    return result.session_id


# ---------------------------------------------------------------- recognising and parsing


def test_is_command_looks_at_the_first_non_blank_line():
    assert is_command("%rienda use pub")
    assert is_command("\n   \n  %rienda\n")
    assert is_command("%rienda\thelp")
    assert not is_command("use pub\n%rienda use pub")
    assert not is_command("%riendas")
    assert not is_command("%%rienda use pub")
    assert not is_command("")
    assert not is_command("count the words in %rienda")


def test_the_leading_prefix_is_optional(nb):
    assert run(nb, "%rienda use pub").text == run(nb, "use pub").text


def test_no_subcommand_and_help_list_the_vocabulary(nb):
    for line in ("", "%rienda", "  %rienda  ", "help", "%rienda help"):
        out = run(nb, line)
        for sub in SUBCOMMANDS:
            assert f"%rienda {sub.usage}" in out.text and sub.help in out.text
            assert f"`%rienda {sub.usage}`" in out.markdown
        assert out.value == list(SUBCOMMANDS)
    assert [sub.name for sub in SUBCOMMANDS] == [
        "ask", "use", "new", "resume", "sessions", "show", "agents", "tools", "hooks", "model", "confirm", "replay",
        "script", "hook", "compact", "pin", "context", "record", "home", "help"]


def test_help_for_one_command(nb):
    out = run(nb, "help use")
    assert out.text.startswith("%rienda use AGENT") and "Switch to AGENT in a new session." in out.text
    assert "resume" not in out.text
    with pytest.raises(CommandError, match="unknown command 'sue'"):
        run(nb, "help sue")


def test_an_unknown_command_lists_the_vocabulary_and_the_closest(nb):
    with pytest.raises(CommandError) as caught:
        run(nb, "%rienda sesions")
    message = str(caught.value)
    assert message.startswith("unknown command 'sesions' (did you mean 'sessions'?); try: ask, use, new, resume,")
    with pytest.raises(CommandError) as caught:
        run(nb, "xyzzy")
    assert "did you mean" not in str(caught.value) and "try: ask, use, new" in str(caught.value)
    assert isinstance(caught.value, RiendaError)


@pytest.mark.parametrize("line, usage", [
    ("use", "usage: %rienda use AGENT"),
    ("use pub writer", "usage: %rienda use AGENT"),
    ("new now", "usage: %rienda new"),
    ("resume", "usage: %rienda resume ID|last"),
    ("sessions all", "usage: %rienda sessions [gate]"),
    ("agents x", "usage: %rienda agents"),
    ("tools x", "usage: %rienda tools"),
    ("hooks x", "usage: %rienda hooks"),
    ("model a/b c", "usage: %rienda model [PROVIDER/MODEL|reset]"),
    ("confirm ask deny", "usage: %rienda confirm [ask|allow|deny|reset]"),
    ("help a b", "usage: %rienda help [COMMAND]"),
])
def test_wrong_arguments_show_the_usage(nb, line, usage):
    with pytest.raises(CommandError) as caught:
        run(nb, line)
    assert str(caught.value) == usage


def test_quotes_are_shell_like_and_unbalanced_ones_are_an_error(nb):
    assert run(nb, "use 'pub'").text.startswith("Using agent pub")
    with pytest.raises(CommandError, match="cannot read the command: No closing quotation"):
        run(nb, "use 'pub")


def test_a_command_cell_holds_one_line(nb):
    with pytest.raises(CommandError, match="one line"):
        run(nb, "%rienda use pub\nnow publish it")
    assert run(nb, "\n%rienda use pub\n\n").text.startswith("Using agent pub")


# ---------------------------------------------------------------- agents and sessions


def test_use_switches_agent_in_a_new_session(nb):
    first = prompt(nb, "hello")
    out = run(nb, "use pub")
    assert out.text == "Using agent pub (model scripted/script.yaml) in a new session."
    assert out.markdown is None and out.value.id == "pub"
    assert nb.agent_id == "pub" and nb.session_id is None
    assert prompt(nb, "again") != first


def test_use_reports_the_agent_files_diagnostics_and_the_model_override(nb):
    run(nb, "model scripted/other.yaml")
    out = run(nb, "use writer")
    assert out.text.splitlines()[0] == "Using agent writer (model scripted/other.yaml) in a new session."
    assert "warning: " in out.text and "unknown key 'colour'" in out.text


def test_use_an_unknown_or_broken_agent_is_a_command_error(nb):
    with pytest.raises(CommandError) as caught:
        run(nb, "use pubb")
    assert "no agent 'pubb'" in str(caught.value) and "did you mean 'pub'?" in str(caught.value)
    assert isinstance(caught.value.__cause__, ConfigError)
    with pytest.raises(CommandError, match="broken.md:1: an agent file must start with"):
        run(nb, "use broken")
    assert nb.agent_id == "default"


def test_new_forgets_the_session_but_keeps_the_agent(nb):
    run(nb, "use pub")
    prompt(nb, "hello")
    assert nb.session_id is not None
    out = run(nb, "new")
    assert out.text == "New session with agent pub: the next prompt starts it."
    assert nb.session_id is None and nb.agent_id == "pub"


def test_sessions_lists_oldest_first_and_marks_the_current_one(nb, home):
    empty = run(nb, "sessions")
    assert empty.text == f"No saved sessions yet in {home / 'sessions'}." and empty.value == []
    first = prompt(nb, "hello | there\nsecond line")
    run(nb, "use pub")
    second = prompt(nb, "publish it")
    out = run(nb, "sessions")
    assert [info.id for info in out.value] == [first, second]
    assert all(isinstance(info, SessionInfo) for info in out.value)
    lines = out.text.splitlines()
    assert lines[0] == f"2 sessions in {home / 'sessions'}, newest last (* = current):"
    assert lines[2].split() == ["id", "agent", "model", "messages", "title"]
    assert lines[3].split() == [first, "default", "scripted/script.yaml", "2", "hello", "|", "there"]
    assert lines[4].split() == ["*", second, "pub", "scripted/script.yaml", "2", "publish", "it"]
    md = out.markdown.splitlines()
    assert md[2] == "|  | id | agent | model | messages | title |"
    assert md[3] == "|---|---|---|---|---|---|"
    assert md[4] == f"|  | {first} | default | scripted/script.yaml | 2 | hello \\| there |"
    assert md[5] == f"| \\* | {second} | pub | scripted/script.yaml | 2 | publish it |"


def test_sessions_names_each_file_it_left_out_in_text_and_markdown(nb, home):
    """%rienda sessions in a notebook, /sessions in rienda chat (tests/cli/test_unusable_sessions.py):
    the same listing, its diagnostics naming each file of the folder it could not use."""
    first = prompt(nb, "hello")
    (home / "sessions" / "20990101-000000-000000-dir0.jsonl").mkdir()
    out = run(nb, "sessions")
    assert [info.id for info in out.value] == [first]
    said = f"{home / 'sessions' / '20990101-000000-000000-dir0.jsonl'} is a folder, not a session file"
    assert out.text.endswith(f"Diagnostics (1):\n  - {said}")
    assert out.markdown.endswith(f"**Diagnostics (1)**\n\n- {escape(said)}")


def test_resume_says_agent_model_and_count_and_continues(nb, work):
    run(nb, "use pub")
    session_id = prompt(nb, "hello")
    run(nb, "use writer")
    out = run(nb, f"resume {session_id}")
    assert out.text == f"Resumed session {session_id}: agent pub, model scripted/script.yaml, 2 messages."
    assert nb.agent_id == "pub" and nb.session_id == session_id
    result = nb.conversation.run("again", NonInteractiveUI())
    assert result.text == "second"
    assert run(nb, "sessions").text.splitlines()[-1].split()[:5] == ["*", session_id, "pub", "scripted/script.yaml", "4"]


def test_resume_shows_the_warnings_of_a_damaged_session(nb, home):
    session_id = prompt(nb, "hello")
    nb.new()
    with open(home / "sessions" / f"{session_id}.jsonl", "a") as file:
        file.write('{"type": "message", "role"')
    out = run(nb, f"resume {session_id}")
    first, warning = out.text.splitlines()
    assert first.endswith("2 messages.")
    assert warning.startswith("warning: ") and "the last line is incomplete" in warning


def test_show_prints_the_current_or_a_saved_session_as_rienda_show_does(nb):
    with pytest.raises(CommandError, match=r"no session yet: the next prompt starts one \(%rienda show ID\|last"):
        run(nb, "show")
    first = prompt(nb, "hello")
    out = run(nb, "show")
    lines = out.text.splitlines()
    assert lines[0].startswith(f"session {first}  agent default  model scripted/script.yaml  created ")
    assert lines[1:] == ["user: hello", "assistant: first", "-- run ended: end_turn",
                         "usage: none reported by the model (1 model turn)"]
    assert out.markdown == "\n".join(f"    {line}" for line in lines)  # a code block in the notebook
    nb.new()
    prompt(nb, "another")
    assert run(nb, "show last").text != out.text and run(nb, f"show {first}").text == out.text
    with pytest.raises(CommandError, match="no session 'nope'"):
        run(nb, "show nope")


def test_resume_an_unknown_session_is_a_command_error(nb):
    with pytest.raises(CommandError, match="no session 'nope'.*there are no sessions yet"):
        run(nb, "resume nope")
    with pytest.raises(CommandError, match="not a valid session id"):
        run(nb, "resume ../etc")


def test_agents_lists_with_file_marks_the_current_and_shows_diagnostics(nb, home):
    run(nb, "use pub")
    out = run(nb, "agents")
    assert [agent.id for agent in out.value] == ["default", "pub", "writer"]
    lines = out.text.splitlines()
    assert lines[0] == f"3 agents in {home / 'agents'} (* = current):"
    assert lines[3].startswith("   default") and lines[3].rstrip().endswith("built-in")
    assert lines[4].startswith("*  pub") and "Publishes | reviews second line" in lines[4]
    assert lines[4].endswith(" agents/pub.md")
    diagnostics = out.text.split("\n\nDiagnostics (2):\n")[1].splitlines()
    assert any("broken.md:1:" in line for line in diagnostics)
    assert any("unknown key 'colour'" in line for line in diagnostics)
    assert "| \\* | pub | scripted/script.yaml | Publishes \\| reviews second line |" in out.markdown
    assert "**Diagnostics (2)**" in out.markdown and "broken.md:1:" in out.markdown


def test_agents_says_when_the_current_agent_is_gone(nb, home):
    run(nb, "use pub")
    (home / "agents" / "pub.md").unlink()
    out = run(nb, "agents")
    assert "The current agent 'pub' is not listed" in out.text
    assert not any(line.startswith("*") for line in out.text.splitlines())


def test_tools_lists_builtins_and_users_with_shadowing_and_diagnostics(nb, home):
    out = run(nb, "tools")
    rows = {line.split()[0]: line for line in out.text.splitlines()[3:] if line and not line.startswith(" ")}
    names = [tool.name for tool in out.value]
    assert names == sorted(names) and {"http", "shell", "write", "read", "word-count"} <= set(names)
    assert "bad" not in names
    assert rows["read"].endswith("shadows the built-in") and " tools/read/index.js " in rows["read"]
    assert "built-in" in rows["shell"] and "shadows" not in rows["shell"]
    assert "Diagnostics (1):" in out.text and str(home / "tools" / "bad" / "index.js") in out.text
    assert "Counts words \\| fast." in out.markdown and "shadows the built-in |" in out.markdown
    assert "**Diagnostics (1)**" in out.markdown


def test_hooks_lists_points_and_diagnostics(nb, home):
    out = run(nb, "hooks")
    assert [hook.name for hook in out.value] == ["audit"]
    lines = out.text.splitlines()
    assert lines[0] == f"1 hook in {home / 'hooks'}:"
    assert lines[3].split() == ["audit", "afterRun", "hooks/audit/index.js"]
    diagnostics = out.text.split("Diagnostics (2):\n")[1]
    assert "did you mean 'afterRun'?" in diagnostics and "skipped: exports none of the hook points" in diagnostics
    assert "| audit | afterRun |" in out.markdown


def test_no_hooks_still_shows_why(nb, home):
    shutil.rmtree(home / "hooks" / "audit")
    out = run(nb, "hooks")
    assert out.text.startswith(f"No usable hooks in {home / 'hooks'}.")
    assert out.value == [] and "Diagnostics (2):" in out.text


def test_a_malformed_config_is_a_command_error(nb, home):
    (home / "config.yaml").write_text("default_model: [\n")
    with pytest.raises(CommandError, match="config.yaml"):
        run(nb, "agents")


# ---------------------------------------------------------------- model and confirm


def test_model_shows_sets_and_resets(nb, home):
    assert run(nb, "model").text == "Model: scripted/script.yaml (agent default's model)."
    out = run(nb, "model scripted/other.yaml")
    assert out.text.startswith("Model: scripted/other.yaml, instead of the agent's")
    assert nb.model == "scripted/other.yaml"
    assert run(nb, "model").text == "Model: scripted/other.yaml (set with %rienda model)."
    run(nb, "use pub")
    assert run(nb, "model").value == "scripted/other.yaml"
    out = run(nb, "model reset")
    assert nb.model is None
    assert out.text == "Model override cleared: using scripted/script.yaml (agent pub's model)."


def test_model_of_a_resumed_session_is_the_one_it_recorded(nb, home):
    _agent(home, "pub", model="scripted/script.yaml")
    run(nb, "use pub")
    session_id = prompt(nb, "hello")
    _agent(home, "pub", model="scripted/later.yaml")
    run(nb, f"resume {session_id}")
    assert run(nb, "model").text == f"Model: scripted/script.yaml (recorded in session {session_id})."


def test_a_bad_model_is_a_command_error(nb):
    with pytest.raises(CommandError, match="must be provider/model"):
        run(nb, "model gpt-4o")
    with pytest.raises(CommandError, match="no provider named 'nobody'"):
        run(nb, "model nobody/gpt")
    assert nb.model is None


def test_confirm_shows_and_sets_the_policy(nb):
    out = run(nb, "confirm")
    assert out.text.splitlines()[0] == "Confirm policy not set: ask when the front end can, deny otherwise."
    assert out.value is None
    out = run(nb, "confirm allow")
    assert nb.confirm_policy == "allow" and out.value == "allow"
    assert out.text == "Confirm policy: allow (allow every confirmation without asking)."
    assert run(nb, "confirm").text.startswith("Confirm policy: allow (")
    run(nb, "confirm DENY")
    assert nb.confirm_policy == "deny"
    run(nb, "confirm reset")
    assert nb.confirm_policy is None


def test_a_bad_confirm_value_is_a_command_error(nb):
    with pytest.raises(CommandError, match="confirm takes ask, allow, deny or reset, got 'alow' \\(did you mean 'allow'\\?\\)"):
        run(nb, "confirm alow")
    assert nb.confirm_policy is None


def test_rienda_confirm_sets_the_initial_policy(home, work, monkeypatch):
    monkeypatch.setenv("RIENDA_CONFIRM", "Allow")
    nb = TurnSession(home=home, workdir=work)
    assert run(nb, "confirm").text.startswith("Confirm policy: allow (")
    monkeypatch.setenv("RIENDA_CONFIRM", "sometimes")
    with pytest.raises(ConfigError, match="RIENDA_CONFIRM must be one of ask, allow, deny, got 'sometimes'"):
        TurnSession(home=home, workdir=work)


# ---------------------------------------------------------------- completion


def test_complete_subcommands(nb):
    line = "%rienda "
    assert complete(nb, line, len(line)) == ([sub.name for sub in SUBCOMMANDS], 8, 8)
    line = "%rienda re"
    assert complete(nb, line, len(line)) == (["resume", "replay", "record"], 8, 10)
    assert complete(nb, "%rienda s", 9) == (["sessions", "show", "script"], 8, 9)
    assert complete(nb, "s", 1) == (["sessions", "show", "script"], 0, 1)  # a line magic's line without %rienda
    assert complete(nb, "%rienda us", 10)[0] == ["use"]
    assert complete(nb, "%rien", 5) == (["%rienda"], 0, 5)


def test_complete_replaces_the_whole_word_under_the_cursor(nb):
    assert complete(nb, "%rienda ag pub", 10) == (["agents"], 8, 10)
    assert complete(nb, "%rienda agxx", 10) == (["agents"], 8, 12)


def test_complete_arguments(nb):
    line = "%rienda use "
    assert complete(nb, line, len(line)) == (["default", "pub", "writer"], 12, 12)
    assert complete(nb, "%rienda use p", 13) == (["pub"], 12, 13)
    line = "%rienda confirm a"
    assert complete(nb, line, len(line)) == (["ask", "allow"], 16, 17)
    line = "%rienda help u"
    assert complete(nb, line, len(line)) == (["use"], 13, 14)
    line = "%rienda model "
    matches = complete(nb, line, len(line))[0]
    assert matches[0] == "reset"
    assert {f"{prefix}/" for prefix in PROVIDERS} <= set(matches) and "scripted/script.yaml" in matches
    line = "%rienda model scripted/s"
    assert complete(nb, line, len(line))[0] == ["scripted/script.yaml"]
    line = "%rienda new "
    assert complete(nb, line, len(line)) == ([], 12, 12)
    line = "%rienda use pub "
    assert complete(nb, line, len(line)) == ([], 16, 16)


def test_complete_session_ids_newest_first(nb):
    first = prompt(nb, "one")
    nb.new()
    second = prompt(nb, "two")
    line = "%rienda resume "
    assert complete(nb, line, len(line)) == ([second, first], 15, 15)
    assert complete(nb, line + first[:-1], len(line) + len(first) - 1)[0] == [first]


def test_complete_outside_a_command_line_offers_nothing(nb, home):
    assert complete(nb, "%rienda use pub\nnext ", 21)[0] == []
    (home / "config.yaml").write_text("default_model: [\n")
    assert complete(nb, "%rienda use ", 12) == ([], 12, 12)  # never raises


def test_home_shows_and_switches_the_rienda_home(nb, tmp_path):
    assert run(nb, "home").text == f"RIENDA_HOME is {nb.rienda.home}"
    other = tmp_path / "notebook-home"
    out = run(nb, f"home {other}")
    assert out.value == other.resolve() and nb.rienda.home == other.resolve()
    assert other.is_dir() and nb.agent_id == "default"


def test_resume_last_continues_the_newest_session(nb, tmp_path):
    with pytest.raises(CommandError, match="no saved session"):
        run(TurnSession(home=tmp_path / "empty-home", workdir=tmp_path), "resume last")
    first = prompt(nb, "first")
    nb.new()
    second = prompt(nb, "second")
    nb.new()
    assert nb.session_id is None
    run(nb, "resume last")
    assert nb.session_id == second != first


def test_home_refuses_a_path_whose_folder_is_missing_and_makes_one_inside_an_existing_folder(nb, tmp_path):
    with pytest.raises(CommandError, match=r"home: /no/such/dir does not exist, nor does its folder /no/such"):
        run_rienda_command(nb, "home /no/such/dir")
    assert not pathlib.Path("/no/such").exists()
    made = run_rienda_command(nb, f"home {tmp_path / 'new-home'}")
    assert made.value == tmp_path / "new-home" and (tmp_path / "new-home").is_dir()
