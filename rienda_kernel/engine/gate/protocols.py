"""The four agents' hook protocols: their events read into one call, their answers written.

Contracts:
- :func:`read_event` takes the bytes an agent wrote on the hook's stdin and returns a
  :class:`GateEvent`, or raises :class:`~..errors.PayloadError` saying what is wrong (more
  than :data:`MAX_EVENT_BYTES`, empty, not JSON, nested too deep, not an object, an event
  that is not a tool call's, no ``tool_name``, no ``tool_input`` or one that is not an
  object).
- Normalization: each agent's shell tool (:data:`SHELL_TOOLS`) with a string ``command``
  becomes ``shell`` with ``{command}`` alone; every other tool (``mcp__server__tool``
  included) keeps its name and arguments.
- :func:`agent_arguments` puts normalized arguments back in the agent's own shape: the
  shell tool's other fields (Claude Code's ``description``...) kept, ``command`` (or
  ``cmd``) replaced, as a list of words again when it came as one.
- :func:`answer` is the stdout JSON for a :class:`Verdict` in the agent's format; the
  exit code is always 0 (each agent reads the JSON; exit 1 would fail open in three of
  them). Codex and Gemini CLI never get ``ask`` (see :data:`CAN_ASK`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace
from secrets import token_hex
from typing import TYPE_CHECKING, Literal

from ..common.json_value import JSON, JSONObject
from ..common import bounded
from ..errors import PayloadError
from ..sessions.messages import MessageMeta

if TYPE_CHECKING:
    from ..ctx.host import RunContext as _Run

__all__ = ["AGENTS", "CAN_ASK", "CTX_FIELDS", "MAX_EVENT_BYTES", "POINTS", "SHELL_TOOLS", "TOOL_EVENTS",
           "WIRED_EVENTS", "GateEvent", "HookPoint", "Verdict", "agent_arguments", "answer", "gate_run",
           "parse_event", "read_event", "tool_event"]

AGENTS = ("claude-code", "codex", "gemini-cli", "copilot-cli")
MAX_EVENT_BYTES = 1024 * 1024
MAX_EVENT_DEPTH = 64  # a tool call's input is shallow; deeper is refused before any hook sees it

# The agents that can put an `ask` to a person (Copilot CLI headless treats it as deny; Codex
# ignores it and runs the call; Gemini CLI headless hangs on it).
CAN_ASK = frozenset({"claude-code", "copilot-cli"})

SHELL_TOOLS: dict[str, frozenset[str]] = {
    "claude-code": frozenset({"Bash"}),
    "codex": frozenset({"Bash", "shell", "exec_command"}),
    "gemini-cli": frozenset({"run_shell_command"}),
    "copilot-cli": frozenset({"Bash", "bash"}),
}
_SHELL = "shell"

Phase = Literal["before", "after"]
Kind = Literal["pass", "allow", "deny", "ask", "post"]

HookPoint = Literal["beforeToolExecute", "afterToolExecute", "beforeRun", "afterRun", "beforeModelRequest",
                    "afterModelResponse", "beforeCompact", "afterCompact"]

# agent -> each event it sends a hook -> the Rienda point that answers it (docs/gate.md's
# table, found by running the agents). An event not here is not answered (a deny).
POINTS: dict[str, dict[str, HookPoint]] = {
    "claude-code": {"PreToolUse": "beforeToolExecute", "PostToolUse": "afterToolExecute",
                    "UserPromptSubmit": "beforeRun", "Stop": "afterRun", "PreCompact": "beforeCompact",
                    "PostCompact": "afterCompact"},
    "codex": {"PreToolUse": "beforeToolExecute", "PostToolUse": "afterToolExecute", "UserPromptSubmit": "beforeRun",
              "Stop": "afterRun", "PreCompact": "beforeCompact", "PostCompact": "afterCompact"},
    "gemini-cli": {"BeforeTool": "beforeToolExecute", "AfterTool": "afterToolExecute", "BeforeAgent": "beforeRun",
                   "AfterAgent": "afterRun", "BeforeModel": "beforeModelRequest", "AfterModel": "afterModelResponse",
                   "PreCompress": "beforeCompact"},
    "copilot-cli": {"PreToolUse": "beforeToolExecute", "PostToolUse": "afterToolExecute",
                    "UserPromptSubmit": "beforeRun", "Stop": "afterRun", "PreCompact": "beforeCompact"},
}
WIRED_EVENTS = {agent: tuple(events) for agent, events in POINTS.items()}  # what rienda gate install wires
TOOL_EVENTS = {agent: frozenset(e for e, point in events.items() if point.endswith("ToolExecute"))
               for agent, events in POINTS.items()}

@dataclass(frozen=True)
class GateEvent:
    """One hook event: who sent it (``agent``, its ``session_id`` and ``cwd``), the
    agent's own ``event`` name and ``phase``, the call as the agent named it (``tool``,
    ``tool_input``) and as Rienda's hooks see it (``name``, ``arguments``). After the call,
    ``response`` is what the tool returned (the agent's ``tool_response``)."""

    agent: str
    event: str
    phase: Phase
    session_id: str
    cwd: str | None
    call_id: str
    tool: str
    tool_input: JSONObject
    name: str
    arguments: JSONObject
    response: JSON = None

    def ctx(self) -> JSONObject:
        """What a hook sees as ``ctx.session.gate`` (:data:`CTX_FIELDS`), also saved with
        the call (``meta.gate``) for replay."""
        return {"agent": self.agent, "sessionId": self.session_id, "cwd": self.cwd, "event": self.event,
                "tool": self.tool, "toolInput": self.tool_input}

    @property
    def is_mcp(self) -> bool:
        return self.tool.startswith("mcp__")


@dataclass(frozen=True)
class Verdict:
    """What the gate answers. ``kind``: ``pass`` (no hook objected, none allowed
    explicitly: the agent decides as it would without the gate), ``allow`` (a hook
    allowed, or rewrote: ``arguments`` in the agent's shape), ``deny``, ``ask`` (the agent
    asks a person), ``post`` (after the call: ``context`` for the model to read,
    ``output`` the MCP tool's replaced output). ``failed``: the deny comes from a failure
    (a hook threw, a bad event...), not from a hook's refusal."""

    kind: Kind
    reason: str | None = None
    arguments: JSONObject | None = None
    context: str | None = None
    output: JSON = None
    failed: bool = False


CTX_FIELDS = ("agent", "sessionId", "cwd", "event", "tool", "toolInput")


def gate_run(run: _Run, meta: MessageMeta) -> _Run:
    """``run`` (a :class:`~..ctx.host.RunContext`) for replaying a message saved by a gate
    (its ``meta.gate``): ``ctx.session.gate`` as the hooks saw it then; else ``run`` itself."""
    saved = meta.gate
    if saved is None or not isinstance(run.session, dict):
        return run
    return replace(run, session={**run.session, "gate": {key: saved.get(key) for key in CTX_FIELDS}})


def parse_event(agent: str, data: bytes) -> tuple[JSONObject, str, HookPoint]:
    """The event ``agent`` wrote on stdin as an object, its name and the point that answers
    it; PayloadError saying what is wrong with it."""
    if len(data) > MAX_EVENT_BYTES:
        raise PayloadError(f"the hook event is larger than {MAX_EVENT_BYTES // 1024} KiB")
    if not data.strip():
        raise PayloadError("the hook event is empty: nothing came on stdin (the agent writes its event there as JSON)")
    try:
        value = bounded.loads(data)
    except bounded.Unreadable as exc:
        raise PayloadError(f"the hook event is {exc}") from None  # the reason says it; the parser's frames are noise
    if not isinstance(value, dict):
        raise PayloadError(f"the hook event must be a JSON object, got {type(value).__name__}")
    if bounded.too_deep(value, MAX_EVENT_DEPTH):
        raise PayloadError(f"the hook event is nested more than {MAX_EVENT_DEPTH} levels deep")
    event = value.get("hook_event_name")
    point = POINTS[agent].get(event) if isinstance(event, str) else None
    if point is None or not isinstance(event, str):
        known = ", ".join(POINTS[agent])
        raise PayloadError(f"{agent} sent the event {event!r}; a gate answers {known}")
    return value, event, point


def read_event(agent: str, data: bytes) -> GateEvent:
    """The tool event ``agent`` wrote on stdin; PayloadError saying what is wrong with it."""
    value, event, point = parse_event(agent, data)
    if not point.endswith("ToolExecute"):
        raise PayloadError(f"{agent}'s {event} is not a tool call's event")
    return tool_event(agent, value, event, point)


def tool_event(agent: str, value: JSONObject, event: str, point: HookPoint) -> GateEvent:
    """The tool event ``value`` (``event`` of ``agent``); PayloadError for a missing part."""
    phase: Phase = "before" if point == "beforeToolExecute" else "after"
    tool = value.get("tool_name")
    if not isinstance(tool, str) or not tool:
        raise PayloadError(f"the {event} event has no tool_name")
    if "tool_input" not in value:  # a call the hooks cannot see is not one they allowed
        raise PayloadError(f"the {event} event has no tool_input (the call's arguments); a gate cannot decide a call "
                           "it cannot see")
    tool_input = value["tool_input"]
    if not isinstance(tool_input, dict):
        raise PayloadError(f"the {event} event's tool_input must be a JSON object, got {type(tool_input).__name__}")
    name, arguments = _normalized(agent, tool, tool_input)
    session_id = value.get("session_id")
    cwd = value.get("cwd")
    call_id = value.get("tool_use_id") or value.get("call_id")
    call_id = call_id if isinstance(call_id, str) and call_id else f"gate_{token_hex(6)}"  # Gemini, Copilot: none
    response = value.get("tool_response", value.get("tool_result"))  # Copilot CLI: tool_result
    return GateEvent(agent, event, phase, session_id if isinstance(session_id, str) else "",
                     cwd if isinstance(cwd, str) else None, call_id, tool, tool_input, name, arguments, response)


def _normalized(agent: str, tool: str, tool_input: JSONObject) -> tuple[str, JSONObject]:
    if tool in SHELL_TOOLS[agent]:
        command = tool_input.get("command", tool_input.get("cmd"))
        if isinstance(command, list) and all(isinstance(part, str) for part in command):
            command = shlex.join(command)
        if isinstance(command, str):
            return _SHELL, {"command": command}
    return tool, dict(tool_input)


def agent_arguments(event: GateEvent, arguments: JSONObject) -> JSONObject:
    """``arguments`` (normalized, maybe rewritten by a hook) in the agent's own shape."""
    if event.name != _SHELL:
        return dict(arguments)
    key = "cmd" if "cmd" in event.tool_input and "command" not in event.tool_input else "command"
    rest = {k: v for k, v in arguments.items() if k != "command"}
    command = arguments.get("command", "")
    if isinstance(event.tool_input.get(key), list) and isinstance(command, str):  # it came as words: words again
        command = shlex.split(command)
    return {**event.tool_input, **rest, key: command}


def answer(event_agent: str, phase: Phase, verdict: Verdict) -> JSONObject:
    """The JSON the agent reads on stdout (exit code 0)."""
    if event_agent == "gemini-cli":
        return _gemini(phase, verdict)
    if phase == "after":
        return _after(event_agent, verdict)
    if verdict.kind == "pass":
        return {}
    decision = "deny" if verdict.kind == "ask" and event_agent not in CAN_ASK else verdict.kind
    out: JSONObject = {"hookEventName": "PreToolUse", "permissionDecision": decision}
    if verdict.reason:
        out["permissionDecisionReason"] = verdict.reason
    if verdict.arguments is not None and decision in ("allow", "ask"):
        out["updatedInput"] = verdict.arguments
    return {"hookSpecificOutput": out}


def _after(agent: str, verdict: Verdict) -> JSONObject:
    """After the call Claude Code lets a hook replace an MCP tool's output or add context
    for the model; Codex and Gemini CLI add context; Copilot CLI reads neither (``{}``)."""
    if agent == "copilot-cli":
        return {}
    if verdict.kind == "deny" and agent == "claude-code":  # a failure after the call: the model is told
        return {"decision": "block", "reason": verdict.reason or "the gate failed after the call"}
    out: JSONObject = {}
    if verdict.kind == "deny":
        out["additionalContext"] = f"The Rienda gate failed after the call: {verdict.reason}"
    elif verdict.output is not None and agent == "claude-code":
        out["updatedMCPToolOutput"] = verdict.output
    elif verdict.context is not None or verdict.output is not None:
        out["additionalContext"] = verdict.context if verdict.context is not None else _text_of(verdict.output)
    name = "AfterTool" if agent == "gemini-cli" else "PostToolUse"
    return {"hookSpecificOutput": {"hookEventName": name, **out}} if out else {}


def _text_of(output: JSON) -> str:
    blocks = output if isinstance(output, list) else []
    return "The tool's result as the Rienda gate's hooks rewrote it:\n" + "\n".join(
        str(block.get("text", "")) for block in blocks if isinstance(block, dict))


def _gemini(phase: Phase, verdict: Verdict) -> JSONObject:
    if phase == "after":
        return _after("gemini-cli", verdict)
    if verdict.kind in ("deny", "ask"):  # never `ask`: Gemini CLI headless hangs on it
        return {"decision": "deny", "reason": verdict.reason or "denied by the Rienda gate"}
    if verdict.arguments is not None:
        return {"hookSpecificOutput": {"tool_input": verdict.arguments}}
    return {"decision": "allow"} if verdict.kind == "allow" else {}
