"""The documentation's own examples, as written, through real V8 (T24, H22).

The examples live in ``examples/home`` (a RIENDA_HOME a newcomer can point at). Only one
edit is made to a doc example here: the GitHub release tool's host
``https://api.github.com`` is replaced by a real HTTP server on 127.0.0.1 that answers in
GitHub's shape, since these machines have no internet.
"""

from __future__ import annotations

import datetime
import json
import subprocess

import pytest

from rienda_kernel.engine import CancelToken, Confirm, Diagnostic, NonInteractiveUI, Notify, ToolResult
from rienda_kernel.engine.hooks import ModelResponse
from tests.helpers import paths

EXAMPLES = paths.EXAMPLES


def example(name: str) -> str:
    return (EXAMPLES / name / "index.js").read_text(encoding="utf-8")


WORD_COUNT = example("tools/word-count")
JSON_FIELD = example("tools/json-field")
PUBLISH = example("tools/publish")
LATEST_RELEASE = example("tools/latest-release")
GUARD = example("hooks/guard")
DATE = example("hooks/date")
REDACT = example("hooks/redact")
HTTPS = example("hooks/https")
UPPER = example("hooks/upper")


# -- tools (T24) -----------------------------------------------------------------------------
def test_T24_word_count(rig):
    rig.write_tool("word-count", WORD_COUNT)
    (rig.workdir / "notes.txt").write_text("  the quick brown\nfox jumps over\tthe lazy dog \n")
    assert rig.tool("word-count", {"path": "notes.txt"}) == ToolResult("9")


def test_T24_json_field(rig):
    rig.write_tool("json-field", JSON_FIELD)
    (rig.workdir / "package.json").write_text(json.dumps({"name": "rienda", "version": "0.1.0", "tags": ["a", "b"]}))
    assert rig.tool("json-field", {"path": "package.json", "field": "version"}) == ToolResult('"0.1.0"')
    assert rig.tool("json-field", {"path": "package.json", "field": "tags"}) == ToolResult('["a","b"]')


@pytest.fixture
def git_clone(rig, tmp_path):
    """The workdir as a clone of a local bare repository with one unpushed commit."""
    def git(*args, cwd=rig.workdir):
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)

    origin = tmp_path / "origin.git"
    git("init", "--bare", "-b", "main", str(origin), cwd=tmp_path)
    git("init", "-b", "main")
    git("remote", "add", "origin", str(origin))
    (rig.workdir / "README").write_text("hello")
    git("add", "README")
    git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-m", "first")
    git("push", "-u", "origin", "main")
    (rig.workdir / "README").write_text("hello again")
    git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-am", "second")
    return origin


def _origin_head(origin):
    return subprocess.run(["git", "--git-dir", str(origin), "log", "--format=%s", "-1"],
                          check=True, capture_output=True, text=True).stdout.strip()


def test_T24_publish_asks_then_pushes(rig, git_clone):
    rig.write_tool("publish", PUBLISH)
    rig.ui = NonInteractiveUI(auto_approve=True)
    assert rig.tool("publish", {}) == ToolResult("pushed")
    assert _origin_head(git_clone) == "second"
    assert rig.events(Confirm)[0].title == "Publish"


def test_T24_publish_cancelled_by_the_user_does_not_push(rig, git_clone):
    rig.write_tool("publish", PUBLISH)
    rig.ui = NonInteractiveUI(auto_approve=False)
    assert rig.tool("publish", {}) == ToolResult("cancelled by the user", True)
    assert _origin_head(git_clone) == "first"


def test_T24_publish_reports_git_failure_as_an_error(rig):
    rig.write_tool("publish", PUBLISH)
    rig.ui = NonInteractiveUI(auto_approve=True)
    result = rig.tool("publish", {})
    assert result.is_error
    assert "not a git repository" in result.text.lower()


def test_T24_latest_release_via_http(rig, http_server):
    rig.write_tool("latest-release", LATEST_RELEASE.replace("https://api.github.com", http_server.base))
    assert rig.tool("latest-release", {"repo": "rienda/rienda"}) == ToolResult("v1.4.2")
    assert rig.tool("latest-release", {"repo": "nobody/nothing"}) == ToolResult("HTTP 404", True)
    assert [r["path"] for r in http_server.requests] == ["/repos/rienda/rienda/releases/latest",
                                                         "/repos/nobody/nothing/releases/latest"]


# -- hooks (H22) ---------------------------------------------------------------------------------
@pytest.mark.parametrize("auto_approve", [False, True])
def test_H22_guard_confirms_rm_rf(rig, auto_approve):
    rig.write_hook("guard", GUARD)
    rig.ui = NonInteractiveUI(auto_approve=auto_approve)
    chain = rig.chain("guard")
    gate = chain.before_tool_execute("c1", "shell", {"command": "rm -rf build/"}, CancelToken())
    assert gate.allowed is auto_approve
    if not auto_approve:
        assert gate.refusal() == ToolResult("refused by the user", True)
    assert rig.events(Confirm) == [Confirm("hook:guard.beforeToolExecute", "Dangerous command", "rm -rf build/",
                                           auto_approve, "auto-approve" if auto_approve else "default-deny")]
    harmless = chain.before_tool_execute("c2", "shell", {"command": "ls -la"}, CancelToken())
    assert harmless.allowed and len(rig.events(Confirm)) == 1


def test_H22_audit_after_run_notifies(rig):
    rig.write_hook("guard", GUARD)
    rig.chain("guard").after_run("end_turn", CancelToken())
    assert rig.events(Notify) == [Notify("hook:guard.afterRun", "rienda", "run finished: end_turn")]


def test_H22_date_injection(rig):
    rig.write_hook("date", DATE)
    utc_today = lambda: datetime.datetime.now(datetime.timezone.utc).date().isoformat()  # noqa: E731
    before = utc_today()
    system = rig.chain("date").before_model_request("You are careful.", "m", [], CancelToken())
    after = utc_today()  # the hook ran between the two: across midnight it may give either
    assert system in {f"You are careful.\n\nToday is {day}." for day in (before, after)}


def test_H22_card_number_redaction(rig):
    rig.write_hook("redact", REDACT)
    out = rig.chain("redact").after_model_response(
        ModelResponse("Card 4111111111111111, order 12345.", "thinking about 4111111111111111"), CancelToken())
    assert out.text == "Card [redacted], order 12345."
    assert out.thinking == "thinking about 4111111111111111"


def test_H22_https_rewrite(rig):
    rig.write_hook("https", HTTPS)
    chain = rig.chain("https")
    assert chain.before_tool_execute("c", "http", {"url": "http://example.org/a", "method": "GET"},
                                     CancelToken()).arguments == {"url": "https://example.org/a", "method": "GET"}
    assert chain.before_tool_execute("c", "read", {"path": "http://x"}, CancelToken()).arguments == {"path": "http://x"}


def test_H22_upper_casing(rig):
    rig.write_hook("upper", UPPER)
    out = rig.chain("upper").after_tool_execute("c", "read", {}, ToolResult("quiet words", True), CancelToken())
    assert out == ToolResult("QUIET WORDS", True)
    assert rig.events(Diagnostic) == []
