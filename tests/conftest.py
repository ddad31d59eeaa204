"""Shared fixtures: a throwaway RIENDA_HOME, a workspace, one sandbox per session, a local
HTTP server, and a way to run code as an unprivileged user (for permission tests).

Everything runs through the real parts: real V8 isolates, real files, real processes.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rienda_kernel.engine import BUILTIN_TOOLS, CancelToken, ExtensionLoader, NonInteractiveUI, Sandbox
from rienda_kernel.engine.ctx.host import RunContext
from rienda_kernel.engine.hooks import HookChain
from rienda_kernel.engine.tools.invoke import invoke_tool

from .helpers.homes import write_extension
from .helpers.unprivileged import NOBODY, Unprivileged, drop_privileges, interpreter

# The suite starts about 1,500 Python processes (``rienda`` commands, V8 workers, kernels,
# gate servers). With PYTHONDONTWRITEBYTECODE set (as on this project's machines and CI)
# in a fresh checkout, each compiled Rienda's modules from source again: a third of a
# scripted ``rienda run``'s time. Python caches them on a user's machine; the suite's
# processes now do too (in __pycache__, which git ignores). Popped when pytest loads this
# file, before pytest-xdist starts its workers: they and all they start inherit it.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# jsonschema's iri checker compiles a grammar at import in every process that imports
# nbformat or jupyter_server (0.9 CPU-s each): the suite's processes go without it
# (tests/helpers/without_iri_grammar says why that hides nothing Rienda does).
WITHOUT_IRI_GRAMMAR = str(Path(__file__).parent / "helpers" / "without_iri_grammar")
os.environ["PYTHONPATH"] = os.pathsep.join([WITHOUT_IRI_GRAMMAR, *filter(None, [os.environ.get("PYTHONPATH")])])


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    return Sandbox(memory_limit=64 * 1024 * 1024)


class Rig:
    """A RIENDA_HOME and a workspace on disk, and the engine pointed at them."""

    def __init__(self, root: Path, sandbox: Sandbox) -> None:
        self.home = root / "home"
        self.workdir = root / "work"
        self.home.mkdir()
        self.workdir.mkdir()
        self.sandbox = sandbox
        self.loader = ExtensionLoader(sandbox)
        self.ui = NonInteractiveUI(auto_approve=False)

    def write_tool(self, name: str, source: str) -> Path:
        return self._write("tools", name, source)

    def write_hook(self, name: str, source: str) -> Path:
        return self._write("hooks", name, source)

    def _write(self, kind: str, name: str, source: str) -> Path:
        return write_extension(self.home, kind, name, source)

    def catalog(self):
        return self.loader.discover(self.home, builtin_tools=BUILTIN_TOOLS)

    def run_context(self, **overrides: Any) -> RunContext:
        fields = dict(
            workdir=self.workdir,
            ui=self.ui,
            session={"id": "s-test"},
            agent={"id": "tester", "description": "A test agent.", "model": "scripted/x.yaml",
                   "tools": [], "hooks": []},
            config={},
        )
        fields.update(overrides)
        return RunContext(**fields)

    def tool(self, name: str, arguments: Any, cancel: CancelToken | None = None, **context: Any):
        catalog = self.catalog()
        assert name in catalog.tools, f"{name} not loaded: {[d.message for d in catalog.diagnostics]}"
        return invoke_tool(catalog.tools[name], arguments, self.run_context(**context), self.sandbox,
                           cancel or CancelToken())

    def chain(self, *names: str, **context: Any) -> HookChain:
        catalog = self.catalog()
        missing = [n for n in names if n not in catalog.hooks]
        assert not missing, f"{missing} not loaded: {[d.message for d in catalog.diagnostics]}"
        return HookChain([catalog.hooks[n] for n in names], self.sandbox, self.run_context(**context))

    def events(self, kind: type) -> list:
        return [e for e in self.ui.events if isinstance(e, kind)]


@pytest.fixture
def rig(tmp_path: Path, sandbox: Sandbox) -> Rig:
    return Rig(tmp_path, sandbox)


class _Handler(BaseHTTPRequestHandler):
    """/echo answers 201 with what it received; /headers answers 200 with the request's
    headers; /repos/<o>/<r>/releases/latest is GitHub's shape; /status/<n> answers n;
    anything else 404."""

    def _reply(self, status: int, body: str, content_type: str = "application/json") -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8") if length else ""
        self.server.requests.append({"method": self.command, "path": self.path, "body": body,
                                     "headers": dict(self.headers)})
        if self.path == "/echo":
            self._reply(201, json.dumps({"method": self.command, "path": self.path, "body": body,
                                         "x-test": self.headers.get("X-Test")}))
        elif self.path == "/headers":
            self._reply(200, json.dumps(dict(self.headers)))
        elif self.path.startswith("/repos/") and self.path.endswith("/releases/latest"):
            repo = self.path[len("/repos/"):-len("/releases/latest")]
            if repo == "rienda/rienda":
                self._reply(200, json.dumps({"tag_name": "v1.4.2", "name": "Rienda 1.4.2"}))
            else:
                self._reply(404, json.dumps({"message": "Not Found"}))
        elif self.path.startswith("/status/"):
            self._reply(int(self.path.rsplit("/", 1)[1]), "status body", "text/plain")
        else:
            self._reply(404, json.dumps({"message": "Not Found"}))

    do_GET = do_POST = do_PUT = do_DELETE = _handle

    def log_message(self, *args: Any) -> None:
        pass


class LocalServer:
    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.requests = []
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.server.requests

    def url(self, path: str) -> str:
        return self.base + path

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def http_server():
    server = LocalServer()
    yield server
    server.close()


@pytest.fixture
def unprivileged():
    """Runs code as a user whom file permissions bind (see :mod:`tests.helpers.unprivileged`)."""
    prefix = drop_privileges()
    if prefix is None:
        pytest.skip("running as root with neither setpriv nor runuser to drop privileges")
    python = interpreter(tuple(prefix))
    if isinstance(python, str):
        pytest.skip(python)
    directory = Path(tempfile.mkdtemp(prefix="rienda-unprivileged-"))
    try:
        if os.geteuid() == 0:
            os.chown(directory, NOBODY, NOBODY)
        yield Unprivileged(directory, prefix, python)
    finally:
        shutil.rmtree(directory, ignore_errors=True)



def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup``: the suite's own grouping (:mod:`tests.helpers.scheduling`)."""
    from .helpers.scheduling import make_scheduler

    return make_scheduler(config, log)
