"""JupyterLab in a real browser: a Jupyter server and headless Debian Chromium, both throwaway.

The server runs on 127.0.0.1 with a random token, with its config, data and runtime
directories in temporary folders (nothing from ~/.jupyter leaks in) and nothing that
reaches the network (news, update checks, the PyPI extension manager). The Rienda
kernelspec is installed into a temporary prefix found through JUPYTER_PATH.

Without Chromium, JupyterLab or Playwright these tests skip; with ``CI`` set they fail,
so CI really runs them (``.ci/browser-deps`` installs what they need).
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ...helpers.ports import free_port

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-quic", "--no-first-run", "--disable-sync"]


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: drives JupyterLab in headless Chromium (needs .ci/browser-deps)")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Keeps each phase's report on the item, so a fixture can tell that the test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


def require_browser_deps() -> None:
    missing = []
    if not os.access(CHROMIUM, os.X_OK):
        missing.append(f"{CHROMIUM} (apt-get install chromium)")
    for module, package in (("jupyterlab", "jupyterlab"), ("playwright", "playwright")):
        if importlib.util.find_spec(module) is None:
            missing.append(f"the Python package {package}")
    if missing:
        reason = "browser test needs " + ", ".join(missing) + "; run .ci/browser-deps"
        if os.environ.get("CI"):
            pytest.fail(reason + " (CI is set, so this is a failure, not a skip)", pytrace=False)
        pytest.skip(reason)


class LabServer:
    """``jupyter lab`` as a subprocess serving ``root``."""

    def __init__(self, root: Path, scratch: Path, env: dict[str, str]) -> None:
        self.root = root
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = scratch / "jupyterlab.log"
        dirs = {name: scratch / name for name in ("config", "data", "runtime")}
        for folder in dirs.values():
            folder.mkdir()
        # No "get news?" toast, no update check: the page stays as a first-time user would
        # see it minus the network.
        settings = dirs["config"] / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)
        (settings / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        clean = {k: v for k, v in os.environ.items()
                 if not k.startswith(("JUPYTER", "RIENDA_", "IPYTHON")) and k not in ("PYTHONPATH",)}
        self.env = {**clean, "JUPYTER_CONFIG_DIR": str(dirs["config"]), "JUPYTER_DATA_DIR": str(dirs["data"]),
                    "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]), "JUPYTERLAB_SETTINGS_DIR":
                    str(dirs["config"] / "lab" / "user-settings"), "JUPYTERLAB_WORKSPACES_DIR":
                    str(dirs["config"] / "lab" / "workspaces"), "IPYTHONDIR": str(scratch / "ipython"), **env}
        self.argv = [sys.executable, "-m", "jupyterlab", "--no-browser",
                     f"--IdentityProvider.token={self.token}", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
                     "--ServerApp.port_retries=0", f"--ServerApp.root_dir={root}",
                     "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                     "--LabApp.extension_manager=readonly"]
        if os.geteuid() == 0:  # CI runs as root
            self.argv.append("--allow-root")
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 180) -> None:  # a loaded 2-core machine needs more than a minute
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.argv, cwd=self.root, env=self.env, stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"jupyter lab exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with self._request("GET", "/api/status", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise AssertionError(f"jupyter lab did not answer within {timeout}s:\n{self.log_tail()}")

    def url(self, path: str) -> str:
        return f"{self.base}{path}?token={self.token}"

    def _request(self, method: str, path: str, timeout: float):
        request = urllib.request.Request(self.base + path, method=method,
                                         headers={"Authorization": f"token {self.token}"})
        return urllib.request.urlopen(request, timeout=timeout)

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Shut the kernels and the server down through the API; then terminate; then kill."""
        if self.proc is None:
            return
        try:
            if self.proc.poll() is None:
                try:
                    self._request("POST", "/api/shutdown", timeout=5).close()
                except (urllib.error.URLError, OSError):
                    pass
                try:
                    self.proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    self.proc.terminate()
                    try:
                        self.proc.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        self.proc.kill()
                        self.proc.wait(timeout=10)
        finally:
            self._log.close()


def _failed(request) -> bool:
    report = getattr(request.node, "report_call", None)
    return report is not None and report.failed


@pytest.fixture
def lab_server_factory(request, tmp_path):
    """Starts ``jupyter lab`` on a folder with the given extra environment; always stops it."""
    require_browser_deps()
    started: list[LabServer] = []

    def start(root: Path, env: dict[str, str]) -> LabServer:
        scratch = tmp_path / f"jupyter-{len(started)}"
        scratch.mkdir()
        server = LabServer(root, scratch, env)
        started.append(server)
        server.start()
        return server

    yield start
    for server in started:
        server.stop()
        if _failed(request):
            print(f"--- {server.log_path} (end) ---\n{server.log_tail()}")


@pytest.fixture
def page(request, tmp_path, lab_server_factory):
    """A page in headless Debian Chromium (fresh profile); screenshot into tmp_path on failure.

    Depends on ``lab_server_factory`` so that the browser closes (and the failure
    screenshot is taken) before the servers stop.
    """
    from playwright.sync_api import expect, sync_playwright

    playwright = sync_playwright().start()
    browser = None
    try:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(30_000)
        expect.set_options(timeout=30_000)  # a loaded CI machine is slow; no assertion is about time
        yield page
        if _failed(request):
            shot = tmp_path / "failure.png"
            try:
                page.screenshot(path=str(shot), full_page=True)
                print(f"screenshot of the failure: {shot}")
            except Exception as exc:  # noqa: BLE001 - a failed screenshot must not hide the failure
                print(f"no screenshot of the failure: {exc}")
    finally:
        if browser is not None:
            browser.close()
        playwright.stop()
