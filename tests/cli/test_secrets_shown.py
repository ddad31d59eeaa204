"""Everything ``rienda`` prints passes the scrubber, whoever put it together: a key pasted into
an agent file shows as [redacted] in ``rienda agents``' listing and diagnostics, as it does
in ``rienda run``'s. A real secret in the environment."""

from __future__ import annotations

import os
import subprocess
import sys

KEY = "sk-live-pasted-0123456789"
AGENT = f"---\ndescription: uses {KEY}\nmodel: scripted/script.yaml\ntools: [bad name {KEY}]\n---\nx\n"


def test_a_key_pasted_into_an_agent_file_never_reaches_the_terminal(tmp_path):
    home = tmp_path / "home"
    (home / "agents").mkdir(parents=True)
    (home / "agents" / "pasted.md").write_text(AGENT)
    (home / "agents" / "described.md").write_text(f"---\ndescription: uses {KEY}\nmodel: scripted/s.yaml\n---\nx\n")
    env = {**os.environ, "MY_API_KEY": KEY}
    for args in (["agents"], ["run", "--agent", "pasted", "hi"], ["run", "--agent", "described", "--json", "hi"],
                 ["hook", "nope", "afterRun"]):
        done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), *args], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120)
        assert "Traceback" not in done.stderr
        assert KEY not in done.stdout + done.stderr, args
    listed = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), "agents"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert "uses [redacted]" in listed.stdout and "'bad name [redacted]' is not a valid name" in listed.stderr
