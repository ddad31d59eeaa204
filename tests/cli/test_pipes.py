"""``rienda`` with its output in a real pipe whose reader goes away (``| head -1``): no
traceback, nothing after the pipe closed, exit 141 (what a shell shows for SIGPIPE); a
run is stopped like an interrupt, so afterRun runs and the session gets its run_end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import yaml

AUDIT = 'module.exports = { afterRun(ctx, e) { ctx.file.write("after-run.txt", e.reason); } };'
CLOSED = 141


@pytest.fixture
def setup(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    (home / "hooks" / "audit").mkdir(parents=True)
    (home / "hooks" / "audit" / "index.js").write_text(AUDIT)
    (home / "agents").mkdir()
    (home / "agents" / "talk.md").write_text(textwrap.dedent("""\
        ---
        description: Talks.
        model: scripted/script.yaml
        tools: []
        hooks: [audit]
        ---
        You talk.
        """))
    work.mkdir()
    # Long enough that the reader has gone well before the run ends (a 10 s stream).
    (work / "script.yaml").write_text(yaml.safe_dump([{"text": " ".join(["word"] * 500), "chunk_delay_ms": 20}]))
    return home, work


def command(home, *args):
    return [sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), *args]


def records(home):
    [session] = (home / "sessions").glob("*.jsonl")
    return [json.loads(line) for line in session.read_text().splitlines()]


def piped_into_head(home, work, *args):
    """``rienda ARGS | head -1`` in a shell: (rienda's exit status, what head printed,
    what rienda printed on stderr)."""
    line = " ".join(f"'{word}'" for word in command(home, *args))
    done = subprocess.run(["bash", "-c", f"set -o pipefail; {line} 2>stderr.txt | head -1; echo \"${{PIPESTATUS[0]}}\""],
                          cwd=work, capture_output=True, text=True, timeout=120, env=os.environ)
    *shown, status = done.stdout.splitlines()
    return int(status), shown, (work / "stderr.txt").read_text()


def into_a_closed_pipe(home, work, *args):
    """``rienda ARGS`` writing into a pipe whose reader closed before it started."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(command(home, *args), cwd=work, stdout=write, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    finally:
        os.close(write)


def test_run_json_into_head_stops_the_run_and_the_session_and_after_run_see_it(setup):
    home, work = setup
    status, shown, err = piped_into_head(home, work, "run", "--agent", "talk", "--json", "go")
    assert status == CLOSED
    assert [json.loads(line)["type"] for line in shown] == ["run_start"]
    assert "Traceback" not in err
    assert err.splitlines()[-1].startswith("rienda: standard output was closed, so the run was stopped; session ")
    assert (work / "after-run.txt").read_text() == "interrupted"
    assert records(home)[-1] == {"type": "run_end", "reason": "interrupted", "error": None}


def test_run_into_a_closed_pipe_is_one_line_and_the_session_ends(setup):
    home, work = setup
    done = into_a_closed_pipe(home, work, "run", "--agent", "talk", "go")
    assert done.returncode == CLOSED
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith("rienda: standard output was closed, so the run was stopped")
    assert records(home)[-1]["type"] == "run_end"
    assert (work / "after-run.txt").read_text() == "interrupted"


@pytest.mark.parametrize("listing", [["sessions"], ["show", "last"], ["tools"], ["agents"], ["hooks"],
                                     ["script", "last"], ["replay", "last"]])
def test_listings_into_a_closed_pipe_end_quietly_with_141(setup, listing):
    home, work = setup
    (work / "script.yaml").write_text(yaml.safe_dump([{"text": "hello"}]))
    assert subprocess.run(command(home, "run", "--agent", "talk", "hi"), cwd=work, capture_output=True,
                          timeout=120).returncode == 0
    done = into_a_closed_pipe(home, work, *listing)
    assert (done.returncode, done.stderr) == (CLOSED, "")
