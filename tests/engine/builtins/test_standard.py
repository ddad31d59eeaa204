"""The built-in tools, run with a real host: temp workspace, real shell, local HTTP server."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jsonschema
import pytest

from rienda_kernel.engine.builtins.standard import BUILTIN_TOOLS
from rienda_kernel.engine.tools.model import BuiltinTool
from rienda_kernel.engine.cancel import CancelToken
from rienda_kernel.engine.errors import Interrupted
from rienda_kernel.engine.ctx.files import Workspace

from ...helpers.ports import free_port


@dataclass
class Host:
    """The smallest BuiltinHost: records what the tool streams to the front end."""

    workspace: Workspace
    cancel: CancelToken = field(default_factory=CancelToken)
    output: list[tuple[str, str]] = field(default_factory=list)

    def emit_output(self, stream: str, text: str) -> None:
        self.output.append((stream, text))


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        status, body = (200, b"pong") if self.path == "/ping" else (404, b"no route")
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        reply = f"{self.headers['X-Kind']}:{body.decode()}".encode()
        self.send_response(201)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


@pytest.fixture
def base_url():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def host(tmp_path) -> Host:
    return Host(Workspace(tmp_path))


def run(tool: str, host: Host, **args) -> tuple[str, bool]:
    """Validate ``args`` against the tool's schema (as the engine does), then run it."""
    jsonschema.validate(args, BUILTIN_TOOLS[tool].parameters)
    return BUILTIN_TOOLS[tool].run(host, args)


def test_the_tool_set():
    assert list(BUILTIN_TOOLS) == ["shell", "http", "read", "write", "agent"]
    for name, tool in BUILTIN_TOOLS.items():
        assert isinstance(tool, BuiltinTool)
        assert tool.name == name
        assert tool.description.endswith(".")
        jsonschema.Draft202012Validator.check_schema(tool.parameters)
        assert tool.parameters["type"] == "object"
        assert tool.parameters["additionalProperties"] is False


def test_schemas_reject_bad_arguments():
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({}, BUILTIN_TOOLS["shell"].parameters)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"command": "ls", "timeout_ms": 0}, BUILTIN_TOOLS["shell"].parameters)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"url": "http://x", "method": "FETCH"}, BUILTIN_TOOLS["http"].parameters)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"path": "a", "content": "b", "mode": "x"}, BUILTIN_TOOLS["write"].parameters)


def test_shell_success(host):
    assert run("shell", host, command="echo hello") == ("hello\n\nexit code 0", False)
    assert host.output == [("stdout", "hello\n")]


def test_shell_runs_in_the_workspace(host, tmp_path):
    (tmp_path / "marker.txt").write_text("")
    text, is_error = run("shell", host, command="ls")
    assert (text, is_error) == ("marker.txt\n\nexit code 0", False)


def test_shell_failure_includes_stderr(host):
    text, is_error = run("shell", host, command="echo partial; echo broken >&2; exit 2")
    assert text == "partial\n\nbroken\n\nexit code 2"
    assert is_error
    assert ("stderr", "broken\n") in host.output


def test_shell_without_output(host):
    assert run("shell", host, command="true") == ("exit code 0", False)


def test_shell_timeout(host):
    text, is_error = run("shell", host, command="echo started; sleep 30", timeout_ms=200)
    assert is_error
    assert text.startswith("started\n\n")
    assert "[rienda] command timed out after 200 ms and was killed" in text
    assert text.endswith("exit code 143")


def test_shell_interrupted_propagates(host):
    host.cancel.cancel()
    with pytest.raises(Interrupted):
        run("shell", host, command="echo never")


def test_shell_with_a_missing_workspace(tmp_path):
    host = Host(Workspace(tmp_path / "gone"))
    text, is_error = run("shell", host, command="true")
    assert is_error
    assert "gone" in text


def test_http_success(host, base_url):
    assert run("http", host, url=f"{base_url}/ping") == ("HTTP 200\n\npong", False)


def test_http_post_with_headers_and_body(host, base_url):
    text, is_error = run("http", host, url=f"{base_url}/things", method="POST", headers={"X-Kind": "note"}, body="hi")
    assert (text, is_error) == ("HTTP 201\n\nnote:hi", False)


def test_http_error_status_is_an_error_result(host, base_url):
    assert run("http", host, url=f"{base_url}/nope") == ("HTTP 404\n\nno route", True)


def test_http_network_failure(host):
    port = free_port()
    text, is_error = run("http", host, url=f"http://127.0.0.1:{port}/")
    assert is_error
    assert text == f"fetch http://127.0.0.1:{port}/ failed: connection refused"


def test_http_interrupted_propagates(host, base_url):
    host.cancel.cancel()
    with pytest.raises(Interrupted):
        run("http", host, url=f"{base_url}/ping")


def test_write_then_read(host, tmp_path):
    assert run("write", host, path="notes/today.md", content="ñu\n") == ("wrote 4 bytes to notes/today.md", False)
    assert (tmp_path / "notes" / "today.md").read_text() == "ñu\n"
    assert run("read", host, path="notes/today.md") == ("ñu\n", False)


def test_read_missing_file(host, tmp_path):
    text, is_error = run("read", host, path="nope.txt")
    assert is_error
    assert text == f"no such file: {tmp_path / 'nope.txt'}"


def test_read_empty_path(host):
    assert run("read", host, path="") == ("path must be a non-empty string", True)


def test_write_over_a_directory(host, tmp_path):
    (tmp_path / "d").mkdir()
    text, is_error = run("write", host, path="d", content="x")
    assert is_error
    assert text == f"is a directory: {tmp_path / 'd'}"


def test_missing_arguments_are_error_results(host):
    assert BUILTIN_TOOLS["read"].run(host, {}) == ("missing or non-string argument: path", True)
    assert BUILTIN_TOOLS["write"].run(host, {"path": "a"}) == ("missing or non-string argument: content", True)
