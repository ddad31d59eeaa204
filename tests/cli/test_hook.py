"""``rienda hook NAME POINT [PAYLOAD]``: one hook point called directly, as a real process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from rienda_kernel.engine import NonInteractiveUI
from rienda_kernel.engine.runtime.rienda import Rienda
from tests.helpers import cli, paths
from tests.helpers.homes import write_agent, write_extension
from tests.helpers.pipes import read_until
from tests.helpers.signals import interruptible

EXAMPLES = paths.EXAMPLES

# One hook on six of the points, each doing what the documentation shows for it.
EVERY_POINT = """module.exports = {
  beforeRun(ctx, e) {
    ctx.log(`started ${e.sessionId} ${e.agentId} ${e.modelId}; ctx ${ctx.session.id} ${ctx.agent.id}`);
  },
  afterRun(ctx, e) { ctx.notify({ title: "run ended", body: e.reason }); },
  beforeModelRequest(ctx, r) { return { system: r.system + " Today is Monday." }; },
  afterModelResponse(ctx, r) { return { text: r.text.replace(/\\b\\d{16}\\b/g, "[card]") }; },
  beforeToolExecute(ctx, call) {
    if (ctx.file.exists("locked")) return { allow: false, reason: "the workdir is locked" };
    return { arguments: { ...call.arguments, url: call.arguments.url.replace("http://", "https://") } };
  },
  afterToolExecute(ctx, call, result) { return { text: call.name + ": " + result.text.toUpperCase() }; },
};
"""


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    for name, source in (("every", EVERY_POINT),
                         ("broken", 'module.exports = {\n  beforeToolExecute(ctx, call) { throw new TypeError("no " + call.name); },\n};'),
                         ("odd", "module.exports = { afterToolExecute: () => 42 };"),
                         ("spin", 'module.exports = { beforeToolExecute(ctx) { ctx.log("spinning"); while (true) {} } };')):
        write_extension(home, "hooks", name, source)
    write_agent(home, "web", ["http"], ["every"], description=None, body="You fetch pages.")
    return home


def hook(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return cli.rienda(home, cwd, "hook", *args)


def as_json(home: Path, *args: str, **kwargs) -> dict:
    done = hook(home, *args, "--json", **kwargs)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


POINTS = [
    ("beforeModelRequest", {"system": "You help."}, "rewrote",
     {"system": {"before_chars": 9, "after_chars": 26}}, {"system": "You help. Today is Monday."}),
    ("afterModelResponse", {"text": "Card 4111111111111111."}, "rewrote",
     {"text": {"before_chars": 22, "after_chars": 12}}, {"text": "Card [card].", "thinking": ""}),
    ("beforeToolExecute", {"name": "http", "arguments": {"url": "http://example.org"}}, "rewrote",
     {"arguments.url": {"before": "http://example.org", "after": "https://example.org"}},
     {"allow": True, "arguments": {"url": "https://example.org"}}),
    ("afterToolExecute", {"call": {"name": "http", "arguments": {}}, "result": {"text": "ok"}}, "rewrote",
     {"text": {"before_chars": 2, "after_chars": 8}}, {"text": "http: OK", "isError": False}),
    ("afterRun", {"reason": "interrupted"}, "none", {}, {"prompt": None}),
]


@pytest.mark.parametrize("point, payload, effect, changes, outcome", POINTS, ids=[p[0] for p in POINTS])
def test_each_point_reports_its_effect_changes_and_outcome(home, tmp_path, point, payload, effect, changes, outcome):
    call = as_json(home, "every", point, json.dumps(payload), "--workdir", str(tmp_path))
    assert (call["effect"], call["changes"], call["outcome"]) == (effect, changes, outcome)
    assert call["ok"] is True and call["duration_ms"] > 0
    assert call["returned"]["kind"] == ("undefined" if effect == "none" else "object")


def test_after_run_shows_its_notice(home):
    call = as_json(home, "every", "afterRun", '{"reason": "error"}')
    assert call["notices"] == [{"title": "run ended", "body": "error"}]


def test_before_run_gets_ctx_and_payload_from_agent_and_session_id(home):
    call = as_json(home, "every", "beforeRun", "--agent", "web", "--session-id", "s-42")
    assert call["payload"] == {"sessionId": "s-42", "agentId": "web", "modelId": "scripted/script.yaml", "prompt": "",
                               "context": ""}
    assert call["logs"] == ["started s-42 web scripted/script.yaml; ctx s-42 web"]
    assert (call["effect"], call["outcome"]) == ("none", {"allow": True, "context": ""})


def test_fields_left_out_get_what_a_run_passes(home):
    """The agent's own system prompt, as beforeModelRequest receives it in a run."""
    call = as_json(home, "every", "beforeModelRequest", "--agent", "web")
    assert call["payload"] == {"system": "You fetch pages.", "model": "scripted/script.yaml", "messages": []}
    assert call["outcome"] == {"system": "You fetch pages. Today is Monday."}


