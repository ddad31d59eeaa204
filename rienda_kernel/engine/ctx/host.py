"""The Python side of ``ctx``: what one invocation of a tool or hook may do.

Every tool and hook gets the same ``ctx``. :class:`RunContext` is what a whole run shares
(workdir, session, agent, redacted config, environment, the front end); :class:`Host`
serves one invocation's host calls, tagging its events with the invocation's ``source``
and honouring its cancel token. Errors raised here reach JavaScript as ``Error`` objects
named after the Python class (``FileNotFoundError``, ``TypeError``...), which the
extension can catch.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .processes import run_command
from ..cancel import CancelToken
from ..common.json_value import JSON, JSONObject
from ..events import Log, Notify, Output, StreamName
from ..tools.model import SubagentStarter
from ..ui import Approvals, ScrubbingUI
from .files import READ_CAP, Workspace

__all__ = ["HOST_TEXT_CAP", "Host", "RunContext"]

# The most text one host call hands an extension: a ctx.http.fetch body (bytes), each of
# ctx.system.exec's stdout and stderr (characters; all of it is shown live as it comes),
# a ctx.file.read (bytes). Past it the value is cut and says so (``truncated: true``), or
# (a file) the call throws. An invocation's V8 worker (128 MiB) holds a few copies of it on
# the way in, up to six times its size once JSON escapes it (control characters): 6 MiB of
# NUL bytes already end a call out of memory.
HOST_TEXT_CAP = READ_CAP


@dataclass(frozen=True)
class RunContext:
    """What every ``ctx`` of one run shares.

    ``session`` holds at least ``id``; ``agent`` at least ``id``, ``description``,
    ``model``, ``tools`` and ``hooks``; ``config`` is the user's configuration with
    secrets already redacted; ``env`` the environment variables ``ctx.env`` shows.

    ``ui`` is always a :class:`ScrubbingUI` (a front end given as it is, as tests do, is
    put behind one), so every event an extension or the loop emits reaches the front end
    scrubbed, and ``ctx.confirm`` is decided there, once.

    ``subagent`` is what ``ctx.subagent`` shows: None (``undefined`` in JavaScript) in a
    top-level run, ``{agent, depth, parentSessionId, callId}`` in a sub-agent's run.
    ``subagents`` starts sub-agents for the ``agent`` tool (:mod:`..runtime.subagents`);
    None where no run is going on (``rienda call``, ``rienda hook``, replay).
    """

    workdir: Path
    ui: ScrubbingUI
    session: JSONObject = field(default_factory=lambda: {"id": None})
    agent: JSONObject = field(default_factory=dict)
    config: JSONObject = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    subagent: JSONObject | None = None
    subagents: SubagentStarter | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "ui", ScrubbingUI.around(self.ui))


class Host:
    """Serves the host calls of one invocation (``source`` is e.g. ``"tool:word-count"``).

    Also what a built-in tool runs against: ``workspace``, ``cancel``, ``emit_output``,
    ``emit_log``, and ``call_id``, the id of the model's tool call being served (None
    outside a run's call).
    """

    def __init__(self, run: RunContext, source: str, cancel: CancelToken, call_id: str | None = None) -> None:
        self.run = run
        self.source = source
        self.cancel = cancel
        self.call_id = call_id
        self._ops: dict[str, Callable[[JSON], object]] = {
            "workdir": lambda _: str(self.workspace.workdir),
            "session": lambda _: dict(run.session),
            "agent": lambda _: dict(run.agent),
            "subagent": lambda _: None if run.subagent is None else dict(run.subagent),
            "config": lambda _: run.config,
            "env": lambda _: dict(run.env),
            "file.read": lambda a: self.workspace.read(a["path"]),
            "file.write": lambda a: self.workspace.write(a["path"], a["text"]),
            "file.exists": lambda a: self.workspace.exists(a["path"]),
            "file.list": lambda a: self.workspace.list(a["path"]),
            "http.fetch": self._fetch,
            "system.exec": self._exec,
            "log": self._log,
            "confirm": self._confirm,
            "notify": self._notify,
        }

    @property
    def subagents(self) -> SubagentStarter | None:
        """The run's sub-agents (None where no run is going on)."""
        return self.run.subagents

    @property
    def approvals(self) -> Approvals | None:
        """The confirms the run's session allowed "for this session" (None outside a run)."""
        return self.run.ui.approvals

    @functools.cached_property
    def workspace(self) -> Workspace:
        """Made on first use: resolving the workdir costs system calls most hooks never need."""
        return Workspace(self.run.workdir, self.cancel)

    def __call__(self, op: str, args: JSON) -> object:
        self.cancel.raise_if_cancelled()
        try:
            handler = self._ops[op]
        except KeyError:
            raise NameError(f"ctx has no operation {op!r}") from None  # the KeyError is this table's detail
        return handler(args)

    def emit_output(self, stream: StreamName, text: str) -> None:
        self.run.ui.emit(Output(source=self.source, stream=stream, text=text))

    def emit_log(self, text: str) -> None:
        """A line as ``ctx.log`` shows it (a built-in's news while it runs: an MCP server's)."""
        self.run.ui.emit(Log(source=self.source, text=text))

    def _log(self, args: JSON) -> None:
        self.run.ui.emit(Log(source=self.source, text=str(args["text"])))

    def _notify(self, args: JSON) -> None:
        title, body = _text_field(args, "title", "ctx.notify"), _text_field(args, "body", "ctx.notify")
        self.run.ui.emit(Notify(source=self.source, title=title, body=body))

    def _confirm(self, args: JSON) -> bool:
        title, body = _text_field(args, "title", "ctx.confirm"), _text_field(args, "body", "ctx.confirm")
        answer = self.run.ui.confirm(self.source, title, body, self.cancel)
        self.cancel.raise_if_cancelled()
        return bool(answer)

    def _fetch(self, args: JSON) -> dict[str, object]:
        url, options = args["url"], args["options"]
        _require(isinstance(url, str) and url, "ctx.http.fetch: url must be a non-empty string")
        headers = options.get("headers") or {}
        _require(
            isinstance(headers, dict) and all(isinstance(v, str) for v in headers.values()),
            "ctx.http.fetch: headers must be an object of strings",
        )
        body = options.get("body")
        _require(body is None or isinstance(body, str), "ctx.http.fetch: body must be a string (JSON.stringify it)")
        from .http import fetch  # httpx loads with the first fetch: the many hooks that never fetch (a gate's) skip it

        response = fetch(
            url,
            method=str(options.get("method") or "GET").upper(),
            headers=headers,
            body=body,
            timeout_ms=_timeout(options, "ctx.http.fetch"),
            cancel=self.cancel,
            keep=HOST_TEXT_CAP,
        )
        return response.to_js()

    def _exec(self, args: JSON) -> dict[str, object]:
        command, options = args["command"], args["options"]
        _require(isinstance(command, str) and command, "ctx.system.exec: command must be a non-empty string")
        env = options.get("env")
        _require(
            env is None or (isinstance(env, dict) and all(isinstance(v, str) for v in env.values())),
            "ctx.system.exec: env must be an object of strings",
        )
        cwd = options.get("cwd")
        result = run_command(
            command,
            cwd=self.workspace.resolve(cwd) if cwd else self.workspace.workdir,
            timeout_ms=_timeout(options, "ctx.system.exec"),
            env=env,
            on_output=self.emit_output,
            cancel=self.cancel,
            keep=HOST_TEXT_CAP,
        )
        return result.to_js()


def _require(condition: object, message: str) -> None:
    if not condition:
        raise TypeError(message)


def _text_field(args: JSON, name: str, api: str) -> str:
    _require(isinstance(args, dict), f"{api}: expected an object like {{title, body}}")
    value = args.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"{api}: {name} must be a string")
    return value


def _timeout(options: JSON, api: str) -> int | None:
    value = options.get("timeout_ms")
    if value is None:
        return None
    _require(
        isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0,
        f"{api}: timeout_ms must be a positive number",
    )
    return int(value)
