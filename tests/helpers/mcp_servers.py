"""Real MCP servers for tests: the settings that start them, and a streamable-HTTP lab
server on 127.0.0.1. Every wait is bounded.

- ``mcp-server-time`` and ``mcp-server-git`` (PyPI, the test extra) over stdio;
- :mod:`tests.helpers.mcp_lab` (the SDK's own server class) over stdio or HTTP, leaving
  traces in its ``LAB_DIR``.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from .processes import alive

LAB = Path(__file__).with_name("mcp_lab.py")


def time_server() -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


def git_server(repository: Path) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(repository)]}


def lab_server(lab_dir: Path, **env: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(LAB)], "env": {"LAB_DIR": str(lab_dir), **env}}


def quitter_server(stderr: str) -> dict[str, Any]:
    """A server that writes ``stderr`` and exits at once, before answering initialize."""
    return {"command": sys.executable, "args": ["-c", f"import sys; sys.stderr.write({stderr!r}); sys.exit(2)"]}


def write_config(home: Path, servers: dict[str, Any], **settings: Any) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump({**settings, "mcp_servers": servers}, sort_keys=False))


def traces(lab_dir: Path, name: str) -> list[str]:
    path = lab_dir / name
    return path.read_text().split() if path.exists() else []


def pids(lab_dir: Path) -> list[int]:
    """The pid of each lab server started with ``lab_dir``, in order."""
    return [int(pid) for pid in traces(lab_dir, "pids")]


def wait_until(condition: Callable[[], Any], what: str, deadline_s: float = 30) -> Any:
    deadline = time.monotonic() + deadline_s
    while not (value := condition()):
        assert time.monotonic() < deadline, f"{what}: not within {deadline_s} s"
        time.sleep(0.02)
    return value


def gone(pid: int, deadline_s: float = 10) -> bool:
    """Whether ``pid`` has stopped running within ``deadline_s`` (an orphan would not)."""
    deadline = time.monotonic() + deadline_s
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def http_lab(lab_dir: Path) -> Iterator[str]:
    """The lab server over streamable HTTP, as a process of the test's; yields its URL."""
    port = free_port()
    lab_dir.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen([sys.executable, str(LAB), "http", str(port)], env={"LAB_DIR": str(lab_dir),
                               "PATH": "/usr/bin:/bin"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def listening() -> bool:
            assert process.poll() is None, f"the HTTP lab server exited with {process.returncode}"
            with socket.socket() as client:
                return client.connect_ex(("127.0.0.1", port)) == 0

        wait_until(listening, "the HTTP lab server listening")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
