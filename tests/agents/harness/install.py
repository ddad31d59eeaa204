"""The agent CLIs the tests run, pinned, installed from the npm registry on first use.

Each pin installs once (``npm install --prefix``) into its own folder of a cache outside the
checkout, ``$XDG_CACHE_HOME/rienda-tests/agents/`` (default ``~/.cache/...``), named for the
package and version, and is reused by every later run. An install goes to a scratch folder
renamed into place when npm succeeds, under a lock (parallel workers install it once); npm,
and a wait for another process's install, get ``INSTALL_TIMEOUT_S``. Missing npm, an unreachable registry or a failed install is an
``AgentInstallError`` saying what to do, never a skip.

``python -m tests.agents.harness.install [AGENT...]`` installs the pins ahead of a run (all of
them by default; ``.ci/run`` does it before the tests, so that their time is the tests').
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pin:
    """One agent CLI: its npm package, the exact version the tests run, its command."""

    package: str
    version: str
    command: str


# The one place the versions are pinned (`npm view PACKAGE version` gives the newest).
PINS = {
    "claude-code": Pin("@anthropic-ai/claude-code", "2.1.332", "claude"),
    "codex": Pin("@openai/codex", "0.171.0", "codex"),
    "gemini-cli": Pin("@google/gemini-cli", "0.61.0", "gemini"),
    "copilot-cli": Pin("@github/copilot", "1.0.102", "copilot"),
}

INSTALL_TIMEOUT_S = 900


class AgentInstallError(Exception):
    """An agent CLI could not be installed; the message says why and what to do."""


def cache_root() -> Path:
    """Where the installs live: outside any checkout, kept between runs."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rienda-tests" / "agents"


def install_dir(pin: Pin) -> Path:
    """The folder holding ``pin``'s install (``node_modules/.bin/COMMAND`` inside)."""
    return cache_root() / f"{pin.package.lstrip('@').replace('/', '-')}-{pin.version}"


def executable(agent: str) -> Path:
    """The command that runs ``agent``, installing its pinned version first if the cache
    lacks it."""
    pin = PINS[agent]
    folder = install_dir(pin)
    command = folder / "node_modules" / ".bin" / pin.command
    if command.exists():
        return command
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.with_name(folder.name + ".lock"), "w") as lock:
        _lock(lock.fileno(), f"another process installing {pin.package}@{pin.version}")
        if not command.exists():
            _npm_install(pin, folder)
    return command


def _lock(fd: int, holder: str) -> None:
    """Take the install lock, waiting for ``holder`` at most as long as an install may take."""
    deadline = time.monotonic() + INSTALL_TIMEOUT_S + 60
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise AgentInstallError(f"waited too long for {holder}") from None  # no cause but the wait
            time.sleep(0.2)


def _npm_install(pin: Pin, folder: Path) -> None:
    npm = shutil.which("npm")
    spec = f"{pin.package}@{pin.version}"
    if npm is None:
        raise AgentInstallError(f"npm is not on PATH: the agent tests install {spec} from the npm registry; "
                                "install Node.js 20+ with npm")
    scratch = folder.with_name(folder.name + ".partial")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    argv = [npm, "install", "--prefix", str(scratch), "--no-audit", "--no-fund", "--loglevel=error", spec]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        shutil.rmtree(scratch, ignore_errors=True)
        raise AgentInstallError(f"`npm install {spec}` took over {INSTALL_TIMEOUT_S} s: is the npm registry "
                                "reachable (`npm ping`)?") from None  # the timeout is the whole story
    if done.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        head = " | ".join((done.stderr or done.stdout).strip().splitlines()[:4])[:400]
        raise AgentInstallError(f"`npm install {spec}` failed (exit {done.returncode}; is the npm registry "
                                f"reachable? `npm ping`): {head}")
    scratch.rename(folder)


def main(agents: list[str]) -> int:
    """Install ``agents`` (default: every pin); say where each is, or why it is not."""
    failed = 0
    for agent in agents or list(PINS):
        try:
            print(f"{agent}: {executable(agent)}")
        except (AgentInstallError, KeyError) as error:
            print(f"{agent}: {error}" if isinstance(error, AgentInstallError) else f"{agent}: no such pin: {sorted(PINS)}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
