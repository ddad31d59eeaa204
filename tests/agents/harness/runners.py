"""One runner per agent CLI: its config written into a throwaway home (never the user's
``~/.claude``, ``~/.codex``, ``~/.gemini`` or ``~/.copilot``), the environment that keeps it
offline and quiet, ONE ``PreToolUse`` / ``BeforeTool`` hook command, and a headless run with a
hard timeout that kills the agent's whole process group. Facts per agent:
``../shared/design/agents-gate.md``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .install import PINS, executable, install_dir

RUN_TIMEOUT_S = 120
PROMPT = "Run the shell command you are given, then say done."


@dataclass
class AgentRun:
    """What one headless run did. ``exit_code`` is None when the timeout ended it."""

    agent: str
    exit_code: int | None
    stdout: str
    stderr: str
    seconds: float

    def describe(self) -> str:
        """The run for an assertion's message (the last lines of each stream, each cut short)."""
        tail = lambda text: "\n    ".join(line[:400] for line in text.strip().splitlines()[-15:])  # noqa: E731
        return (f"{self.agent}: exit {self.exit_code} after {self.seconds:.1f} s\n  stdout:\n    {tail(self.stdout)}"
                f"\n  stderr:\n    {tail(self.stderr)}")


class AgentRunner:
    """Runs one agent in ``root`` (``root/home`` is its HOME, ``root/project`` its working
    folder) against the model server at ``model_url`` with ``hook_command`` as its one hook.
    ``hook_env`` is added to the agent's environment (its hooks inherit it)."""

    name = ""

    def __init__(self, root: Path, model_url: str, hook_command: str, hook_env: dict[str, str] | None = None):
        self.home = root / "home"
        self.project = root / "project"
        self.home.mkdir(parents=True, exist_ok=True)
        self.project.mkdir(parents=True, exist_ok=True)
        self.model_url = model_url
        self.hook_command = hook_command
        self.hook_env = dict(hook_env or {})
        self.configure()

    def configure(self) -> None:
        """Write the agent's config (model endpoint, quiet settings, the hook) under ``home``."""
        raise NotImplementedError

    def argv(self, prompt: str) -> list[str]:
        """The headless command line, the executable first."""
        raise NotImplementedError

    def agent_env(self) -> dict[str, str]:
        """The variables this agent needs besides the common ones."""
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        """A small environment: nothing of the caller's but PATH, so no real key or config leaks in."""
        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home), "LANG": "C.UTF-8",
                "TERM": "dumb", "NO_COLOR": "1", "CI": "1", "TMPDIR": str(self.home / "tmp")}
        (self.home / "tmp").mkdir(exist_ok=True)
        return {**base, **self.agent_env(), **self.hook_env}

    def run(self, prompt: str = PROMPT, timeout: float = RUN_TIMEOUT_S) -> AgentRun:
        """Run the agent headless once; past ``timeout`` its process group is killed."""
        started = time.monotonic()
        proc = subprocess.Popen(self.argv(prompt), cwd=self.project, env=self.env(), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            out, err = proc.communicate(timeout=30)
            code = None
        _kill_group(proc.pid)  # whatever it left behind (a hook, a helper) goes too
        return AgentRun(self.name, code, out, err, time.monotonic() - started)

    def executable(self) -> str:
        return str(executable(self.name))


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _hook_entries(command: str) -> list[dict]:
    return [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))


class ClaudeCode(AgentRunner):
    """Claude Code: ``claude -p``, user settings in ``CLAUDE_CONFIG_DIR``, Messages API."""

    name = "claude-code"

    def configure(self) -> None:
        _write_json(self.home / ".claude" / "settings.json", {"hooks": {"PreToolUse": _hook_entries(self.hook_command)}})

    def argv(self, prompt: str) -> list[str]:
        return [self.executable(), "-p", prompt, "--output-format", "stream-json", "--verbose",
                "--dangerously-skip-permissions"]

    def agent_env(self) -> dict[str, str]:
        env = {"CLAUDE_CONFIG_DIR": str(self.home / ".claude"), "ANTHROPIC_BASE_URL": self.model_url,
               "ANTHROPIC_API_KEY": "dummy", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"}
        if os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"  # else root may not skip permissions
        return env


class Codex(AgentRunner):
    """Codex: ``codex exec``, ``$CODEX_HOME/config.toml``, Responses API; hooks run only when
    trusted (``--dangerously-bypass-hook-trust``), else they are skipped without a word."""

    name = "codex"

    def configure(self) -> None:
        config = f"""model = "fake-model"
model_provider = "local"

[model_providers.local]
name = "local"
base_url = {json.dumps(self.model_url + "/v1")}
wire_api = "responses"
requires_openai_auth = false
request_max_retries = 0
stream_max_retries = 0

[features]
hooks = true

[[hooks.PreToolUse]]
matcher = "*"

[[hooks.PreToolUse.hooks]]
type = "command"
command = {json.dumps(self.hook_command)}
"""
        (self.home / ".codex").mkdir(parents=True, exist_ok=True)
        (self.home / ".codex" / "config.toml").write_text(config)

    def argv(self, prompt: str) -> list[str]:
        return [self.executable(), "exec", "--json", "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox", "--dangerously-bypass-hook-trust", prompt]

    def agent_env(self) -> dict[str, str]:
        return {"CODEX_HOME": str(self.home / ".codex")}


class GeminiCli(AgentRunner):
    """Gemini CLI: ``gemini -p``, ``~/.gemini/settings.json``, ``streamGenerateContent``; the
    workspace must be trusted, else it exits 55."""

    name = "gemini-cli"

    def configure(self) -> None:
        _write_json(self.home / ".gemini" / "settings.json", {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
            "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
            "hooks": {"BeforeTool": _hook_entries(self.hook_command)}})

    def argv(self, prompt: str) -> list[str]:
        return [self.executable(), "-p", prompt, "-m", "gemini-2.5-flash", "--output-format", "stream-json",
                "--approval-mode", "yolo"]

    def agent_env(self) -> dict[str, str]:
        return {"GOOGLE_GEMINI_BASE_URL": self.model_url, "GEMINI_API_KEY": "dummy",
                "GEMINI_CLI_TRUST_WORKSPACE": "true"}


class CopilotCli(AgentRunner):
    """Copilot CLI: ``copilot -p``, hooks in ``$COPILOT_HOME/hooks/``, offline against an
    Anthropic-style provider."""

    name = "copilot-cli"

    def configure(self) -> None:
        _write_json(self.home / ".copilot" / "hooks" / "harness.json",
                    {"version": 1, "hooks": {"PreToolUse": _hook_entries(self.hook_command)}})

    def argv(self, prompt: str) -> list[str]:
        return [self.executable(), "-p", prompt, "--output-format", "json", "--no-auto-update", "--allow-all-tools"]

    def agent_env(self) -> dict[str, str]:
        # The package the binary unpacks on its first run (1 CPU-second, in a child process)
        # goes beside the install, as into a user's ~/.cache, not into each run's throwaway home.
        unpacked = install_dir(PINS[self.name]) / "unpacked"
        return {"COPILOT_PKG_CACHE_HOME": str(unpacked), "COPILOT_HOME": str(self.home / ".copilot"),
                "COPILOT_AUTO_UPDATE": "false",
                "COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": self.model_url,
                "COPILOT_PROVIDER_TYPE": "anthropic", "COPILOT_PROVIDER_API_KEY": "dummy",
                "COPILOT_MODEL": "claude-sonnet-4.5"}


RUNNERS: dict[str, type[AgentRunner]] = {r.name: r for r in (ClaudeCode, Codex, GeminiCli, CopilotCli)}
