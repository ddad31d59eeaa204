"""MCP servers' tools as tools like any other, against real servers (``mcp-server-time``,
``mcp-server-git`` and the lab server, over stdio): names, declarations, the hook chain
(refuse, rewrite, confirm), the schema check after the hooks, results, replay."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from rienda_kernel.engine import OUTPUT_CAP, Log, McpTool, NonInteractiveUI

from ...helpers.mcp_servers import git_server, lab_server, time_server, traces
from .mcp_setup import Home, Probe, install_probe, results


@pytest.fixture(scope="module")
def shared(tmp_path_factory, sandbox):
    """One Rienda (its lab and time servers started once) for the tests that leave them as they are."""
    root = tmp_path_factory.mktemp("mcp")
    setup = Home(root, {"lab": lab_server(root / "lab"), "time": time_server()}, sandbox)
    yield setup
    setup.rienda.close()


@pytest.fixture
def probe():
    found = Probe([{"text": "Calling.", "calls": [("mcp__time__convert_time", {}),
                                                  ("mcp__time__get_current_time", {"timezone": "UTC"})]},
                   {"text": "Done."}])
    remove = install_probe(found)
    yield found
    remove()


def test_each_servers_tools_are_listed_as_mcp__server__tool_with_their_schema(shared):
    catalog = shared.rienda.catalog(mcp_servers=True)
    tool = catalog.tools["mcp__time__convert_time"]
    assert isinstance(tool, McpTool) and (tool.server, tool.tool) == ("time", "convert_time")
    assert tool.description == "Convert time between timezones"
    assert tool.parameters["required"] == ["source_timezone", "time", "target_timezone"]
    assert {"mcp__time__get_current_time", "mcp__lab__double", "mcp__lab__slow", "shell"} <= set(catalog.tools)


def test_a_tool_whose_name_would_break_the_name_rule_is_skipped_with_a_diagnostic(shared):
    catalog = shared.rienda.catalog(mcp_servers=True)
    [diagnostic] = [d for d in catalog.diagnostics if d.source == "mcp:lab"]
    assert diagnostic.message.startswith("MCP server 'lab': tool 'a_name_that_goes_on_and_on_past_what_rienda_allows_"
                                         "for_tools' skipped: its name 'mcp__lab__a_name")
    assert "is not a valid tool name (1 to 64 letters, digits, '_' or '-')" in diagnostic.message
    assert not [name for name in catalog.tools if name.startswith("mcp__lab__a_name")]


def test_only_the_declared_tool_is_offered_and_an_undeclared_one_is_never_run(shared, probe):
    agent = shared.agent(["mcp__time__get_current_time"], model="probe/x")
    result = shared.rienda.conversation(agent).run("go", NonInteractiveUI())
    assert [tool.name for tool in probe.requests[0].tools] == ["mcp__time__get_current_time"]
    (refused, refused_error), (answer, answer_error) = results(result)
    assert refused_error and refused.startswith("unknown tool 'mcp__time__convert_time'")
    assert not answer_error and json.loads(answer)["timezone"] == "UTC"


def test_a_server_name_declares_all_of_its_tools(shared, probe):
    agent = shared.agent(["shell", "mcp__time"], model="probe/x")
    result = shared.rienda.conversation(agent).run("go", NonInteractiveUI())
    assert [tool.name for tool in probe.requests[0].tools] == ["shell", "mcp__time__convert_time",
                                                               "mcp__time__get_current_time"]
    convert, _ = results(result)
    assert convert == ("invalid arguments for mcp__time__convert_time: arguments: 'source_timezone' is a required "
                       "property", True)  # its inputSchema, applied before the server is called


@pytest.mark.parametrize(("declared", "problem"), [
    ("mcp__nope__x", "(no MCP server 'nope' in {config}'s mcp_servers (servers: lab, time))"),
    ("mcp__nope", "(no MCP server 'nope' in {config}'s mcp_servers (servers: lab, time))"),
    ("mcp__time__nope", "(MCP server 'time' has no tool 'nope' (its tools: convert_time, get_current_time))"),
])
def test_declaring_an_mcp_tool_that_does_not_exist_fails_the_run_like_an_unknown_tool(shared, declared, problem):
    result, _ = shared.run([declared], [])
    assert result.reason == "error" and result.session_id == ""  # refused before anything is saved
    assert re.fullmatch(re.escape(str(shared.home / "agents")) + r"/agent\d+\.md: " + re.escape(
        f"declares tool {declared!r}, which does not exist " + problem.format(config=shared.home / "config.yaml")),
        result.error), result.error


def test_a_user_tool_of_the_same_name_shadows_the_mcp_tool(shared):
    shadow = shared.home / "tools" / "mcp__time__get_current_time" / "index.js"
    shadow.parent.mkdir(parents=True)
    shadow.write_text('module.exports = { description: "Mine.", parameters: { type: "object" }, '
                      'execute: function () { return "the JavaScript one"; } };')
    try:
        catalog = shared.rienda.catalog(mcp_servers=True)
        assert "mcp__time__get_current_time" in catalog.shadowed
        assert catalog.tools["mcp__time__get_current_time"].description == "Mine."
        result, _ = shared.run(["mcp__time__get_current_time"], [("mcp__time__get_current_time", {})])
        assert results(result) == [("the JavaScript one", False)]
    finally:
        shadow.unlink()
        shadow.parent.rmdir()


GIT_GUARD = """
module.exports = {
  beforeToolExecute: function (ctx, call) {
    if (call.name === "mcp__git__git_commit") return { allow: false, reason: "no commits from agents" };
  },
};
"""


def git(repository, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repository), *args], capture_output=True, text=True, check=True,
                          timeout=30).stdout.strip()


def test_a_refused_call_never_reaches_the_server_the_repository_is_unchanged(tmp_path, sandbox):
    repository = tmp_path / "repository"
    repository.mkdir()
    git(repository, "init", "-q", "-b", "main")
    git(repository, "config", "user.email", "t@example.test")
    git(repository, "config", "user.name", "T")
    (repository / "a.txt").write_text("one\n")
    git(repository, "add", "a.txt")
    git(repository, "commit", "-q", "-m", "first")
    (repository / "b.txt").write_text("two\n")
    git(repository, "add", "b.txt")
    setup = Home(tmp_path, {"git": git_server(repository)}, sandbox)
    try:
        guard = setup.hook("guard", GIT_GUARD)
        commit = ("mcp__git__git_commit", {"repo_path": str(repository), "message": "by the agent"})
        refused, ui = setup.run(["mcp__git"], [commit], hooks=[guard])
        assert results(refused) == [("no commits from agents", True)]
        assert git(repository, "rev-list", "--count", "HEAD") == "1"
        assert git(repository, "diff", "--cached", "--name-only") == "b.txt"  # still staged, never committed
        allowed, _ = setup.run(["mcp__git"], [commit])  # the same call without the hook: the server commits
        assert not results(allowed)[0][1], results(allowed)
        assert git(repository, "rev-list", "--count", "HEAD") == "2"
        assert git(repository, "log", "-1", "--format=%s") == "by the agent"
    finally:
        setup.rienda.close()


CONFIRMING = """
module.exports = {
  beforeToolExecute: function (ctx, call) {
    if (call.name.indexOf("mcp__lab__") === 0 && !ctx.confirm({ title: "MCP call", body: call.name }))
      return { allow: false, reason: "the user said no" };
  },
};
"""


def test_a_hooks_confirm_gates_an_mcp_call_and_a_denied_call_is_not_made(shared):
    gate = shared.hook("confirming", CONFIRMING)
    before = traces(shared.lab, "calls")
    denied, _ = shared.run(["mcp__lab__double"], [("mcp__lab__double", {"n": 5})], hooks=[gate],
                           ui=NonInteractiveUI(auto_approve=False))
    assert results(denied) == [("the user said no", True)]
    assert traces(shared.lab, "calls") == before
    allowed, ui = shared.run(["mcp__lab__double"], [("mcp__lab__double", {"n": 5})], hooks=[gate],
                             ui=NonInteractiveUI(auto_approve=True))
    assert results(allowed) == [("10", False)]
    assert traces(shared.lab, "calls") == [*before, "5"]
    assert [(e.title, e.body, e.answer) for e in ui.events if e.type == "confirm"] == [
        ("MCP call", "mcp__lab__double", True)]


REWRITER = """
module.exports = {
  beforeToolExecute: function (ctx, call) {
    ctx.log(JSON.stringify(call));
    if (call.name === "mcp__time__get_current_time") return { arguments: { timezone: "UTC" } };
    if (call.name === "mcp__lab__double") return { arguments: { n: "three" } };
  },
  afterToolExecute: function (ctx, call, result) {
    if (call.name === "mcp__time__convert_time") return { text: result.text.toUpperCase(), isError: false };
  },
};
"""


def test_before_tool_execute_sees_the_mcp_call_and_its_rewrite_is_what_the_server_gets(shared):
    hook = shared.hook("rewriter", REWRITER)
    result, ui = shared.run(["mcp__time"], [("mcp__time__get_current_time", {"timezone": "Mars/Olympus_Mons"})],
                            hooks=[hook])
    [(text, is_error)] = results(result)
    assert not is_error and json.loads(text)["timezone"] == "UTC"
    [seen] = [json.loads(e.text) for e in ui.events if isinstance(e, Log) and e.source.startswith("hook:")]
    call_id = result.tool_calls[0][0].id
    assert seen == {"id": call_id, "name": "mcp__time__get_current_time", "arguments": {"timezone": "Mars/Olympus_Mons"}}


def test_after_tool_execute_rewrites_an_mcp_result(shared):
    hook = shared.hook("rewriter", REWRITER)
    arguments = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Mars/Olympus_Mons"}
    result, _ = shared.run(["mcp__time"], [("mcp__time__convert_time", arguments)], hooks=[hook])
    [(text, is_error)] = results(result)
    assert "INVALID TIMEZONE" in text and not is_error  # the server said isError; the hook decided otherwise


def test_arguments_are_checked_against_the_input_schema_after_the_hooks_and_the_server_is_not_called(shared):
    hook = shared.hook("rewriter", REWRITER)
    before = traces(shared.lab, "calls")
    result, _ = shared.run(["mcp__lab__double"], [("mcp__lab__double", {"n": 3})], hooks=[hook])
    assert results(result) == [("invalid arguments for mcp__lab__double: field 'n': 'three' is not of type 'integer'",
                                True)]
    assert traces(shared.lab, "calls") == before


def test_the_servers_is_error_and_every_kind_of_content_reach_the_model(shared):
    ui = NonInteractiveUI()
    mars = shared.rienda.call_tool("mcp__time__get_current_time", {"timezone": "Mars/Olympus_Mons"}, ui)
    assert mars.is_error and "Invalid timezone" in mars.text
    assert shared.rienda.call_tool("mcp__lab__picture", {}, ui).text == "a red dot\n[image: image/png, 70 bytes]"
    assert shared.rienda.call_tool("mcp__lab__documents", {}, ui).text == (
        "[resource file:///notes.txt (text/plain): 12 characters]\n[resource link: file:///other.txt (other.txt)]")


def test_an_mcp_result_is_capped_at_256_kib_like_every_result(shared):
    result = shared.rienda.call_tool("mcp__lab__big", {"kib": 300}, NonInteractiveUI())
    assert len(result.text.encode()) <= OUTPUT_CAP
    assert result.text.endswith("[rienda: output cut at 256 KiB]") and result.text.startswith("éé")


DOUBLER_AUDIT = """
module.exports = {
  afterToolExecute: function (ctx, call, result) { return { text: call.name + " said " + result.text }; },
};
"""


def test_replay_runs_a_recorded_mcp_call_through_the_hooks_and_the_server_again(shared):
    hook = shared.hook("doubler-audit", DOUBLER_AUDIT)
    result, _ = shared.run(["mcp__lab__double"], [("mcp__lab__double", {"n": 7})], hooks=[hook])
    assert results(result) == [("mcp__lab__double said 14", False)]
    calls = len(traces(shared.lab, "calls"))
    report = shared.rienda.replay(result.session_id, run_tools=True)
    assert not report.changed, report.lines()
    assert len(traces(shared.lab, "calls")) == calls + 1  # the server was called again
