"""``rienda gate install AGENT`` then the real agent, run headless against the fake model:
one JavaScript hook file answers every point the agent exposes (issue 38), and each answer
changes what the agent does where the agent acts on it (docs/gate.md's table, from these
runs). Each decision is in the gate's session. Installing twice is one entry per event;
uninstalling leaves the agent's settings file as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rienda_kernel.engine.gate.install import settings_file
from rienda_kernel.engine.gate.protocols import WIRED_EVENTS
from rienda_kernel.engine.sessions.store import SessionStore

from .harness.model_server import FakeModelServer
from .harness.runners import RUNNERS

POLICY = """module.exports = {
  beforeRun(ctx, run) {
    if (/forbidden/.test(run.prompt)) return { allow: false, reason: "FORBIDDEN-WORD in the prompt" };
    return { context: "GATE-CONTEXT for " + ctx.session.gate.agent };
  },
  afterRun(ctx, run) { if (!run.continued) return { prompt: "GATE-GO-ON: check your work once more." }; },
  beforeToolExecute(ctx, call) {
    if (call.name === "shell" && /rm -rf/.test(call.arguments.command)) return { allow: false, reason: "DENIED-RM" };
  },
  afterToolExecute(ctx, call, result) { return { text: result.text + " [seen by the gate]" }; },
  beforeCompact(ctx, compaction) { return { cancel: true, reason: "NO-COMPACTION here" }; },
  beforeModelRequest(ctx, request) { return { system: "GATE-SYSTEM-RULE" }; },
  afterModelResponse(ctx, response) { return { text: response.text.replace("All done.", "GATE-REWROTE-THE-ANSWER") }; },
};
"""
PROMPT = "Run the shell command you are given, then say done."
# Where each agent was seen to act on an answer (docs/gate.md's table).
READS_PROMPT_CONTEXT = {"claude-code": True, "codex": True, "gemini-cli": True, "copilot-cli": False}


class Installed:
    """An agent whose settings the gate was installed into, and its runs."""

    def __init__(self, agent: str, root: Path, policy, server: FakeModelServer) -> None:
        self.runner = RUNNERS[agent](root, server.url, "true", policy.env)
        self.policy, self.server, self.agent = policy, server, agent
        self.settings = settings_file(agent, "user", self.runner.project, self.runner.env())
        self.before = self.settings.read_text() if self.settings.exists() else None
        for _ in range(2):  # twice: one entry per event all the same
            done = policy.install(self.runner, "install", agent)
            assert done.returncode == 0, done.stderr

    def run(self, prompt: str = PROMPT, *extra: str):
        if extra:
            argv = self.runner.argv
            self.runner.argv = lambda p: argv(p) + list(extra)  # type: ignore[method-assign]
        return self.runner.run(prompt, timeout=120)

    def requests_holding(self, text: str) -> int:
        return sum(text in json.dumps(exchange.body) for exchange in self.server.exchanges)

    def recorded(self) -> list[tuple[str, str]]:
        return self.policy.events()


@pytest.fixture
def installed(agent, tmp_path, gate_policy):
    """``installed(command)``: ``agent`` with the gate installed (its answer: POLICY), the
    fake model asking for ``command``."""
    servers: list[FakeModelServer] = []

    def make(command: str = "echo HELLO") -> Installed:
        server = FakeModelServer(command).__enter__()
        servers.append(server)
        return Installed(agent, tmp_path / agent, gate_policy(POLICY), server)

    yield make
    for server in servers:
        server.__exit__(None, None, None)


def test_install_wires_every_event_once_and_uninstall_leaves_the_file_as_it_was(agent, installed):
    made = installed()
    wired = [entry for entry in _entries(made) if "rienda-gate" in entry]
    assert len(wired) == len(WIRED_EVENTS[agent])  # installed twice: one entry per event
    done = made.policy.install(made.runner, "uninstall", agent)
    assert done.returncode == 0, done.stderr
    after = made.settings.read_text() if made.settings.exists() else None
    assert after == made.before


def _entries(made: Installed) -> list[str]:
    text = made.settings.read_text()
    return [line for line in text.splitlines() if "command" in line]


def test_a_prompt_with_a_forbidden_word_is_blocked_with_the_reason(agent, installed):
    made = installed()
    run = made.run("do the forbidden thing")
    assert made.server.exchanges == [] or all(e.method != "POST" for e in made.server.exchanges), run.describe()
    if agent != "codex":  # Codex says nothing of why on its JSON stream
        assert "FORBIDDEN-WORD" in run.stdout + run.stderr, run.describe()
    assert made.recorded()[0][1] == "block"


def test_every_point_reaches_the_agent_and_is_recorded(agent, installed):
    made = installed("echo HELLO")
    run = made.run()
    assert run.exit_code == 0, run.describe()
    assert bool(made.requests_holding(f"GATE-CONTEXT for {agent}")) == READS_PROMPT_CONTEXT[agent], run.describe()
    assert made.requests_holding("GATE-GO-ON"), run.describe()  # the stop kept going, once
    events = [event for event, _ in made.recorded()]
    prompt_event = {"gemini-cli": "BeforeAgent"}.get(agent, "UserPromptSubmit")
    assert events[0] == prompt_event and events.count(prompt_event) >= 1, events
    answers = dict(made.recorded())
    assert answers[prompt_event] == "context"
    sessions = SessionStore(made.policy.home).list()
    assert [info.gate for info in sessions] == [agent]
    if agent == "gemini-cli":  # its model request and answer: rewritten
        assert made.requests_holding("GATE-SYSTEM-RULE"), run.describe()
        assert "GATE-REWROTE-THE-ANSWER" in run.stdout, run.describe()
    # The result as the hooks made it: read as added context by all but Copilot CLI
    assert bool(made.requests_holding("[seen by the gate]")) == (agent != "copilot-cli"), run.describe()


def test_a_refused_tool_call_is_refused(agent, installed):
    made = installed("rm -rf target.txt")
    (made.runner.project / "target.txt").write_text("keep\n")
    run = made.run()
    assert run.exit_code == 0, run.describe()
    assert (made.runner.project / "target.txt").read_text() == "keep\n"
    assert any("DENIED-RM" in result for result in made.server.tool_results()), run.describe()


@pytest.mark.parametrize("agent", ["claude-code"], indirect=True)  # the one agent seen to let a hook stop one
def test_claude_code_lets_a_hook_block_a_compaction(agent, installed):
    made = installed()
    assert made.run().exit_code == 0
    run = made.run("/compact keep the numbers", "--continue")
    assert "Compaction blocked by PreCompact hook" in run.stdout and "NO-COMPACTION here" in run.stdout, run.describe()
    assert ("beforeCompact", "refused") in made.policy.ledger()
