"""Capped results, bounded memory: whatever a server sends, a command prints or a file holds,
the host keeps only what the result needs (issue 25: a 300 MB response through the ``http``
tool peaked at ~935 MB, 200 MB of command output at ~600 MB, and ``ctx.system.exec`` left
the extension a bare ``MemoryError``).

Each case runs in a process of its own (``Rienda.call_tool``, the real sandbox, a real HTTP
server on 127.0.0.1 streaming without holding the body) that reports its peak resident
memory (``ru_maxrss``) before and after; the test asserts the growth, not a time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from rienda_kernel.engine.ctx.host import HOST_TEXT_CAP

MiB = 1024 * 1024
BUILTIN_GROWTH = 32 * MiB  # a built-in keeps 256 KiB of a body, a file or each stream
HOST_CALL_GROWTH = 16 * HOST_TEXT_CAP  # a host call hands an extension at most 4 MiB (JSON may escape it 6-fold)

RUNNER = textwrap.dedent("""\
    import json, resource, sys, threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from pathlib import Path

    SIZE = 300 * 1024 * 1024

    class Big(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(SIZE))
            self.end_headers()
            block = b"x" * (1024 * 1024)
            try:
                for _ in range(SIZE // len(block)):
                    self.wfile.write(block)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client read what it keeps and closed

    server = ThreadingHTTPServer(("127.0.0.1", 0), Big)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()

    from rienda_kernel.engine import NonInteractiveUI
    from rienda_kernel.engine.runtime.rienda import Rienda

    home, work, tool, arguments = sys.argv[1:5]
    arguments = json.loads(arguments.replace("URL", f"http://127.0.0.1:{server.server_port}/big"))
    engine = Rienda(home=home, workdir=work)
    engine.prepare_sandbox()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    result = engine.call_tool(tool, arguments, NonInteractiveUI(record_events=False))
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"growth": after - before, "text": result.text[-300:], "size": len(result.text),
                      "error": result.is_error}))
