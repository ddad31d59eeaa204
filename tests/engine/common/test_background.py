"""A warm-up never outlives the process: a process that ends while one is still working
waits for it at exit, so the interpreter never finalizes under a thread inside native
code (the HTTP client's CA certificates load in OpenSSL: a quick `rienda run` exited by
SIGSEGV or SIGABRT). Each test makes the warm-up slow and ends the process at once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# The warm-up's work made slow (0.5 s, then a line in a file): a daemon thread would be
# killed at exit before it wrote the line.
SLOW_CLIENT = """
import sys, time, httpx
from rienda_kernel.engine import http
made = httpx.Client
def slow_client(*args, **kwargs):
    time.sleep(0.5)
    client = made(*args, **kwargs)
    open(sys.argv[1], "a").write("client made\\n")
    return client
http.httpx.Client = slow_client
"""


def run_and_exit(code: str, marker: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, str(marker)], capture_output=True, text=True, timeout=120)


def test_the_http_warm_up_finishes_before_the_process_exits(tmp_path):
    marker = tmp_path / "marker"
    done = run_and_exit(SLOW_CLIENT + "http.warm_http()\n", marker)
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "client made\n"


def test_a_background_import_finishes_before_the_process_exits(tmp_path):
    module = tmp_path / "slow_module.py"
    module.write_text("import sys, time\ntime.sleep(0.5)\nopen(sys.argv[1], 'a').write('imported\\n')\n")
    marker = tmp_path / "marker"
    code = f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nfrom rienda_kernel.engine import prewarm\nprewarm('slow_module')\n"
    done = run_and_exit(code, marker)
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "imported\n"


@pytest.mark.parametrize("model", ["openai/gpt-4o", "anthropic/claude-sonnet-4-5"])
def test_rienda_run_that_ends_at_once_waits_for_its_http_warm_up_and_keeps_its_exit_code(tmp_path, model):
    """The real command: a run whose HTTP provider is made (which starts the client's
    making) and refused at once, before any request (no API key: exit 1), ends while the
    client is still being made."""
    marker = tmp_path / "marker"
    argv = ["--home", str(tmp_path), "run", "--model", model, "hello"]
    code = SLOW_CLIENT + f"from rienda_kernel.cli import main\nsys.exit(main({argv!r}))\n"
    env = {name: value for name, value in os.environ.items() if not name.endswith("_API_KEY")}
    done = subprocess.run([sys.executable, "-c", code, str(marker)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env=env)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("rienda: no API key"), done.stderr
    assert marker.read_text() == "client made\n"
