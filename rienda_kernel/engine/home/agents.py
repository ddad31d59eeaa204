"""Agent definitions: ``RIENDA_HOME/agents/<id>.md``, YAML front matter then a system prompt.

::

    ---
    description: Reviews diffs
    model: openai/gpt-4o
    tools: [read, shell]
    hooks: [audit, guard]      # execution order
    fail_closed: [guard]       # if guard fails at beforeToolExecute, refuse the call
    ---
    You review code...

The file stem is the agent id. ``model`` (``provider/model``) is what a run calls: a file
without it is an agent only ``rienda gate``, ``rienda hook`` and replay can use (its model
is ``""``; a run refuses it in one line, but ``default`` chooses one as the built-in
does), unless another key is unknown (``modle:``), when the file is an error naming that
key first; ``description``
(string), ``tools`` and ``hooks`` (lists of names), ``max_turns`` (a positive integer: the
most model turns one run may take), ``options`` (a mapping handed to the model's
provider, which checks it), ``agents`` (the agents the ``agent`` tool may start; absent:
any), ``max_depth`` (how many levels of sub-agents may run below this one, 0 or more) and
``fail_closed`` (hooks of ``hooks`` whose failure at ``beforeToolExecute`` refuses the call
instead of being skipped, :mod:`..hooks`) are optional. A malformed file raises
:class:`AgentError` (a :class:`ConfigError`) whose message starts ``<path>:<line>:``; an
unknown key is only a :class:`Diagnostic`, but is named first when ``model`` is missing
(``modle:``: "did you mean 'model'?"). ``default`` is built in unless
``agents/default.md`` overrides it; its model is ``default_model`` from config.yaml, else
chosen when it runs (:mod:`..providers.choice`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .front_matter import AgentError, compose, item_lines, kind, split_front_matter
from ..common.json_value import JSON, JSONObject
from ..tools.model import NAME_RULE
from ..common.hints import LEADING_HINT, did_you_mean, shown
from ..errors import ConfigError
from ..events import Diagnostic

__all__ = ["AGENT_SOURCE", "DEFAULT_AGENT_ID", "STANDARD_TOOLS", "Agent", "AgentError", "list_agents", "load_agent"]

DEFAULT_AGENT_ID = "default"
AGENT_SOURCE = "extensions:agent"
STANDARD_TOOLS = ("shell", "http", "read", "write")  # the built-in default agent's tools (builtins/standard.py)
_KEYS = ("description", "model", "tools", "hooks", "max_turns", "options", "agents", "max_depth", "fail_closed")
_MODEL_HINT = "model must be provider/model, e.g. openai/gpt-4o"
_DEFAULT_DESCRIPTION = "Rienda's default agent: the built-in tools and no hooks."
_DEFAULT_SYSTEM = (
    "You are Rienda, a careful assistant working in the user's workspace. "
    "Use the tools to look before you change anything, and prefer small, verifiable steps. "
    "Answer concisely, and say plainly when something failed or you are unsure."
)


@dataclass(frozen=True)
class Agent:
    """A loaded agent. ``path`` is None for the built-in default; ``hooks`` is in
    execution order. ``model`` is "" for the built-in default without a ``default_model``
    or an ``agents/default.md`` that names none (the run chooses one:
    :func:`..providers.choice.choose_default_model`), and for any other file that names
    none (a gate's policy, which a run refuses)."""

    id: str
    description: str
    model: str
    tools: tuple[str, ...]
    hooks: tuple[str, ...]
    system: str
    path: str | None
    max_turns: int | None = None  # None: the configuration's default
    options: Mapping[str, JSON] = field(default_factory=dict)  # for the provider
    agents: tuple[str, ...] | None = None  # the agents its ``agent`` tool may start; None: any
    max_depth: int | None = None  # levels of sub-agents below it; None: the configuration's
    fail_closed: tuple[str, ...] = ()  # hooks (of ``hooks``) whose failure refuses a tool call
    model_line: int | None = field(default=None, compare=False)  # where the file says model: (for messages)

    @property
    def model_where(self) -> str | None:
        """``file:line`` of the agent file's ``model:`` (None for the built-in agent)."""
        return None if self.path is None else f"{self.path}:{self.model_line or 1}"

    @property
    def model_label(self) -> str:
        """``model`` as listings show it ("chosen when it runs" for the unset default, "none"
        for a file that names none)."""
        return self.model or ("chosen when it runs" if self.id == DEFAULT_AGENT_ID else "none (rienda gate only)")

    @property
    def provider(self) -> str:
        """The part of ``model`` before the first ``/``."""
        return self.model.split("/", 1)[0]

    @property
    def model_name(self) -> str:
        """The part of ``model`` after the first ``/`` (may itself contain ``/``)."""
        return self.model.partition("/")[2]

    def to_ctx(self) -> JSONObject:
        """What extensions see as ``ctx.agent``."""
        return {
            "id": self.id,
            "description": self.description,
            "model": self.model,
            "tools": list(self.tools),
            "hooks": list(self.hooks),
        }


def builtin_default_agent(default_model: str | None = None) -> Agent:
    """The built-in ``default`` agent: the standard built-in tools (``shell``, ``http``,
    ``read``, ``write``; not ``agent``), no hooks, ``default_model`` (not validated) or "" (chosen when it runs)."""
    return Agent(
        id=DEFAULT_AGENT_ID,
        description=_DEFAULT_DESCRIPTION,
        model=default_model or "",
        tools=STANDARD_TOOLS,
        hooks=(),
        system=_DEFAULT_SYSTEM,
        path=None,
    )


# ---------------------------------------------------------------- the keys


# The front matter as YAML made it (keys of any YAML type), and each key's line.
_Data = dict[JSON, JSON]


def _check_model(path: Path, data: _Data, lines: dict[str, int]) -> str:
    if "model" not in data:  # a misspelt key is named first: it is what to fix
        unknown = _unknown(data, lines)
        if not unknown:
            return ""  # an agent for rienda gate, which never calls a model; a run refuses it
        raise AgentError(path, unknown[0][0] if unknown else 1, "; ".join(
            [what for _, what in unknown] + [f"missing required key 'model' ({_MODEL_HINT})"]))
    model = data["model"]
    line = lines.get("model", 1)
    if not isinstance(model, str):
        raise AgentError(path, line, f"{_MODEL_HINT}, got {kind(model)}")
    provider, slash, name = model.partition("/")
    if not slash or not provider.strip() or not name.strip():
        raise AgentError(path, line, f"{_MODEL_HINT}, got {model!r}")
    return model


def _check_description(path: Path, data: _Data, lines: dict[str, int]) -> str:
    description = data.get("description")
    if description is None:
        return ""
    if not isinstance(description, str):
        raise AgentError(path, lines.get("description", 1), f"description must be a string, got {kind(description)}")
    return description


def _check_names(path: Path, key: str, data: _Data, item_lines: list[int], line: int) -> tuple[str, ...]:
    """``tools``, ``hooks`` or ``agents``: a list of distinct valid names (absent or empty = none)."""
    names = data.get(key)
    if names is None:
        return ()
    if not isinstance(names, list):
        raise AgentError(path, line, f"{key} must be a list of names, got {kind(names)}")
    seen: dict[str, int] = {}
    for index, name in enumerate(names):
        where = item_lines[index] if index < len(item_lines) else line
        if not isinstance(name, str):
            raise AgentError(path, where, f"{key} must be a list of names, but item {index + 1} is {kind(name)}")
        if not NAME_RULE.fullmatch(name):
            raise AgentError(path, where, f"{key}: {name!r} is not a valid name (1 to 64 letters, digits, '_' or '-')")
        if name in seen:
            raise AgentError(path, where, f"{key} lists {name!r} twice (first at line {seen[name]})")
        seen[name] = where
    return tuple(names)


_COUNTS = {"max_turns": (1, "a positive whole number of model turns"),
           "max_depth": (0, "a whole number of sub-agent levels (0 or more)")}


def _check_count(path: Path, key: str, data: _Data, lines: dict[str, int]) -> int | None:
    """``max_turns`` or ``max_depth``: a whole number from its minimum up, or None when absent."""
    value = data.get(key)
    if value is None:
        return None
    least, expected = _COUNTS[key]
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise AgentError(path, lines.get(key, 1), f"{key} must be {expected}, got {shown(value)}")
    return value


def _check_options(path: Path, data: _Data, lines: dict[str, int]) -> JSONObject:
    value = data.get("options")
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise AgentError(path, lines.get("options", 1),
                         f"options must be a mapping of provider options (e.g. max_tokens: 512), got {kind(value)}")
    return dict(value)


def _check_fail_closed(path: Path, hooks: tuple[str, ...], closed: tuple[str, ...],
                       where: list[int]) -> tuple[str, ...]:
    """``fail_closed``: names the agent's ``hooks`` list too (it marks how they run)."""
    for index, name in enumerate(closed):
        if name not in hooks:
            hint = did_you_mean(name, hooks, form=LEADING_HINT)
            raise AgentError(path, where[index] if index < len(where) else 1,
                             f"fail_closed lists {name!r}, which hooks does not ({hint}fail_closed marks hooks the "
                             f"agent runs: {', '.join(hooks) or 'none'})")
    return closed


def _unknown_keys(path: Path, data: _Data, lines: dict[str, int]) -> list[Diagnostic]:
    return [Diagnostic(AGENT_SOURCE, f"{path}:{line}: {what}; ignored", path=str(path), line=line)
            for line, what in _unknown(data, lines)]


def _unknown(data: _Data, lines: dict[str, int]) -> list[tuple[int, str]]:
    """Each unknown key's line and "unknown key ... (did you mean ...?)"."""
    found = []
    for key in data:
        if key not in _KEYS:
            found.append((lines.get(key) or lines.get(str(key), 1), f"unknown key {key!r}{did_you_mean(key, _KEYS)}"))
    return found


# ---------------------------------------------------------------- loading


def parse_agent(path: Path, agent_id: str, text: str) -> tuple[Agent, list[Diagnostic]]:
    """Parse an agent file's ``text`` (read from ``path``, named in messages).

    Raises :class:`AgentError` for any malformed part; unknown keys are diagnostics.
    """
    source, body = split_front_matter(path, text)
    data, node, lines = compose(path, source)
    names = {key: _check_names(path, key, data, item_lines(node, key), lines.get(key, 1))
             for key in ("tools", "hooks", "agents", "fail_closed")}
    agent = Agent(
        id=agent_id,
        description=_check_description(path, data, lines),
        model=_check_model(path, data, lines),
        tools=names["tools"],
        hooks=names["hooks"],
        system=body,
        path=str(path),
        max_turns=_check_count(path, "max_turns", data, lines),
        options=_check_options(path, data, lines),
        agents=names["agents"] if data.get("agents") is not None else None,
        max_depth=_check_count(path, "max_depth", data, lines),
        fail_closed=_check_fail_closed(path, names["hooks"], names["fail_closed"], item_lines(node, "fail_closed")),
        model_line=lines.get("model"),
    )
    return agent, _unknown_keys(path, data, lines)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentError(path, 1, f"cannot be read: {getattr(exc, 'strerror', None) or exc}") from exc


def _check_readable(folder: Path) -> None:
    """ConfigError when ``folder`` (``agents/``) exists but cannot be listed or entered:
    which agents it holds (a ``default.md`` too) cannot be known."""
    if os.access(folder, os.F_OK) and not os.access(folder, os.R_OK | os.X_OK):
        raise ConfigError(f"{folder}: cannot be read: permission denied; its agents cannot be loaded")


def _available_ids(folder: Path) -> tuple[list[str], list[str]]:
    """Agent ids that load (valid stems of ``*.md`` whose file parses), with the built-in
    default; and the ids whose file does not."""
    ids, broken = {DEFAULT_AGENT_ID}, []
    for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        try:
            if NAME_RULE.fullmatch(path.stem):
                parse_agent(path, path.stem, _read(path))
                ids.add(path.stem)
        except ConfigError:
            broken.append(path.stem)
    return sorted(ids), broken


def load_agent(home: Path, agent_id: str, *, default_model: str | None = None) -> tuple[Agent, list[Diagnostic]]:
    """The agent ``home/agents/<agent_id>.md`` and the diagnostics about its file.

    ``default`` without a file is the built-in default agent (``default_model`` is its
    model). Raises :class:`ConfigError` for an invalid id, a missing agent (naming the
    file looked for and the available ids) or a malformed file (:class:`AgentError`).
    """
    folder = Path(home) / "agents"
    if not isinstance(agent_id, str) or not NAME_RULE.fullmatch(agent_id):
        raise ConfigError(f"{agent_id!r} is not a valid agent id (1 to 64 letters, digits, '_' or '-')")
    path = folder / f"{agent_id}.md"
    _check_readable(folder)
    if not path.is_file():
        if agent_id == DEFAULT_AGENT_ID:
            return builtin_default_agent(default_model), []
        available, broken = _available_ids(folder)
        hint = did_you_mean(agent_id, available + broken, form=LEADING_HINT)
        failing = f"; failed to load: {', '.join(broken)} (the agents listing says why)" if broken else ""
        raise ConfigError(f"no agent {agent_id!r}: {path} does not exist ({hint}available: {', '.join(available)}"
                          f"{failing})")
    return parse_agent(path, agent_id, _read(path))


def list_agents(home: Path, *, default_model: str | None = None) -> tuple[list[Agent], list[Diagnostic]]:
    """Every valid agent, sorted by id, and the diagnostics of all files.

    The built-in default is included unless ``agents/default.md`` exists (even a broken
    one overrides it). A malformed file or invalid file name becomes a diagnostic and is
    skipped; nothing is raised.
    """
    folder = Path(home) / "agents"
    agents: dict[str, Agent] = {}
    diagnostics: list[Diagnostic] = []
    try:
        _check_readable(folder)
    except ConfigError as exc:
        return [], [Diagnostic(AGENT_SOURCE, str(exc), path=str(folder))]
    files = sorted(folder.glob("*.md")) if folder.is_dir() else []
    for path in files:
        if not path.is_file():
            continue
        if not NAME_RULE.fullmatch(path.stem):
            diagnostics.append(Diagnostic(
                AGENT_SOURCE, f"{path}: skipped: {path.stem!r} is not a valid agent id "
                "(1 to 64 letters, digits, '_' or '-')", path=str(path)))
            continue
        try:
            agent, found = parse_agent(path, path.stem, _read(path))
        except AgentError as exc:
            diagnostics.append(Diagnostic(AGENT_SOURCE, str(exc), path=exc.path, line=exc.line))
            continue
        agents[agent.id] = agent
        diagnostics.extend(found)
    if not (folder / f"{DEFAULT_AGENT_ID}.md").is_file():
        agents[DEFAULT_AGENT_ID] = builtin_default_agent(default_model)
    return [agents[key] for key in sorted(agents)], diagnostics
