"""A run is bounded: ``max_turns`` model turns, then ``error``, with afterRun told.

Through the real loop (scripted model, a real tool in V8, a real hook, the session file),
and through ``rienda run --max-turns`` as a process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

from rienda_kernel.engine import Log, NonInteractiveUI
from rienda_kernel.engine.runtime.rienda import DEFAULT_MAX_TURNS, Rienda

ECHO = """module.exports = { description: "Echoes.", parameters: { type: "object" },
  execute(ctx, args) { return "again"; } };"""
AUDIT = 'module.exports = { afterRun(ctx, e) { ctx.log("afterRun " + e.reason); } };'
FOREVER = [{"text": f"turn {n}", "tool_calls": [{"name": "echo", "arguments": {}}]} for n in range(1, 80)]


def setup(rig, front_matter: str = "", config: str = "") -> Rienda:
    rig.write_tool("echo", ECHO)
    rig.write_hook("audit", AUDIT)
    (rig.home / "agents").mkdir(exist_ok=True)
    (rig.home / "agents" / "looper.md").write_text(
        f"---\nmodel: scripted/script.yaml\ntools: [echo]\nhooks: [audit]\n{front_matter}---\nGo on.\n")
    (rig.workdir / "script.yaml").write_text(yaml.safe_dump(FOREVER))
    if config:
        (rig.home / "config.yaml").write_text(config)
    return Rienda(home=rig.home, workdir=rig.workdir, sandbox=rig.sandbox)


def assistant_turns(rig, session_id: str) -> int:
    lines = (rig.home / "sessions" / f"{session_id}.jsonl").read_text().splitlines()
    return sum(1 for line in lines if json.loads(line).get("role") == "assistant")


def test_a_model_that_keeps_calling_tools_stops_at_the_agents_max_turns(rig):
    engine = setup(rig, "max_turns: 3\n")
    ui = NonInteractiveUI()
    result = engine.conversation("looper").run("loop", ui)
    assert result.reason == "error"
    assert "stopped after 3 model turns" in result.error
    assert "--max-turns" in result.error and "max_turns:" in result.error
    assert assistant_turns(rig, result.session_id) == 3
    assert sum(1 for m in result.messages if m.role == "tool") == 3  # each turn's call ran and was answered
    assert [e.text for e in ui.events if isinstance(e, Log)] == ["afterRun error"]
    last = json.loads((rig.home / "sessions" / f"{result.session_id}.jsonl").read_text().splitlines()[-1])
    assert last["type"] == "run_end" and last["reason"] == "error" and "max_turns" in last["error"]


def test_a_final_answer_on_the_last_allowed_turn_ends_the_run_normally(rig):
    engine = setup(rig, "max_turns: 2\n")
    (rig.workdir / "script.yaml").write_text(yaml.safe_dump([FOREVER[0], {"text": "done"}]))
    result = engine.conversation("looper").run("once", NonInteractiveUI())
    assert (result.reason, result.text) == ("end_turn", "done")


def test_config_sets_the_default_and_the_conversation_overrides_both(rig):
    engine = setup(rig, config="max_turns: 4\n")
    result = engine.conversation("looper").run("loop", NonInteractiveUI())
    assert "stopped after 4 model turns" in result.error
    conversation = engine.conversation("looper")
    conversation.max_turns = 2
    assert "stopped after 2 model turns" in conversation.run("loop", NonInteractiveUI()).error


def test_the_default_bound_is_50(rig):
    engine = setup(rig)
    result = engine.conversation("looper").run("loop", NonInteractiveUI())
    assert DEFAULT_MAX_TURNS == 50
    assert result.reason == "error" and assistant_turns(rig, result.session_id) == 50


def test_a_bad_max_turns_in_config_is_an_error_naming_the_file(rig):
    engine = setup(rig, config="max_turns: lots\n")
    result = engine.conversation("looper").run("loop", NonInteractiveUI())
    assert result.reason == "error" and str(rig.home / "config.yaml") in result.error
    assert not (rig.home / "sessions").exists()


def test_rienda_run_max_turns_overrides_the_agent(rig):
    setup(rig, "max_turns: 10\n")
    env = {**os.environ, "RIENDA_HOME": str(rig.home)}
    done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "run", "--agent", "looper", "--max-turns", "2",
                           "loop"], cwd=rig.workdir, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "stopped after 2 model turns" in done.stderr
    bad = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "run", "--max-turns", "0", "x"],
                         cwd=rig.workdir, env=env, capture_output=True, text=True, timeout=60)
    assert (bad.returncode, bad.stderr) == (2, "rienda: run: --max-turns must be a positive whole number, got '0'; "
                                               "rienda run --help shows the usage\n")