def test_workdir_is_the_ctx_workdir_a_hook_reads(home, tmp_path):
    (tmp_path / "locked").write_text("")
    payload = '{"name": "http", "arguments": {"url": "http://example.org"}}'
    call = as_json(home, "every", "beforeToolExecute", payload, "--workdir", str(tmp_path))
    assert (call["effect"], call["outcome"]) == ("refused", {"allow": False, "reason": "the workdir is locked"})
    elsewhere = as_json(home, "every", "beforeToolExecute", payload, "--workdir", str(tmp_path / ".."))
    assert elsewhere["effect"] == "rewrote"


def test_the_changes_are_the_ones_the_ledger_records_in_a_run(home, tmp_path):
    (tmp_path / "script.yaml").write_text(yaml.safe_dump([
        {"text": "Fetching.", "tool_calls": [{"name": "http", "arguments": {"url": "http://127.0.0.1:9/x"}}]},
        {"text": "Done."}]))
    result = Rienda(home=home, workdir=tmp_path).conversation("web").run("go", NonInteractiveUI())
    lines = (home / "sessions" / f"{result.session_id}.jsonl").read_text().splitlines()
    recorded = next(r for r in map(json.loads, lines)
                    if r["type"] == "hook_decision" and r["point"] == "beforeToolExecute")
    call = as_json(home, "every", "beforeToolExecute", '{"name": "http", "arguments": {"url": "http://127.0.0.1:9/x"}}',
                   "--workdir", str(tmp_path))
    assert call["changes"] == recorded["changes"] and call["effect"] == recorded["effect"] == "rewrote"


def test_the_text_report_says_what_it_returned_and_changed(home, tmp_path):
    done = hook(home, "every", "beforeToolExecute", '{"name": "http", "arguments": {"url": "http://example.org"}}',
                "--workdir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        'every.beforeToolExecute returned {"arguments": {"url": "https://example.org"}} in '
        + done.stdout.split(" in ")[1].split("\n")[0],
        '  rewrote arguments.url: "http://example.org" → "https://example.org"',  # the arrow of every other line
        '  now: {"allow": true, "arguments": {"url": "https://example.org"}}',
    ]


def test_a_throwing_hook_exits_1_with_the_error_and_its_line(home):
    done = hook(home, "broken", "beforeToolExecute", '{"name": "shell"}')
    assert done.returncode == 1
    first = done.stdout.splitlines()[0]
    assert first.startswith("broken.beforeToolExecute threw TypeError: no shell (at ")
    assert "hooks/broken/index.js:2:" in first
    assert "a run reports it and goes on as if the hook returned nothing" in done.stdout
    assert "diagnostic: hook broken threw in beforeToolExecute and was skipped" in done.stderr


def test_a_return_the_point_ignores_exits_1(home):
    done = hook(home, "odd", "afterToolExecute", '{"call": {"name": "x"}, "result": {"text": "t"}}', "--json")
    call = json.loads(done.stdout)
    assert done.returncode == 1
    assert (call["effect"], call["error"], call["returned"]) == ("invalid", "returned number", {"kind": "number", "value": 42})


