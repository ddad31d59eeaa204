"""MCP servers that break the protocol on stdout, through the real CLI: no traceback ever,
a reply that cannot be read ends its request at once naming the server, a lone surrogate
becomes U+FFFD. Each wait is bounded by the subprocess's timeout, well under the servers'
start bound (600 s), so a request left waiting fails the test instead of passing late."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers.mcp_servers import write_config
from ..helpers.vendor_streams.openai import text_stream, tool_stream
from ..helpers.vendor_wire import serving
from ..helpers.vendors import fake_openai

ROGUE = Path(__file__).parents[1] / "helpers" / "mcp_rogue.py"


@pytest.fixture
def home(tmp_path):
    def configured(how: str) -> Path:
        write_config(tmp_path, {"rogue": {"command": sys.executable, "args": [str(ROGUE)], "env": {"ROGUE": how},
                                          "start_timeout": 600}})
        return tmp_path
    return configured


def rienda(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "--home", str(home), *args], cwd=home,
                          env=os.environ, capture_output=True, text=True, timeout=60)


def test_a_banner_and_debug_lines_on_stdout_print_no_traceback_and_the_call_works(home):
    done = rienda(home("banner"), "call", "mcp__rogue__echo", '{"text": "hi"}')
    assert (done.returncode, done.stdout) == (0, "hi\n"), done.stderr
    assert "Traceback" not in done.stderr and "Failed to parse" not in done.stderr
    assert ("[tool:mcp__rogue__echo] rienda: skipped a line the server wrote on stdout (not valid JSON: "
            in done.stderr and done.stderr.rstrip().endswith(": DEBUG echoing hi")), done.stderr
    listed = rienda(home("banner"), "tools")
    assert listed.returncode == 0 and "mcp__rogue__echo" in listed.stdout and "Traceback" not in listed.stderr


def test_a_reply_with_a_lone_surrogate_escape_is_read_with_u_fffd(home):
    done = rienda(home("surrogate"), "call", "mcp__rogue__echo", '{"text": "hi"}')
    assert (done.returncode, done.stdout) == (0, "half \ufffd of it\n"), done.stderr
    assert "Traceback" not in done.stderr


def test_a_tools_list_with_lone_surrogates_is_read_with_u_fffd_and_a_run_sends_it(tmp_path):
    """The escape in what ``tools/list`` says (description, a parameter's description, the
    title): ``rienda tools`` lists it, and a run sends it to the model's server, each with
    U+FFFD (without the line reader's repair a run failed with UnicodeEncodeError before
    its first request: issue 40)."""
    with serving(fake_openai()) as server:
        write_config(tmp_path, {"rogue": {"command": sys.executable, "args": [str(ROGUE)],
                                          "env": {"ROGUE": "surrogate-list"}, "start_timeout": 600}},
                     providers={"cloud": {"api": "openai", "base_url": server.url, "api_key_env": None}})
        (tmp_path / "agents").mkdir()
        (tmp_path / "agents" / "echoer.md").write_text("---\ndescription: Echoes.\nmodel: cloud/gpt-4o\n"
                                                       "tools: [mcp__rogue__echo]\n---\nEcho.\n")
        server.replies += [{"events": tool_stream("call_1", "mcp__rogue__echo", '{"text": "hi"}')},
                           {"events": text_stream("Done.")}]
        listed = rienda(tmp_path, "tools")
        done = rienda(tmp_path, "run", "--agent", "echoer", "go")
        requests = list(server.requests)
    assert listed.returncode == 0 and "Says \ufffd it back." in listed.stdout, listed.stdout + listed.stderr
    assert (done.returncode, "Traceback" in done.stderr) == (0, False), done.stderr
    sent = requests[0]["tools"][0]["function"]
    assert sent["description"] == "Says \ufffd it back."
    assert sent["parameters"]["properties"]["text"]["description"] == "what \ufffd to say"


def test_a_tools_list_too_deep_to_read_fails_the_start_at_once_saying_what_was_wrong(home):
    done = rienda(home("deep"), "tools")
    assert "Traceback" not in done.stderr and "no answer to initialize" not in done.stderr
    assert "MCP server 'rogue'" in done.stderr and "nested more than 200 levels deep" in done.stderr, done.stderr


def test_a_reply_that_is_not_a_tool_result_is_an_error_result_naming_the_server(home):
    done = rienda(home("garbage"), "call", "mcp__rogue__echo", '{"text": "hi"}')
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "rogue" in done.stdout + done.stderr, (done.stdout, done.stderr)


def test_bytes_that_are_not_utf8_and_a_notification_the_sdk_cannot_validate_print_nothing_and_the_call_works(home):
    done = rienda(home("bytes"), "call", "mcp__rogue__echo", '{"text": "hi"}')
    assert (done.returncode, done.stdout) == (0, "hi\n"), done.stderr
    assert "Traceback" not in done.stderr and "Failed to validate" not in done.stderr, done.stderr
