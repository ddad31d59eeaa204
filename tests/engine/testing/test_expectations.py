"""Expectations files (``<id>.expect.yaml``): their format, its errors, and replay honouring
them for sessions in the home (``rienda replay``) as the pytest plugin does for folders."""

from __future__ import annotations

import pytest

from rienda_kernel.engine.errors import ConfigError
from rienda_kernel.engine.testing.expectations import load_expectations
from rienda_kernel.engine.testing.replay import replay_session

from ...helpers.recorded_session import record_session


@pytest.mark.parametrize("text, message", [
    ("- a list\n", "expected a mapping with 'calls'"),
    ("confirm: maybe\n", "confirm must be allow or deny, got 'maybe'"),
    ("calls: {id: x}\n", "calls must be a list of entries"),
    ("calls:\n  - refused: true\n", "calls[0] of {path}: match must be a mapping of id, tool, arguments"),
    ("calls:\n  - match: {name: shell}\n    refused: true\n", "calls[0] of {path}: match: unknown key 'name'; the keys are id, tool, arguments"),
    ("calls:\n  - match: {id: a}\n", "calls[0] of {path}: say what to expect: refused, allowed, arguments or result"),
    ("calls:\n  - match: {id: a}\n    refused: true\n    allowed: true\n", "give refused or allowed, not both"),
    ("calls:\n  - match: {id: a}\n    refused: 3\n", "refused must be true or the name of the hook that refuses"),
    ("calls:\n  - match: {id: a}\n    refused: true\n    arguments: {}\n", "a refused call has no arguments or result to expect"),
    ("calls:\n  - match: {id: a}\n    allowed: true\n    reason: x\n", "reason (a string) goes with refused"),
    ("calls:\n  - match: {id: a}\n    result: {txt: x}\n", "result must be the text, or a mapping with text"),
    ("calls:\n  - match: {arguments: {command: '('}}\n    refused: true\n",
     "calls[0] of {path}: match.arguments.command: not a regular expression"),
    ("calls:\n  - match: {id: a\n", "{path}:2: malformed YAML: a flow mapping that starts here is not closed"),
])
def test_a_malformed_file_names_the_file_entry_and_key(tmp_path, text, message):
    path = tmp_path / "s.expect.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_expectations(path)
    assert message.format(path=path) in str(caught.value)


def test_matchers_select_by_id_tool_and_argument_patterns(tmp_path):
    path = tmp_path / "s.expect.yaml"
    path.write_text("calls:\n"
                    "  - match: {tool: shell, arguments: {command: 'rm\\s+-rf', force: true}}\n    refused: guard\n"
                    "  - match: {arguments: {paths: 'notes'}}\n    allowed: true\n")
    expected = load_expectations(path)
    rm, listing = expected.calls
    assert expected.for_call("c1", "shell", {"command": "rm  -rf /", "force": True}) is rm
    assert expected.for_call("c1", "shell", {"command": "rm -rf /", "force": False}) is None
    assert expected.for_call("c1", "http", {"command": "rm -rf /", "force": True}) is None
    assert expected.for_call("c2", "read", {"paths": ["notes.txt"]}) is listing  # non-strings match as JSON
    assert expected.for_call("c3", "read", "not an object") is None


def test_replay_of_a_home_session_honours_the_file_beside_it(rig):
    rienda, result = record_session(rig)  # recorded with no hooks
    sidecar = rig.home / "sessions" / f"{result.session_id}.expect.yaml"
    sidecar.write_text("calls:\n  - match: {arguments: {text: 'rm -rf'}}\n    refused: deny-rm\n    reason: no rm\n")
    report = replay_session(rienda, result.session_id, hooks=["deny-rm"])
    assert not report.changed, report.lines()
    assert report.lines()[1:4] == [f"expectations: {sidecar}", "= echo [call_1_1]: same as recorded",
                                   "= echo [call_1_2]: as expected"]
    assert report.hook_calls == 2
    broken = replay_session(rienda, result.session_id, hooks=[])
    assert broken.calls[1].differences == ["expected refused by hook deny-rm, but it is allowed now"]


def test_a_refusal_by_another_hook_or_for_another_reason_is_reported(rig):
    rienda, result = record_session(rig)
    sidecar = rig.home / "sessions" / f"{result.session_id}.expect.yaml"
    sidecar.write_text("calls:\n  - match: {id: call_1_2}\n    refused: guard\n")
    assert replay_session(rienda, result.session_id, hooks=["deny-rm"]).calls[1].differences == [
        "expected refused by hook guard, but refused by hook deny-rm"]
    sidecar.write_text("calls:\n  - match: {id: call_1_2}\n    refused: true\n    reason: never\n")
    assert replay_session(rienda, result.session_id, hooks=["deny-rm"]).calls[1].differences == [
        "expected a refusal reason containing 'never', got 'no rm -rf'"]
    sidecar.write_text("calls:\n  - match: {id: call_1_2}\n    allowed: true\n")
    assert replay_session(rienda, result.session_id, hooks=["deny-rm"]).calls[1].differences == [
        "expected allowed, but now refused by hook deny-rm: no rm -rf"]
