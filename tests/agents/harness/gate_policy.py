"""``rienda gate AGENT`` as the hook command: a throwaway Rienda home whose agent ``gate``
runs one JavaScript hook; what the hook was asked about is read back from the sessions the
gate records (one per session of the other agent).

The agent's hook runs ``python -m rienda_kernel.cli`` of the interpreter running the tests,
with ``PYTHONPATH`` set to the checkout the tests import Rienda from: the gate that runs is
the code under test, whatever else is installed.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import rienda_kernel
from rienda_kernel.engine.sessions.messages import Message
from rienda_kernel.engine.sessions.store import SessionStore

from ...helpers.homes import write_agent, write_extension
from .policies import DENY_REASON

# The guard of test_hooks_in_agents as a Rienda hook: refuses rm -rf, rewrites `echo A > F`.
GUARD = """module.exports = {
  beforeToolExecute(ctx, call) {
    if (call.name !== "shell") return;
    const command = call.arguments.command;
    if (command.includes("rm -rf")) return { allow: false, reason: %s };
    if (/^echo A >/.test(command)) return { arguments: { command: command.replace(/^echo A >/, "echo B >") } };
  },
};
""" % repr(DENY_REASON)


class GatePolicy:
    """``rienda --home HOME gate AGENT`` with ``source`` as the one hook of HOME's agent ``gate``."""

    def __init__(self, folder: Path, source: str = GUARD) -> None:
        self.home = folder / "rienda-home"
        write_extension(self.home, "hooks", "policy", source)
        write_agent(self.home, "gate", hooks=["policy"], model="openai/unused")
        self.env = {"PYTHONPATH": str(Path(rienda_kernel.__file__).resolve().parents[1])}

    def command(self, agent: str) -> str:
        return shlex.join([sys.executable, "-m", "rienda_kernel.cli", "--home", str(self.home), "gate", agent])

    def commands_seen(self) -> list[str]:
        """The shell commands of the calls the gate recorded, in each session's order."""
        return [call.arguments["command"] for message in self._calls()
                for call in message.tool_calls if call.name == "shell" and isinstance(call.arguments, dict)]

    def answers(self) -> list[str]:
        """The answer the gate recorded giving for each call (``deny``, ``ask``, ...)."""
        return [message.meta["gate"]["answer"] for message in self._calls()]

    def _calls(self) -> list[Message]:
        store = SessionStore(self.home)
        return [message for info in store.list() for message in store.load(info.id).messages if message.tool_calls]
