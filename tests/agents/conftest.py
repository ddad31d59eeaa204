"""Fixtures for the tests that run the real agent CLIs against a fake model server.

``agent`` is each agent under test (all four by default; ``RIENDA_TEST_AGENTS=claude-code,codex``
picks some), installed from npm on first use. ``guard`` is each hook command of ``GUARDS``
(one entry more runs the tests of ``test_hooks_in_agents`` against another hook, for instance
``rienda gate AGENT`` with a JS hook in a throwaway Rienda home); ``script_hook(mode)`` gives
the Python hook script in other modes (``policies``). ``agent_trial`` runs one agent once: a
fake model scripting one shell command, files put in the project first.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pytest

from .harness.gate_policy import GatePolicy
from .harness.install import PINS, AgentInstallError, executable
from .harness.model_server import FakeModelServer
from .harness.policies import HookPolicy, ScriptPolicy
from .harness.runners import RUN_TIMEOUT_S, RUNNERS, AgentRun


def _agents_under_test() -> list[str]:
    chosen = [a.strip() for a in os.environ.get("RIENDA_TEST_AGENTS", ",".join(PINS)).split(",") if a.strip()]
    unknown = sorted(set(chosen) - set(PINS))
    if unknown:
        raise pytest.UsageError(f"RIENDA_TEST_AGENTS names {unknown}; known agents: {sorted(PINS)}")
    return chosen


@pytest.fixture(params=_agents_under_test())
def agent(request: pytest.FixtureRequest) -> str:
    """An agent's name, its pinned CLI installed (a clear failure when npm cannot install it)."""
    try:
        executable(request.param)
    except AgentInstallError as error:
        failure = str(error)
    else:
        return request.param
    pytest.fail(failure, pytrace=False)


# The hooks ``guard`` gives, each a command refusing ``rm -rf`` with DENY_REASON and rewriting
# ``echo A > F`` to ``echo B > F``: the tests of test_hooks_in_agents run once per entry.
GUARDS: dict[str, Callable[[Path], HookPolicy]] = {
    "python-script": lambda folder: ScriptPolicy(folder, "guard"),
    "rienda-gate": GatePolicy,
}


@pytest.fixture(params=list(GUARDS))
def guard(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[HookPolicy]:
    """Each hook of ``GUARDS`` in turn, set up in a folder of its own."""
    policy = GUARDS[request.param](tmp_path / request.param)
    yield policy
    if isinstance(policy, GatePolicy):
        policy.close()


@pytest.fixture
def gate_policy(tmp_path: Path) -> Iterator[Callable[..., GatePolicy]]:
    """``gate_policy(source=GUARD)``: a :class:`GatePolicy` whose warm server, if a call
    started one, ends with the test."""
    made: list[GatePolicy] = []

    def make(source: str | None = None) -> GatePolicy:
        made.append(GatePolicy(tmp_path / f"gate{len(made)}", *([source] if source is not None else [])))
        return made[-1]

    yield make
    for policy in made:
        policy.close()


@pytest.fixture
def script_hook(tmp_path: Path) -> Callable[[str], ScriptPolicy]:
    """``script_hook(mode)``: the Python hook script answering per ``mode`` (``policies``)."""
    return lambda mode: ScriptPolicy(tmp_path / mode, mode)


@dataclass
class AgentTrial:
    """One headless run of an agent, the model server it talked to and its project folder."""

    run: AgentRun
    server: FakeModelServer
    project: Path

    def describe(self) -> str:
        """The run and the model's side of it, for an assertion's message."""
        return f"{self.run.describe()}\n  model requests:\n{self.server.describe()}"


@pytest.fixture
def agent_trial(tmp_path: Path) -> Callable[..., AgentTrial]:
    """``agent_trial(agent, policy, command, files={}, timeout=...)``: run ``agent`` once with
    ``policy`` as its hook, the model asking for one shell ``command``; ``files`` are written
    first; past ``timeout`` seconds the run is killed (its ``exit_code`` None)."""

    def trial(agent: str, policy: HookPolicy, command: str, files: dict[str, str] | None = None,
              timeout: float = RUN_TIMEOUT_S) -> AgentTrial:
        with FakeModelServer(command) as server:
            runner = RUNNERS[agent](tmp_path / agent, server.url, policy.command(agent), policy.env)
            for name, text in (files or {}).items():
                (runner.project / name).write_text(text)
            run = runner.run(timeout=timeout)
        return AgentTrial(run, server, runner.project)

    return trial