@pytest.mark.parametrize("payload, message", [
    ('{"name": "http", "argument": {}}', "unknown field 'argument' (did you mean 'arguments'?)"),
    ('{"nam": "http"}', "unknown field 'nam' (did you mean 'name'?)"),  # said before "name is missing"
    ('{"name": "http", "arguments": "rm -rf"}', "field 'arguments': 'rm -rf' is not of type 'object'"),
    ('{"arguments": {}}', "field 'name' is missing"),
    ('{"name": ', "the payload for beforeToolExecute is not valid JSON"),
])
def test_a_payload_that_does_not_fit_the_point_exits_1_naming_the_field(home, payload, message):
    done = hook(home, "every", "beforeToolExecute", payload)
    assert done.returncode == 1 and done.stdout == ""
    assert message in done.stderr
    if "JSON" not in message:
        assert "beforeToolExecute receives {id, name, arguments}" in done.stderr


def test_after_tool_execute_takes_the_call_and_the_result(home):
    done = hook(home, "every", "afterToolExecute", '{"call": {"name": "http"}, "result": {"txt": "x"}}')
    assert done.returncode == 1
    assert "unknown field 'result.txt' (did you mean 'text'?)" in done.stderr


def test_an_unknown_hook_or_point_lists_what_exists(home):
    unknown = hook(home, "nope", "afterRun")
    assert unknown.returncode == 1 and "no usable hook named 'nope'" in unknown.stderr
    assert "hooks: broken, every, odd, spin" in unknown.stderr
    typo = hook(home, "every", "beforeToolExec")
    assert typo.returncode == 1 and "did you mean 'beforeToolExecute'?" in typo.stderr
    missing = hook(home, "odd", "beforeRun")
    assert missing.returncode == 1 and "does not export beforeRun; it handles afterToolExecute" in missing.stderr


def test_the_guard_refuses_rm_rf_unless_yes_answers_its_confirm():
    payload = '{"name": "shell", "arguments": {"command": "rm -rf build"}}'
    denied = as_json(EXAMPLES, "guard", "beforeToolExecute", payload)
    assert denied["confirms"] == [{"title": "Dangerous command", "body": "rm -rf build", "answer": False,
                                   "how": "default-deny"}]
    assert denied["outcome"] == {"allow": False, "reason": "refused by the user"}
    allowed = as_json(EXAMPLES, "guard", "beforeToolExecute", payload, "--yes")
    assert allowed["confirms"][0]["answer"] is True and allowed["confirms"][0]["how"] == "auto-approve"
    assert (allowed["effect"], allowed["outcome"]["allow"]) == ("none", True)


def test_confirms_and_logs_show_on_stderr_as_they_happen():
    done = hook(EXAMPLES, "guard", "beforeToolExecute", '{"name": "shell", "arguments": {"command": "rm -rf /"}}',
                "--yes")
    assert "[hook:guard.beforeToolExecute] confirm 'Dangerous command': allowed (auto-approve)" in done.stderr
    assert "confirm" not in done.stdout


def test_secrets_from_the_environment_never_reach_the_output(home, tmp_path):
    (home / "hooks" / "leak").mkdir()
    (home / "hooks" / "leak" / "index.js").write_text(textwrap.dedent("""\
        module.exports = { beforeModelRequest(ctx, r) {
          ctx.log("key " + ctx.env.MY_API_KEY); return { system: r.system + ctx.env.MY_API_KEY }; } };"""))
    env = {**os.environ, "RIENDA_HOME": str(home), "MY_API_KEY": "sk-very-secret-123"}
    for extra in ([], ["--json"]):
        done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "hook", "leak", "beforeModelRequest", *extra],
                              env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "sk-very-secret-123" not in done.stdout and "[redacted]" in done.stdout


def test_ctrl_c_stops_a_spinning_hook_and_exits_130(home):
    env = {**os.environ, "RIENDA_HOME": str(home)}
    proc = subprocess.Popen(interruptible([sys.executable, "-m", "rienda_kernel.cli", "hook", "spin", "beforeToolExecute",
                                           '{"name": "shell"}']), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        read_until(proc, "stderr", "spinning")  # the hook is in its loop now
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert "rienda: interrupted" in err and out == ""
