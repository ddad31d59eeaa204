"""``rienda gate AGENT`` as the hook command: a throwaway Rienda home whose agent ``gate``
runs one JavaScript hook; what the hook was asked about is read back from the sessions the
gate records (one per session of the other agent).

The agent's hook runs ``python -m rienda_kernel.cli`` of the interpreter running the tests
(or, once :meth:`GatePolicy.install` wired it, the ``rienda-gate`` beside that interpreter),
with ``PYTHONPATH`` set to the checkout the tests import Rienda from: the gate that runs is
the code under test, whatever else is installed. Its ``TMPDIR`` is a short folder of its
own (a Unix socket's path holds at most 108 bytes), where the warm server the first call
starts listens; :meth:`GatePolicy.close` ends that server.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import rienda_kernel
from rienda_kernel.engine.events import HookDecision
from rienda_kernel.engine.sessions.messages import Message
from rienda_kernel.engine.sessions.store import SessionStore

from ...helpers.homes import write_agent, write_extension
from .policies import DENY_REASON
from .runners import AgentRunner

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
        self.tmp = Path(tempfile.mkdtemp(prefix="gate-agents-"))
        self.env = {"PYTHONPATH": str(Path(rienda_kernel.__file__).resolve().parents[1]), "TMPDIR": str(self.tmp)}

    def command(self, agent: str) -> str:
        return shlex.join([sys.executable, "-m", "rienda_kernel.cli", "--home", str(self.home), "gate", agent])

    def install(self, runner: AgentRunner, *words: str) -> subprocess.CompletedProcess:
        """``rienda gate install|uninstall AGENT WORDS`` as a person at ``runner``'s
        machine would run it (its HOME, its agent's settings folders), in its project."""
        return subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "--home", str(self.home), "gate", *words],
                              env=runner.env(), cwd=runner.project, capture_output=True, text=True, timeout=120)

    def close(self) -> None:
        """End the warm server a call started (its process id is in its lock file), then
        remove the folder."""
        for lock in self.tmp.glob("rienda-gate-*/*.lock"):
            written = lock.read_text().strip()
            if written.isdigit():
                try:
                    os.kill(int(written), signal.SIGTERM)
                except ProcessLookupError:
                    pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    def commands_seen(self) -> list[str]:
        """The shell commands of the calls the gate recorded, in each session's order."""
        return [call.arguments["command"] for message in self._calls()
                for call in message.tool_calls if call.name == "shell" and isinstance(call.arguments, dict)]

    def answers(self) -> list[str]:
        """The answer the gate recorded giving for each call (``deny``, ``ask``, ...)."""
        return [message.meta.gate["answer"] for message in self._calls() if message.meta.gate]

    def events(self) -> list[tuple[str, str]]:
        """Each event the gate recorded (the agent's event name, the answer), in order."""
        store = SessionStore(self.home)
        return [(m.meta.gate["event"], m.meta.gate["answer"]) for info in store.list()
                for m in store.load(info.id).messages if m.meta.gate and "event" in m.meta.gate]

    def ledger(self) -> list[tuple[str, str]]:
        """Each hook decision the gate recorded: (point, effect)."""
        store = SessionStore(self.home)
        return [(record.point, record.effect) for info in store.list()
                for record in store.load(info.id).records_of(HookDecision)]

    def _calls(self) -> list[Message]:
        store = SessionStore(self.home)
        return [message for info in store.list() for message in store.load(info.id).messages if message.tool_calls]
