"""Replaying a recorded session through a hook chain, and turning a session into a script.

:func:`replay_session` re-runs a session's model responses and tool calls through a hook
chain (the agent's current one, or another list) without calling any model, and reports
per call what differs from the recording: now refused (or no longer), arguments now
different, result now different. Tools run only when asked (``run_tools``); otherwise the
recorded result (what the model read) is what ``afterToolExecute`` hooks receive.

:func:`session_script` turns a session's assistant messages into a scripted-model file,
so a real conversation becomes a deterministic test of a hook.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from .cancel import CancelToken
from .errors import ConfigError
from .hooks import HookChain, ModelResponse
from .host import RunContext
from .messages import Message, ToolCall
from .secrets import redact_config
from .tools import ToolResult, invoke_tool
from .ui import UI, NonInteractiveUI

__all__ = ["CallReplay", "ReplayReport", "replay_session", "session_script"]


@dataclass(frozen=True)
class CallReplay:
    """One recorded tool call against the chain as it is now."""

    id: str
    name: str
    recorded_arguments: Any
    now_arguments: Any
    recorded_refused_by: str | None
    now_refused_by: str | None
    recorded_result: ToolResult | None
    now_result: ToolResult | None

    @property
    def differences(self) -> list[str]:
        found = []
        if self.now_refused_by and not self.recorded_refused_by:
            found.append(f"now refused by hook {self.now_refused_by}: {self.now_result.text if self.now_result else ''}")
        elif self.recorded_refused_by and not self.now_refused_by:
            found.append(f"no longer refused (was refused by hook {self.recorded_refused_by})")
        if not self.now_refused_by and self.now_arguments != self.recorded_arguments:
            found.append(f"arguments now different: {_field_changes(self.recorded_arguments, self.now_arguments)}")
        if (self.now_result is not None and self.recorded_result is not None and not self.now_refused_by
                and not self.recorded_refused_by and self.now_result != self.recorded_result):
            found.append(f"result now different: {_short(self.recorded_result.text)!r} -> {_short(self.now_result.text)!r}")
        return found


@dataclass(frozen=True)
class ReplayReport:
    """What a replay found: per call, and per assistant text."""

    session_id: str
    hooks: list[str]
    calls: list[CallReplay] = field(default_factory=list)
    texts: list[tuple[str, str]] = field(default_factory=list)  # (recorded, now) where they differ

    @property
    def changed(self) -> bool:
        return bool(self.texts) or any(call.differences for call in self.calls)

    def lines(self) -> list[str]:
        out = [f"replayed session {self.session_id} through hooks: {', '.join(self.hooks) or '(none)'}"]
        for call in self.calls:
            differences = call.differences
            mark = "≠" if differences else "="
            out.append(f"{mark} {call.name} [{call.id}]" + ("" if differences else ": same as recorded"))
            out += [f"    {line}" for line in differences]
        for recorded, now in self.texts:
            out.append(f"≠ assistant text now different: {_short(recorded)!r} -> {_short(now)!r}")
        out.append("differences found" if self.changed else "no differences")
        return out


def replay_session(rienda: Any, session_id: str, hooks: list[str] | None = None, agent_id: str | None = None,
                   run_tools: bool = False, ui: UI | None = None) -> ReplayReport:
    """Replay ``session_id`` through ``hooks`` (default: the agent's, ``agent_id`` or the
    session's own). ConfigError for an unknown session, agent or hook."""
    loaded = rienda.store.load(session_id)
    agent, _ = rienda.agent(agent_id or loaded.header.get("agent", "default"))
    names = list(hooks) if hooks is not None else list(agent.hooks)
    catalog = rienda.catalog()
    missing = [name for name in names if name not in catalog.hooks]
    if missing:
        raise ConfigError(f"no usable hook named {', '.join(map(repr, missing))} in {catalog.home / 'hooks'}")
    run = RunContext(workdir=rienda.workdir, ui=ui or NonInteractiveUI(record_events=False),
                     session={"id": session_id}, agent=agent.to_ctx(), config=redact_config(rienda.config()))
    chain = HookChain([catalog.hooks[name] for name in names], rienda.sandbox, run)
    results = {m.tool_call_id: m for m in loaded.messages if m.role == "tool"}
    calls, texts = [], []
    for message in loaded.messages:
        if message.role != "assistant":
            continue
        now = chain.after_model_response(ModelResponse(message.text, message.thinking, message.tool_calls), CancelToken())
        if now.text != message.text:
            texts.append((message.text, now.text))
        for call in message.tool_calls:
            calls.append(_replay_call(chain, call, results.get(call.id), run, rienda, catalog, run_tools))
    return ReplayReport(session_id, names, calls, texts)


def _replay_call(chain: HookChain, call: ToolCall, recorded: Message | None, run: RunContext, rienda: Any,
                 catalog: Any, run_tools: bool) -> CallReplay:
    meta = recorded.meta if recorded else {}
    recorded_result = ToolResult(recorded.text, recorded.is_error) if recorded else None
    gate = chain.before_tool_execute(call.id, call.name, call.arguments, CancelToken())
    if not gate.allowed:
        now_result: ToolResult | None = gate.refusal()
    elif run_tools and call.name in catalog.tools:
        raw = invoke_tool(catalog.tools[call.name], gate.arguments, run, rienda.sandbox, CancelToken())
        now_result = chain.after_tool_execute(call.id, call.name, gate.arguments, raw, CancelToken())
    elif recorded_result is not None and not meta.get("refused_by"):
        now_result = chain.after_tool_execute(call.id, call.name, gate.arguments, recorded_result, CancelToken())
    else:
        now_result = None  # it would run now; run_tools shows what it returns
    return CallReplay(call.id, call.name, meta.get("arguments", call.arguments), gate.arguments,
                      meta.get("refused_by"), gate.refused_by, recorded_result, now_result)


def session_script(rienda: Any, session_id: str) -> str:
    """The session's assistant responses as a scripted-model YAML file (text, thinking,
    tool calls with the model's own arguments and ids)."""
    loaded = rienda.store.load(session_id)
    items = []
    for message in loaded.messages:
        if message.role != "assistant" or message.meta.get("interrupted") or message.meta.get("error"):
            continue
        item: dict[str, Any] = {"text": message.text}
        if message.thinking:
            item["thinking"] = message.thinking
        if message.tool_calls:
            item["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls]
        items.append(item)
    header = f"# Scripted model made from session {session_id} (agent {loaded.header.get('agent')}).\n"
    return header + yaml.safe_dump(items, sort_keys=False, allow_unicode=True)


def _field_changes(before: Any, after: Any) -> str:
    if isinstance(before, dict) and isinstance(after, dict):
        keys = sorted(set(before) | set(after))
        return "; ".join(f"{k}: {before.get(k)!r} -> {after.get(k)!r}" for k in keys if before.get(k) != after.get(k))
    return f"{before!r} -> {after!r}"


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."
