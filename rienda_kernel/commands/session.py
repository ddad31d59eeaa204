"""What a front end that talks turn after turn (the kernel, the magics, ``rienda chat``) keeps
from one turn to the next.

A :class:`TurnSession` holds the engine, the current agent, model override, confirm
policy and conversation. It imports nothing from Jupyter: the kernel, the magics and
``rienda chat`` drive it, and render what it returns (what only the notebooks add is in
:mod:`rienda_kernel.jupyter.notebook`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..engine import (
    CONFIRM_ENV,
    ConfigError,
    ConfirmPolicy,
    Conversation,
    Rienda,
    RiendaError,
    SavedExtension,
    Tool,
    confirm_policy,
)
from ..frontend.output import os_error_text

__all__ = ["TurnSession"]


class TurnSession:
    """One front end's Rienda state from turn to turn (a notebook's, ``rienda chat``'s): one
    conversation at a time.

    ``confirm_policy`` is an explicit setting (``ask``/``allow``/``deny``) or None, in
    which case a front end asks when it can and denies otherwise. Its initial value comes
    from ``$RIENDA_CONFIRM`` (which kernel.json's ``env`` can carry). ``extra_tools`` are the
    front end's own built-ins (the notebook tools), kept when the home changes.
    ``prefix`` is how the front end spells a command in what the commands say (usage
    lines, hints): ``%rienda `` in a notebook, ``/`` in ``rienda chat``.
    """

    prefix = "%rienda "

    def __init__(self, home: str | os.PathLike[str] | None = None, workdir: str | os.PathLike[str] = ".",
                 extra_tools: Mapping[str, Tool] | None = None) -> None:
        self.rienda = Rienda(home=home, workdir=workdir, extra_tools=extra_tools)
        self.rienda.prepare_sandbox()  # the first cell should not wait for a V8 worker to start
        self.agent_id = "default"
        self.model: str | None = None
        self.confirm_policy = _policy_from_env()
        self._conversation: Conversation | None = None
        self._by_agent: dict[str, Conversation] = {}  # conversation_for(agent=...): one per agent

    @property
    def conversation(self) -> Conversation:
        """The current conversation (a new session of the current agent on first use)."""
        if self._conversation is None:
            self._conversation = self.rienda.conversation(self.agent_id, None, self.model)
        return self._conversation

    @property
    def session_id(self) -> str | None:
        return self._conversation.session_id if self._conversation else None

    def conversation_for(self, agent: str | None = None, session: str | None = None) -> Conversation:
        """The conversation of a cell that names its own agent or session, leaving the
        current one as it is: ``session`` (an id or ``last``) continues that session
        (the current conversation, if it is that one); ``agent`` is one session of that
        agent shared by every cell naming it; neither is the current conversation."""
        if session is not None:
            session_id = self.rienda.resolve_session(session)
            if session_id == self.session_id:
                return self.conversation
            return self.rienda.conversation(session_id=session_id, model=self.model)
        if agent is None:
            return self.conversation
        if agent not in self._by_agent:
            self.rienda.agent(agent)  # ConfigError now, for an agent that cannot be loaded
            self._by_agent[agent] = self.rienda.conversation(agent, None, self.model)
        return self._by_agent[agent]

    def check_model(self, model: str) -> None:
        """ConfigError unless ``model`` names a provider that can be set up here."""
        self.rienda.check_model(model)

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
            self.check_model(model)
        self.model = model
        if self._conversation is not None:
            self._conversation.model = model

    def set_confirm(self, policy: str | None) -> None:
        """``%rienda confirm``: an explicit policy, or None (back to config.yaml's, else ask)."""
        self.confirm_policy = None if policy is None else confirm_policy(policy, "the confirm policy")

    def turn_policy(self) -> ConfirmPolicy:
        """The policy a turn runs with: the explicit one (``%rienda confirm``,
        ``$RIENDA_CONFIRM``), else config.yaml's, else ``ask``."""
        return self.rienda.confirm_policy(self.confirm_policy)

    def set_home(self, home: str | os.PathLike[str]) -> None:
        """Point at another RIENDA_HOME, in a new session: an existing folder, or a new one
        (its missing folders made) inside an existing folder or the notebook's own; a path
        elsewhere whose folder is missing is taken for a typo and refused."""
        path = Path(home).expanduser()
        if path.exists() and not path.is_dir():
            raise ConfigError(f"{path} is a file, not a folder")
        parent = path.absolute().parent
        if not path.exists() and not parent.is_dir() and not parent.is_relative_to(Path.cwd()):
            raise ConfigError(f"{path} does not exist, nor does its folder {parent}; give an existing Rienda "
                              "home, or a new one inside an existing folder or this notebook's")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot make {path} a Rienda home: {os_error_text(exc)}") from exc
        self._close_all()
        self.rienda.close()  # the old home's MCP servers
        recording = self.rienda.recording  # the notebook's recording goes on in the new home
        self.rienda = Rienda(home=path, workdir=self.rienda.workdir, sandbox=self.rienda.sandbox,
                             extra_tools=self.rienda.extra_tools)
        self.rienda.recording = recording
        self.agent_id = "default"
        self._conversation = None

    def name_turn(self, prompt: str, count: int | None) -> None:
        """What the recording's lines call the next turn, if one is open: ``cell [3]`` (its
        execution count, when the front end counts it), else the cell by its prompt's first
        line (nbval runs every cell as execution 1)."""
        if self.rienda.recording is not None:
            first = prompt.strip().splitlines()[0] if prompt.strip() else ""
            shown = first if len(first) <= 40 else first[:39] + "…"
            self.rienda.recording.label = f"cell [{count}]" if count is not None else f"the cell “{shown}”"

    def save_extension(self, kind: str, name: str, source: str) -> SavedExtension:
        """Write and load ``<home>/<kind>/<name>/index.js``; see :meth:`Rienda.save_extension`."""
        return self.rienda.save_extension(kind, name, source)

    def close(self) -> None:
        """Done with this notebook: its conversations, and the MCP servers its Rienda started."""
        self._close_all()
        self.rienda.close()

    def _close(self) -> None:
        if self._conversation is not None:
            self._conversation.close()

    def _close_all(self) -> None:
        self._close()
        for conversation in self._by_agent.values():
            conversation.close()
        self._by_agent.clear()


def _policy_from_env() -> ConfirmPolicy | None:
    value = os.environ.get(CONFIRM_ENV, "")
    return confirm_policy(value, f"${CONFIRM_ENV}") if value.strip() else None
