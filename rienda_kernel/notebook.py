"""What a notebook front end (the kernel, the magics) keeps from one cell to the next.

A :class:`NotebookSession` holds the engine, the current agent, model override, confirm
policy and conversation. It imports nothing from Jupyter: the kernel and the magics both
drive it, and render what it returns.
"""

from __future__ import annotations

import os
from pathlib import Path

from .engine import Conversation, Rienda
from .engine.errors import ConfigError
from .engine.providers import provider_for

__all__ = ["CONFIRM_POLICIES", "NotebookSession"]

CONFIRM_POLICIES = ("ask", "allow", "deny")
CONFIRM_ENV = "RIENDA_CONFIRM"


class NotebookSession:
    """One notebook's Rienda state: one conversation at a time.

    ``confirm_policy`` is an explicit setting (``ask``/``allow``/``deny``) or None, in
    which case a front end asks when it can and denies otherwise. Its initial value comes
    from ``$RIENDA_CONFIRM`` (which kernel.json's ``env`` can carry).
    """

    def __init__(self, home: str | os.PathLike[str] | None = None, workdir: str | os.PathLike[str] = ".") -> None:
        self.rienda = Rienda(home=home, workdir=workdir)
        self.rienda.prepare_sandbox()  # the first cell should not wait for a V8 worker to start
        self.agent_id = "default"
        self.model: str | None = None
        self.confirm_policy = _policy_from_env()
        self._conversation: Conversation | None = None

    @property
    def conversation(self) -> Conversation:
        """The current conversation (a new session of the current agent on first use)."""
        if self._conversation is None:
            self._conversation = self.rienda.conversation(self.agent_id, None, self.model)
        return self._conversation

    @property
    def session_id(self) -> str | None:
        return self._conversation.session_id if self._conversation else None

    def use(self, agent_id: str) -> None:
        """Switch to ``agent_id`` (ConfigError if it cannot be loaded), in a new session."""
        self.rienda.agent(agent_id)
        self.agent_id = agent_id
        self.new()

    def new(self) -> None:
        """Start a new session with the current agent at the next prompt."""
        self._close()
        self._conversation = None

    def resume(self, session_id: str) -> Conversation:
        """Continue ``session_id`` (``last``: the newest saved session); its agent becomes
        the current one."""
        conversation = self.rienda.conversation(session_id=session_id, model=self.model)
        self._close()
        self._conversation = conversation
        self.agent_id = conversation.agent_id
        return conversation

    def set_model(self, model: str | None) -> None:
        """Override the agent's model (None: back to the agent's own)."""
        if model is not None:
            provider_for(model, self.rienda.config())
        self.model = model
        if self._conversation is not None:
            self._conversation.model = model

    def set_confirm(self, policy: str | None) -> None:
        if policy is not None and policy not in CONFIRM_POLICIES:
            raise ConfigError(f"confirm policy must be one of {', '.join(CONFIRM_POLICIES)}, got {policy!r}")
        self.confirm_policy = policy

    def set_home(self, home: str | os.PathLike[str]) -> None:
        """Point at another RIENDA_HOME (created if missing), in a new session."""
        path = Path(home).expanduser()
        path.mkdir(parents=True, exist_ok=True)
        self._close()
        self.rienda = Rienda(home=path, workdir=self.rienda.workdir, sandbox=self.rienda.sandbox)
        self.agent_id = "default"
        self._conversation = None

    def _close(self) -> None:
        if self._conversation is not None:
            self._conversation.close()


def _policy_from_env() -> str | None:
    value = os.environ.get(CONFIRM_ENV, "").strip().lower()
    if not value:
        return None
    if value not in CONFIRM_POLICIES:
        raise ConfigError(f"${CONFIRM_ENV} must be one of {', '.join(CONFIRM_POLICIES)}, got {value!r}")
    return value
