"""The pytest plugin (``pytest --rienda-replay DIR``), run with pytest's own ``pytester``
against sessions recorded through the real loop with the scripted model."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
import yaml

from rienda_kernel.engine import NonInteractiveUI
from rienda_kernel.engine.runtime.rienda import Rienda

pytest_plugins = ("pytester",)

ECHO = """module.exports = { description: "Echoes.", parameters: { type: "object" },
  execute: (ctx, a) => "got " + JSON.stringify(a) };"""
HOOKS = {
    "https": """module.exports = { beforeToolExecute(ctx, call) {
      if (!call.arguments.url) return;
      return { arguments: { ...call.arguments, url: call.arguments.url.replace("http://", "https://") } }; } };""",
    "deny-rm": """module.exports = { beforeToolExecute(ctx, call) {
      if (/rm -rf/.test(call.arguments.command || "")) return { allow: false, reason: "no rm -rf" }; } };""",
    "ask-rm": """module.exports = { beforeToolExecute(ctx, call) {
      if (/rm -rf/.test(call.arguments.command || "") && !ctx.confirm({ title: "rm?", body: call.arguments.command }))
        return { allow: false, reason: "refused by the user" }; } };""",
}
CONVERSATIONS = {
    "fetch": [{"text": "Fetching.", "tool_calls": [{"name": "echo", "arguments": {"url": "http://example.org"}}]},
              {"text": "Fetched."}],
    "clean": [{"text": "Cleaning.", "tool_calls": [{"name": "echo", "arguments": {"command": "ls"}},
                                                   {"name": "echo", "arguments": {"command": "rm -rf build"}}]},
              {"text": "Cleaned."}],
    "chat": [{"text": "Hello there."}],
    "list": [{"text": "Listing.", "tool_calls": [{"name": "echo", "arguments": {"command": "ls -l"}}]}, {"text": "Done."}],
}


class Recorded:
    """A Rienda home whose agent ``worker`` declares ``https``, and one session recorded
    per conversation (by the real loop, scripted model)."""

    def __init__(self, root: Path) -> None:
        self.home, self.work = root / "home", root / "work"
        self.work.mkdir()
        self._write("tools/echo/index.js", ECHO)
        for name, source in HOOKS.items():
            self._write(f"hooks/{name}/index.js", source)
        self.declare("https")
        rienda = Rienda(home=self.home, workdir=self.work)
        self.ids = {}
        for name, responses in CONVERSATIONS.items():
            (self.work / "script.yaml").write_text(yaml.safe_dump(responses))
            result = rienda.conversation("worker").run(f"please {name}", NonInteractiveUI())
            assert result.reason == "end_turn", result.error
            self.ids[name] = result.session_id
        self.sessions = self.home / "sessions"

    def declare(self, *hooks: str) -> None:
        self._write("agents/worker.md", f"---\nmodel: scripted/script.yaml\ntools: [echo]\nhooks: {list(hooks)}\n---\nWork.\n")

    def expect(self, name: str, text: str) -> Path:
        path = self.sessions / f"{self.ids[name]}.expect.yaml"
        path.write_text(textwrap.dedent(text))
        return path

    def _write(self, relative: str, text: str) -> None:
        path = self.home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture(scope="module")
def recorded_once(tmp_path_factory):
    return Recorded(tmp_path_factory.mktemp("recorded"))


@pytest.fixture
def recorded(recorded_once, pytester):
    """A fresh copy per test (tests change the agent and add expectations), inside the
    project pytester runs in, where a team would commit its sessions."""
    copy = Recorded.__new__(Recorded)
    copy.home, copy.work = pytester.path / "home", pytester.path / "work"
    shutil.copytree(recorded_once.home, copy.home)
    shutil.copytree(recorded_once.work, copy.work)
    copy.ids, copy.sessions = recorded_once.ids, copy.home / "sessions"
    return copy


def replay(pytester, recorded, *args, subprocess=False):
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    return run("-p", "no:cacheprovider", "--rienda-replay", str(recorded.sessions), "--rienda-home", str(recorded.home),
               "--rienda-workdir", str(recorded.work), *args)


def test_a_folder_of_sessions_that_replay_as_recorded_passes(pytester, recorded):
    result = replay(pytester, recorded, "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([f"*{recorded.ids['clean']}.jsonl::replay PASSED*"])


def test_a_hook_change_fails_the_one_session_it_alters_with_the_per_call_report(pytester, recorded):
    recorded.declare("https", "deny-rm")
    result = replay(pytester, recorded)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([
        f"*_ replay of {recorded.ids['clean']}.jsonl _*",
        f"replayed session {recorded.ids['clean']} through hooks: https, deny-rm",
        "= echo [call_1_1]: same as recorded",
        "≠ echo [call_1_2]",
        "    now refused by hook deny-rm: no rm -rf",
        "differences found",
    ])
    assert "Traceback" not in result.stdout.str()


def test_an_expectation_turns_that_failure_into_a_pass(pytester, recorded):
    recorded.declare("https", "deny-rm")
    recorded.expect("clean", """\
        calls:
          - match: {tool: echo, arguments: {command: 'rm\\s+-rf'}}
            refused: deny-rm
            reason: no rm -rf
    """)
    replay(pytester, recorded).assert_outcomes(passed=4)


def test_an_expectation_that_no_longer_holds_fails(pytester, recorded):
    recorded.expect("clean", """\
        calls:
          - match: {id: call_1_2}
            refused: true
    """)
    result = replay(pytester, recorded)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["≠ echo [call_1_2]", "    expected refused, but it is allowed now"])


def test_expected_arguments_and_result_replace_the_recorded_ones(pytester, recorded):
    recorded.declare()  # https removed: the fetch call now gets its http:// url unchanged
    recorded.expect("fetch", """\
        calls:
          - match: {id: call_1_1}
            allowed: true
            arguments: {url: "http://example.org"}
            result: 'got {"url":"http://example.org"}'
    """)
    result = replay(pytester, recorded, "--rienda-run-tools")
    result.assert_outcomes(passed=4)
    recorded.expect("fetch", """\
        calls:
          - match: {id: call_1_1}
            arguments: {url: "ftp://example.org"}
    """)
    result = replay(pytester, recorded)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(['    expected arguments {"url": "ftp://example.org"}, now {"url": "http://example.org"}'])


def test_an_expectation_matching_no_call_fails_rather_than_passing_silently(pytester, recorded):
    path = recorded.expect("chat", "calls:\n  - match: {tool: shell}\n    refused: true\n")
    result = replay(pytester, recorded)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([f"≠ calls[0] of {path} matches no call of the session"])


def test_a_malformed_expectations_file_fails_its_item_naming_the_file_and_key(pytester, recorded):
    path = recorded.expect("chat", "calls:\n  - match: {id: call_1_1}\n    refuse: true\n")
    result = replay(pytester, recorded)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([f"*calls[[]0] of {path}: unknown key 'refuse'; the keys are match, refused, allowed*"])
    assert "rienda_kernel/engine" not in result.stdout.str()  # the message, not a traceback


def test_confirm_comes_from_the_option_or_the_expectations_file(pytester, recorded):
    recorded.declare("https", "ask-rm")
    replay(pytester, recorded).assert_outcomes(passed=3, failed=1)  # confirms are denied: rm -rf now refused
    replay(pytester, recorded, "--rienda-confirm", "allow").assert_outcomes(passed=4)
    recorded.expect("clean", "confirm: allow\n")
    replay(pytester, recorded).assert_outcomes(passed=4)


def test_rienda_hooks_replaces_each_agents_hooks(pytester, recorded):
    result = replay(pytester, recorded, "--rienda-hooks", "")
    result.assert_outcomes(passed=3, failed=1)  # without https the fetch call's url is not rewritten
    result.stdout.fnmatch_lines(["    arguments now different: url: 'https://example.org' -> 'http://example.org'"])


def test_run_tools_compares_what_the_tools_return_now(pytester, recorded):
    (recorded.home / "tools" / "echo" / "index.js").write_text(ECHO.replace('"got "', '"now "'))
    replay(pytester, recorded).assert_outcomes(passed=4)  # recorded results are reused
    result = replay(pytester, recorded, "--rienda-run-tools")
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(["""    result now different: 'got {"command":"ls -l"}' -> 'now {"command":"ls -l"}'"""])


def test_run_tools_fails_a_call_whose_tool_cannot_run_rather_than_reuse_its_recorded_result(pytester, recorded):
    shutil.rmtree(recorded.home / "tools" / "echo")
    replay(pytester, recorded).assert_outcomes(passed=4)  # without --rienda-run-tools the recording stands
    result = replay(pytester, recorded, "--rienda-run-tools")
    result.assert_outcomes(passed=1, failed=3)  # only the chat, which calls no tool, passes
    result.stdout.fnmatch_lines([f"    not run again: no tool 'echo' in {recorded.home / 'tools'} or the built-ins"])


def test_a_file_that_is_not_a_session_fails_its_item_naming_it(pytester, recorded):
    (recorded.sessions / "notes.jsonl").write_text('{"hello": 1}\n')
    result = replay(pytester, recorded)
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines([f"*{recorded.sessions / 'notes.jsonl'}:1: not a Rienda session*"])
    assert "rienda_kernel/engine" not in result.stdout.str()


def test_the_home_defaults_to_rienda_home(pytester, recorded, monkeypatch):
    monkeypatch.setenv("RIENDA_HOME", str(recorded.home))
    recorded.declare("https", "deny-rm")
    result = pytester.runpytest("-p", "no:cacheprovider", "--rienda-replay", str(recorded.sessions),
                                "--rienda-workdir", str(recorded.work))
    result.assert_outcomes(passed=3, failed=1)


def test_sessions_run_alone_or_alongside_the_paths_given(pytester, recorded):
    pytester.makepyfile(test_other="def test_other():\n    assert True\n")
    replay(pytester, recorded).assert_outcomes(passed=4)
    replay(pytester, recorded, "test_other.py").assert_outcomes(passed=5)


def test_the_plugin_is_off_unless_asked_for_and_imports_no_engine(pytester, recorded):
    pytester.makepyfile(test_light="""
        import sys
        def test_light():
            assert "rienda_kernel.engine" not in sys.modules
    """)
    (pytester.path / "copy.jsonl").write_bytes((recorded.sessions / f"{recorded.ids['chat']}.jsonl").read_bytes())
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=1)
    assert "copy.jsonl" not in result.stdout.str()


def test_a_missing_folder_is_a_usage_error(pytester, tmp_path):
    result = pytester.runpytest("--rienda-replay", str(tmp_path / "nowhere"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--rienda-replay {tmp_path / 'nowhere'}: * is not a directory of recorded sessions*"])


def test_xdist_spreads_the_items_over_two_workers(pytester, recorded):
    recorded.declare("https", "deny-rm")
    result = replay(pytester, recorded, "-n", "2", "-v", subprocess=True)
    result.assert_outcomes(passed=3, failed=1)
    output = result.stdout.str()
    assert "[gw0]" in output and "[gw1]" in output
    result.stdout.fnmatch_lines(["    now refused by hook deny-rm: no rm -rf"])


def test_sessions_committed_outside_the_home_replay_with_their_expectations(pytester, recorded):
    committed = pytester.path / "tests" / "sessions"
    shutil.copytree(recorded.sessions, committed)
    shutil.rmtree(recorded.sessions)
    recorded.declare("https", "deny-rm")
    (committed / f"{recorded.ids['clean']}.expect.yaml").write_text(
        "calls:\n  - match: {id: call_1_2}\n    refused: deny-rm\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--rienda-replay", "tests/sessions", "--rienda-home",
                                str(recorded.home), "--rienda-workdir", str(recorded.work), "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([f"tests/sessions/{recorded.ids['clean']}.jsonl::replay PASSED*"])


def test_a_failure_report_never_shows_a_secret(pytester, recorded, monkeypatch):
    """A hook that now puts a token into a result: the report shows what differs, and the
    token as [redacted], like ``rienda replay`` does."""
    token = "ghp_replaytoken0123456789"
    monkeypatch.setenv("DEPLOY_TOKEN", token)
    recorded._write("hooks/leak/index.js", """module.exports = { afterToolExecute(ctx, call, result) {
      return { text: result.text + " with " + ctx.env.DEPLOY_TOKEN }; } };""")
    recorded.declare("https", "leak")
    result = replay(pytester, recorded, "--junitxml", str(pytester.path / "report.xml"))
    result.assert_outcomes(passed=1, failed=3)
    shown = result.stdout.str() + result.stderr.str() + (pytester.path / "report.xml").read_text()
    assert token not in shown
    assert "with [redacted]" in result.stdout.str()


def test_run_tools_that_cannot_run_a_tool_fails_naming_it_and_why(pytester, recorded):
    """A tool since removed (or whose file no longer loads) was never run again: the replay
    must not pass on the recorded result."""
    replay(pytester, recorded, "--rienda-run-tools").assert_outcomes(passed=4)  # as recorded, it runs and matches
    shutil.rmtree(recorded.home / "tools" / "echo")
    result = replay(pytester, recorded, "--rienda-run-tools")
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(["    not run again: no tool 'echo'*"])
    (recorded.home / "tools" / "echo").mkdir()
    (recorded.home / "tools" / "echo" / "index.js").write_text("module.exports = { description: 'x' ;")
    broken = replay(pytester, recorded, "--rienda-run-tools")
    broken.assert_outcomes(passed=1, failed=3)
    broken.stdout.fnmatch_lines(["    not run again: *echo/index.js*"])
    replay(pytester, recorded).assert_outcomes(passed=4)  # without --run-tools the recording is the result


def test_a_compaction_hook_change_fails_the_session_it_compacted(pytester):
    """A session compacted through a hook that appends the team's rule replays as recorded;
    with the rule changed, its item fails naming the compaction and the summary's change."""
    home, work = pytester.path / "home", pytester.path / "work"
    work.mkdir()
    rule = "module.exports = {{ afterCompact(ctx, c) {{ return {{summary: c.summary + ' [{}]'}}; }} }};"
    for path, text in {"hooks/team/index.js": rule.format("rule A"),
                       "agents/long.md": "---\nmodel: scripted/script.yaml\nhooks: [team]\noptions:\n"
                                         "  context_window: 600\n---\nYou help.\n"}.items():
        (home / path).parent.mkdir(parents=True, exist_ok=True)
        (home / path).write_text(text)
    (work / "script.yaml").write_text(yaml.safe_dump([{"text": f"Answer {i}: " + "lorem ipsum " * 30}
                                                      for i in range(8)]))
    conversation = Rienda(home=home, workdir=work).conversation("long")
    for index in range(6):
        assert conversation.run(f"prompt {index + 1}", NonInteractiveUI()).reason == "end_turn"
    assert "compaction" in (home / "sessions" / f"{conversation.session_id}.jsonl").read_text()
    args = ("-p", "no:cacheprovider", "--rienda-replay", str(home / "sessions"), "--rienda-home", str(home),
            "--rienda-workdir", str(work))
    pytester.runpytest(*args).assert_outcomes(passed=1)
    (home / "hooks/team/index.js").write_text(rule.format("rule B"))
    result = pytester.runpytest(*args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["≠ compaction 1 (auto, after message *): the summary after afterCompact now "
                                 "differs: '*[[]rule A]' -> '*[[]rule B]'", "differences found"])
