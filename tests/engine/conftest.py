"""Fixtures the engine's test folders share."""

from __future__ import annotations

import os
import signal
import textwrap

import pytest
import yaml

from ..helpers.cli import popen_rienda
from ..helpers.processes import alive, wait_for_file


@pytest.fixture
def killed_mid_tool(tmp_path):
    """A session whose `rienda run` was SIGKILLed while its shell tool ran: (home, work, session id)."""
    home, work = tmp_path / "home", tmp_path / "work"
    (home / "agents").mkdir(parents=True)
    work.mkdir()
    (home / "agents" / "busy.md").write_text(textwrap.dedent("""\
        ---
        description: Runs a long command.
        model: scripted/script.yaml
        tools: [shell, read]
        ---
        You run commands.
        """))
    marker = work / "started"
    script = [{"text": "Working.", "tool_calls": [
        {"id": "call_long", "name": "shell", "arguments": {"command": f"echo $$ > {marker}; exec sleep 600"}},
        {"id": "call_after", "name": "read", "arguments": {"path": "notes.txt"}}]}]
    (work / "script.yaml").write_text(yaml.safe_dump(script))
    run = popen_rienda(home, work, "run", "--agent", "busy", "--yes", "work")
    sleeper = None
    try:
        sleeper = int(wait_for_file(marker))
        run.kill()
        run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate(timeout=30)
        if sleeper is not None and alive(sleeper):
            os.kill(sleeper, signal.SIGKILL)  # the command's own process group outlives its killed parent
    assert run.returncode == -signal.SIGKILL
    (session,) = (home / "sessions").glob("*.jsonl")
    return home, work, session.stem