""")

JS_TOOLS = {
    "fetch-big": """module.exports = { description: "Fetches.", parameters: { type: "object" },
      execute(ctx, a) { const r = ctx.http.fetch(a.url); return r.body.length + " truncated=" + r.truncated; } };""",
    "exec-big": """module.exports = { description: "Runs.", parameters: { type: "object" },
      execute(ctx, a) { const r = ctx.system.exec(a.command);
        return r.stdout.length + " truncated=" + r.truncated + " " + r.stderr.trim(); } };""",
    "read-big": """module.exports = { description: "Reads.", parameters: { type: "object" },
      execute(ctx, a) { try { return String(ctx.file.read(a.path).length); }
                        catch (e) { return { text: e.name + ": " + e.message, isError: true }; } } };""",
}
PRINT_200_MB = "head -c 200000000 /dev/zero | tr '\\0' x"
NULS_200_MB = "head -c 200000000 /dev/zero"  # JSON escapes each as \\u0000: six times the size on the wire


@pytest.fixture
def home(tmp_path):
    for name, source in JS_TOOLS.items():
        (tmp_path / "home" / "tools" / name).mkdir(parents=True)
        (tmp_path / "home" / "tools" / name / "index.js").write_text(source)
    (tmp_path / "work").mkdir()
    with open(tmp_path / "work" / "huge.txt", "wb") as huge:
        huge.truncate(10 * 1024 * MiB)  # 10 GB, sparse: reading it all would take them
    return tmp_path


def measured(home, tool: str, arguments: str) -> dict:
    done = subprocess.run([sys.executable, "-c", RUNNER, str(home / "home"), str(home / "work"), tool, arguments],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize(("tool", "arguments"), [
    ("http", '{"url": "URL"}'),
    ("shell", json.dumps({"command": PRINT_200_MB})),
    ("read", '{"path": "huge.txt"}'),
    ("read", '{"path": "/dev/zero"}'),
], ids=["http 300 MB", "shell 200 MB", "read 10 GB", "read /dev/zero"])
def test_a_builtin_keeps_what_its_capped_result_needs(home, tool, arguments):
    report = measured(home, tool, arguments)
    assert report["growth"] < BUILTIN_GROWTH, report
    assert report["text"].endswith("[rienda: output cut at 256 KiB]") and not report["error"], report


def test_ctx_http_fetch_keeps_4_mib_and_says_the_body_is_truncated(home):
    report = measured(home, "fetch-big", '{"url": "URL"}')
    assert report["text"] == f"{HOST_TEXT_CAP} truncated=true" and not report["error"], report
    assert report["growth"] < HOST_CALL_GROWTH, report


@pytest.mark.parametrize("command", [PRINT_200_MB, NULS_200_MB], ids=["letters", "NUL bytes"])
def test_ctx_system_exec_keeps_4_mib_of_each_stream_and_says_how_much_more_came(home, command):
    report = measured(home, "exec-big", json.dumps({"command": command}))
    assert report["text"] == (f"{HOST_TEXT_CAP} truncated=true [rienda] stdout kept its first {HOST_TEXT_CAP} "
                              f"characters; {200_000_000 - HOST_TEXT_CAP} more were shown as they came but not kept")
    assert report["growth"] < HOST_CALL_GROWTH, report


@pytest.mark.parametrize("path", ["huge.txt", "/dev/zero"])
def test_ctx_file_read_of_more_than_4_mib_is_an_error_the_extension_can_catch(home, path):
    report = measured(home, "read-big", json.dumps({"path": path}))
    resolved = path if path.startswith("/") else str(home / "work" / path)
    assert report["text"] == (f"OSError: file too large: {resolved} holds more than 4 MiB, the most one "
                              "read returns"), report
    assert report["growth"] < HOST_CALL_GROWTH, report


def test_the_shell_tool_still_shows_everything_live(rig):
    """Streamed output is never capped: the front end sees all of it as it comes."""
    from rienda_kernel.engine import Output

    result = rig.tool("shell", {"command": "head -c 3000000 /dev/zero | tr '\\0' y"})
    shown = "".join(e.text for e in rig.events(Output) if e.stream == "stdout")
    assert len(shown) == 3_000_000 and result.text.endswith("[rienda: output cut at 256 KiB]")


PROVIDER_RUNNER = textwrap.dedent("""\
    import json, resource, sys, threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    SIZE = 300 * 1024 * 1024
    STATUS = int(sys.argv[1])

    class Endless(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(STATUS)
            self.send_header("Content-Type", "text/event-stream" if STATUS == 200 else "application/json")
            self.send_header("Content-Length", str(SIZE))
            self.end_headers()
            block = b"x" * (1024 * 1024)
            try:
                self.wfile.write(b"data: ")
                for _ in range(SIZE // len(block)):
                    self.wfile.write(block)  # one line that never ends
            except (BrokenPipeError, ConnectionResetError):
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Endless)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()

    from rienda_kernel.engine import CancelToken, Message, ProviderError
    from rienda_kernel.engine.providers import ModelRequest
    from rienda_kernel.engine.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=f"http://127.0.0.1:{server.server_port}/v1", max_retries=0)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    try:
        list(provider.stream(ModelRequest("m", "", [Message.user("hi")]), CancelToken()))
        error = None
    except ProviderError as exc:
        error = str(exc)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"growth": after - before, "error": error[:300] if error else None}))
""")


@pytest.mark.parametrize("status", [200, 500], ids=["a line that never ends", "an endless error body"])
def test_a_model_server_sending_without_end_costs_bounded_memory_and_one_clear_error(status):
    done = subprocess.run([sys.executable, "-c", PROVIDER_RUNNER, str(status)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["growth"] < 128 * MiB, report  # a 16 MiB line, held a few times over while it is read
    if status == 200:
        assert report["error"].endswith("/v1/chat/completions: the stream failed: the server sent a line longer "
                                        "than 16 MiB; nothing was read past it"), report
    else:
        assert report["error"].count("x") < 300 and "HTTP 500: data: xxx" in report["error"], report
