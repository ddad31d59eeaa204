"""config.yaml is read and parsed once per run (and per gate decision) into one typed
Config, and checking it has no side effect: the MCP servers' secrets become the process's
only where config.yaml is read to be used. Real files, a real run, a real gate decision."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from rienda_kernel.engine import Rienda, check_config, read_config, scrub_text

REPO = Path(__file__).resolve().parents[2]

CONFIG = """\
default_model: scripted/script.yaml
max_turns: 4
max_depth: 1
compaction:
  reserve: 100
  model: scripted/summary.yaml
gate:
  agent: gate
  timeout: 30
mcp_servers:
  time:
    command: python
    args: [-m, mcp_server_time]
    env: {{SERVICE_TOKEN: {token}}}
  docs:
    url: https://example.test/mcp
    headers: {{X-Team: {header}}}
"""

# Run in a process of its own: an audit hook sees every open() of config.yaml and a profile
# function every call of the parsers (nothing replaced: the real code runs), around one run
# of a conversation and one rienda gate decision.
COUNTING = r"""
import collections, json, sys, threading
from pathlib import Path

home, work = Path(sys.argv[1]), Path(sys.argv[2])
opened = collections.Counter()

def audit(event, args):
    if event == "open" and str(args[0]).endswith("config.yaml"):
        opened.update([event])

sys.addaudithook(audit)

from rienda_kernel.engine import GateOptions, NonInteractiveUI, Rienda, answer_hook_event
from rienda_kernel.engine.home import config
from rienda_kernel.engine.sessions.compaction import settings as compaction
from rienda_kernel.engine.tools.mcp import settings as mcp

parsers = {config.check_config.__code__: "check_config", compaction.compaction_settings.__code__: "compaction",
           mcp.parse_mcp_servers.__code__: "mcp_servers", config._parse.__code__: "yaml"}
calls = collections.Counter()

def profile(frame, event, arg):
    if event == "call" and frame.f_code in parsers:
        calls[parsers[frame.f_code]] += 1

def counted(work_once):
    opened.clear()
    calls.clear()
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        outcome = work_once()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return {"opened": opened["open"], **calls, "outcome": outcome}

engine = Rienda(home=home, workdir=work)
run = counted(lambda: engine.conversation("a").run("hi", NonInteractiveUI()).reason)
engine.close()
event = json.dumps({"session_id": "s1", "cwd": str(work), "hook_event_name": "PreToolUse", "tool_name": "Bash",
                    "tool_input": {"command": "ls"}, "tool_use_id": "t1"}).encode()
gate = counted(lambda: answer_hook_event("claude-code", event, GateOptions(home=str(home))).answer)
print(json.dumps({"run": run, "gate": gate}))
"""


def home_with(tmp_path: Path, token: str = "svc-token-0123456789", header: str = "hdr-value-0123456789") -> Path:
    home = tmp_path / "home"
    (home / "agents").mkdir(parents=True)
    (home / "config.yaml").write_text(CONFIG.format(token=token, header=header))
    (home / "agents" / "a.md").write_text("---\nmodel: scripted/script.yaml\n---\nBe brief.\n")
    (home / "agents" / "gate.md").write_text("---\nmodel: scripted/script.yaml\n---\nDecides.\n")
    return home


def test_one_run_and_one_gate_decision_each_read_and_parse_config_yaml_once(tmp_path):
    home, work = home_with(tmp_path), tmp_path / "work"
    work.mkdir()
    (work / "script.yaml").write_text("- text: Hello.\n")
    done = subprocess.run([sys.executable, "-c", COUNTING, str(home), str(work)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=work)
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout.splitlines()[-1])
    once = {"opened": 1, "check_config": 1, "yaml": 1, "compaction": 1, "mcp_servers": 1}
    assert counts["run"] == {**once, "outcome": "end_turn"}
    assert counts["gate"] == {**once, "outcome": {}}  # no hook objected: the agent decides as usual


def test_checking_config_yaml_registers_no_secret_and_reading_it_to_use_it_does(tmp_path):
    token, header = f"svc-{uuid.uuid4().hex}", f"hdr-{uuid.uuid4().hex}"
    home = home_with(tmp_path, token, header)
    config = check_config(home)
    assert set(config.mcp_servers) == {"time", "docs"} and config.mcp_servers["time"].secrets == (token,)
    assert scrub_text(f"{token} {header}") == f"{token} {header}"  # the process's scrubber is as it was
    Rienda(home=home).config()  # read to be used: from now on, no output shows them
    assert scrub_text(f"{token} {header}") == "[redacted] [redacted]"


def test_read_config_is_a_reading_to_use_and_registers_the_secrets(tmp_path):
    token, header = f"svc-{uuid.uuid4().hex}", f"hdr-{uuid.uuid4().hex}"
    read_config(home_with(tmp_path, token, header))
    assert scrub_text(f"{token} {header}") == "[redacted] [redacted]"


def test_the_servers_a_catalog_may_start_are_secret_from_then_on_whatever_read_the_config(tmp_path):
    token, header = f"svc-{uuid.uuid4().hex}", f"hdr-{uuid.uuid4().hex}"
    home = home_with(tmp_path, token, header)
    engine = Rienda(home=home, workdir=tmp_path)
    try:
        engine.catalog(tools=[], hooks=[], config=check_config(home))  # no server wanted: none starts
    finally:
        engine.close()
    assert scrub_text(f"{token} {header}") == "[redacted] [redacted]"


def test_the_parts_are_typed_and_the_raw_settings_only_reach_ctx_config(tmp_path):
    config = check_config(home_with(tmp_path))
    assert (config.default_model, config.confirm, config.limits.max_turns, config.limits.max_depth) == (
        "scripted/script.yaml", None, 4, 1)
    assert (config.compaction.reserve, config.compaction.model) == (100, "scripted/summary.yaml")
    assert (config.gate.agent, config.gate.timeout, config.gate.confirm, config.gate.unknown) == ("gate", 30, "ask", ())
    assert config.mcp_servers["docs"].where == f"{tmp_path / 'home' / 'config.yaml'}:15"  # for messages
    shown = config.for_extensions()
    assert shown["mcp_servers"]["docs"]["headers"] == {"X-Team": "[redacted]"}
    assert config.raw["mcp_servers"]["docs"]["headers"] == {"X-Team": "hdr-value-0123456789"}
    (tmp_path / "home" / "config.yaml").write_text("auto_approve: false\n")
    assert check_config(tmp_path / "home").confirm == "deny"
    (tmp_path / "home" / "config.yaml").write_text("auto_approve: false\nconfirm: allow\n")
    assert check_config(tmp_path / "home").confirm == "allow"

