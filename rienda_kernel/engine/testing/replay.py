"""Replaying a recorded session through a hook chain, and turning a session into a script.

:func:`replay_session` re-runs a session's model responses and tool calls through a hook
chain (the agent's current one, or another list) without calling any model, and reports
per call what differs from the recording: now refused (or no longer), arguments now
different, result now different. A ``ctx.confirm`` is answered as the recording answered
the same request (saved as a ``confirm`` record), unless an explicit policy or the
expectations' ``confirm`` says otherwise; in a ``rienda gate`` session no policy of the
replay's applies (only the expectations'): a confirm the recording holds no answer for is
answered as the gate answers that agent. A call id the session holds twice (an agent sent
one call to its gate twice) is two calls, each compared with its own result. The rewriting points get what they were given when the
session was recorded, never their own output: the model's answer as it came, and the tool's
own result (kept as ``meta["saw"]``, see :mod:`..sessions.seen`), so an unchanged session
through unchanged hooks replays identical. Where the session does not hold that input (the
hooks removed text from it, which is never written; a session recorded before Rienda kept
it) the saved text is replayed instead, with a note, and a change it shows is a note too,
not a difference. Tools run only when asked (``run_tools``); otherwise the recorded result
is what ``afterToolExecute`` hooks receive. With ``run_tools`` a call whose tool cannot run
(gone, skipped, its MCP server down or no longer offering it, no longer declared by the
agent) is a difference naming the tool and why (:mod:`.not_run`), never the recorded result. Tools
run again include the notebook's ``python`` and ``variables``, in a fresh namespace of the
replay's own (the notebook's variables are not there). Calls an
expectations file selects (``<id>.expect.yaml`` beside the session, see
:mod:`.expectations`) are judged by what it states instead. :func:`replay_file` replays
a session file from anywhere (the pytest plugin's items).

Sub-agents: a sub-agent's session is replayed through its ancestors' hooks (the top-level
agent's first), then its own, with ``ctx.subagent`` as recorded; an ``agent`` call reuses the
recorded answer (no model runs again, so neither does a sub-agent), and the sub-agent's own
session is replayed too (its tools again only with ``run_tools``), through the parent's chain
then its own hooks: its report is that call's ``child`` (and one of ``children``), shown under
the call (:mod:`.report`). A sub-agent's session that cannot be read is a note (with
``run_tools``, a difference: it could not run again); one whose call is now refused is not
replayed (it would not have run).

Compactions: each ``compaction`` record is given to ``beforeCompact`` and ``afterCompact``
again, and what the hooks decide differently is a difference (:mod:`.compactions`).

Fail-closed hooks (``fail_closed:``) are as the agents declare them now (the session's agent
and, for a sub-agent's session, its ancestors'; under ``hooks``, the session's agent's); a refusal by a
fail-closed hook's failure is known from the ledger (``failed_closed``), so a recording
refused that way replays the same, and a change of the opt-in is a changed decision.

:func:`session_script` turns a session's assistant messages into a scripted-model file,
so a real conversation becomes a deterministic test of a hook.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import yaml

from ..cancel import CancelToken
from ..common.json_value import JSON, JSONObject
from ..errors import ConfigError
from ..events import Confirm, Event, HookDecision
from .expectations import CallExpectation, Expectations, expectations_beside
from .not_run import declares, recorded_as_unknown, why_not_run
from ..gate.decision import GateUI
from ..gate.protocols import CAN_ASK, gate_run
from ..hooks import HookChain, ModelResponse, declared_hooks
from ..ctx.host import RunContext
from ..sessions.messages import EMPTY_META, Message, MessageMeta, ToolCall
from ..builtins.code_runner import in_thread
from ..builtins.notebook import PythonNamespace, notebook_tools
from ..builtins.agent import run_agent
from ..home.agents import Agent
from ..runtime.seams import RunHost
from ..runtime.subagents import inherited_hooks, recorded_ctx
from .compactions import replay_compactions
from .report import CallReplay, ReplayReport
from ..secrets import scrub_text
from ..sessions.seen import recover
from ..sessions.reading import LoadedSession
from ..sessions.store import read_session
from ..tools.invoke import invoke_tool
from ..tools.model import BuiltinTool, Catalog, Tool, ToolResult
from ..ui import Answer, FrontEnd, NonInteractiveUI, RelayUI, ScrubbingUI

__all__ = ["replay_file", "replay_session", "session_script"]


def replay_session(rienda: RunHost, session_id: str, hooks: list[str] | None = None, agent_id: str | None = None,
                   run_tools: bool = False, ui: FrontEnd | None = None) -> ReplayReport:
    """Replay the session ``session_id`` of ``rienda``'s home through ``hooks`` (default:
    the agent's, ``agent_id`` or the session's own), with the expectations beside it if
    any. ConfigError for an unknown session, agent or hook, or a malformed expectations file."""
    loaded = rienda.store.load(session_id)
    expected = expectations_beside(rienda.store.directory / f"{session_id}.jsonl")
    return _replay(rienda, loaded, session_id, hooks, agent_id, run_tools, ui, expected)


def replay_file(rienda: RunHost, path: Path, hooks: list[str] | None = None, run_tools: bool = False,
                ui: FrontEnd | None = None, agent_id: str | None = None) -> ReplayReport:
    """:func:`replay_session` for the session file ``path`` wherever it is (its id is the
    file name), with ``<id>.expect.yaml`` beside it if any; its agent and hooks come from
    ``rienda``'s home."""
    path = Path(path)

    def load(session_id: str) -> LoadedSession:  # a sub-agent's parent or child: beside it, else in the home
        beside = path.parent / f"{session_id}.jsonl"
        return read_session(beside) if beside.is_file() else rienda.store.load(session_id)

    return _replay(rienda, read_session(path), path.stem, hooks, agent_id, run_tools, ui, expectations_beside(path),
                   load=load)


def _replay(rienda: RunHost, loaded: LoadedSession, session_id: str, hooks: list[str] | None, agent_id: str | None,
            run_tools: bool, ui: FrontEnd | None, expected: Expectations | None,
            inherited: tuple[list[str], set[str]] | None = None, load: JSON = None,
            parent_call_id: str | None = None) -> ReplayReport:
    load = load or rienda.store.load
    config = rienda.config()
    agent, _ = rienda.agent(agent_id or loaded.header.agent or "default", config)
    if inherited is None:
        inherited = inherited_hooks(rienda, loaded.header, load) if hooks is None else ([], set())
    names = list(hooks) if hooks is not None else list(dict.fromkeys([*inherited[0], *agent.hooks]))
    closed = inherited[1] | set(agent.fail_closed)
    # Only the chain's hooks are loaded, and the session's tools when they run again (the
    # notebook's in a fresh Python namespace of the replay's own, never a notebook's).
    used = sorted({call.name for message in loaded.messages for call in message.tool_calls})
    catalog = rienda.catalog(tools=used if run_tools else [], hooks=names, config=config,
                             extra_tools=notebook_tools(PythonNamespace(run=in_thread)) if run_tools else None)
    missing = [name for name in names if name not in catalog.hooks]
    if missing:
        raise ConfigError(f"no usable hook named {', '.join(map(repr, missing))} in {catalog.home / 'hooks'}")
    ui = ui or NonInteractiveUI(record_events=False)
    if expected is not None and expected.confirm is not None:
        ui = NonInteractiveUI(expected.confirm, sink=ui.emit, record_events=False)
    decisions: list[HookDecision] = []
    notes: list[str] = []

    def observe(event: JSON) -> None:
        if isinstance(event, HookDecision):
            decisions.append(event)

    recorded = loaded.records_of(Confirm)
    gate_agent = loaded.header.gate.get("agent") if loaded.header.gate is not None else None
    if isinstance(gate_agent, str) and (expected is None or expected.confirm is None):
        # A gate's confirms are answered as recorded, else as the gate answers that agent:
        # never by this replay's policy ($RIENDA_CONFIRM...), which is not the gate's.
        ui = NonInteractiveUI(sink=ui.emit, record_events=False, policy="ask")
    answering = ScrubbingUI(_AsRecorded(ui, observe, recorded, notes, gate_agent if isinstance(gate_agent, str)
                                        else None))
    run = RunContext(workdir=rienda.workdir, ui=answering, session={"id": session_id},
                     agent=agent.to_ctx(), config=config.for_extensions(), subagent=recorded_ctx(loaded.header))
    chain = HookChain(declared_hooks(catalog.hooks, names, closed), rienda.sandbox, run)
    failed_then = _failed_closed(loaded)
    results = _results(loaded)
    rewritten = _rewritten_before(loaded)
    calls: list[CallReplay] = []
    texts = []
    seen: dict[str, int] = {}
    for number, message in enumerate(loaded.messages, 1):
        if message.role != "assistant":
            continue
        old = id(message) in rewritten
        text, unknown = _given(message.meta, "text", message.text, old)
        thinking, _ = _given(message.meta, "thinking", message.thinking, old)
        now = chain.after_model_response(ModelResponse(text, thinking, message.tool_calls), CancelToken())
        if unknown:
            notes.append(_note(f"the assistant text of message {number}", "afterModelResponse", unknown,
                               now.text != message.text))
        elif now.text != message.text:
            texts.append((message.text, now.text))
        chain.run = gate_run(run, message.meta)  # a gate's call: ctx.session.gate as when it was decided
        for call in message.tool_calls:
            entry = expected.for_call(call.id, call.name, call.arguments) if expected else None
            result = results.get((number, call.id))
            replayed = _replay_call(chain, call, result, run, rienda, catalog, run_tools, entry,
                                    call.id in rewritten, agent)
            seen[call.id] = seen.get(call.id, 0) + 1
            replayed = replace(replayed, recorded_failed=failed_then.get(call.id), occurrence=seen[call.id])
            calls.append(_sub_agent(replayed, result, rienda, run_tools, ui, (names, closed), load, notes))
            if replayed.unchecked:
                notes.append(_note(f"the result of {call.name} [{call.id}]", "afterToolExecute", replayed.unchecked,
                                   replayed.now_result != replayed.recorded_result))
    compactions = replay_compactions(chain, loaded, notes)
    matched = {id(call.expectation) for call in calls}
    unmatched = [entry.where for entry in expected.calls if id(entry) not in matched] if expected else []
    children = [call.child for call in calls if call.child is not None]
    return ReplayReport(session_id, names, calls, texts, unmatched, expected.path if expected else None, len(decisions),
                        children, notes, loaded.header.agent or None, parent_call_id, compactions)


def _sub_agent(replayed: CallReplay, recorded: Message | None, rienda: RunHost, run_tools: bool, ui: FrontEnd,
               chain: tuple[list[str], set[str]], load: JSON, notes: list[str]) -> CallReplay:
    """``replayed`` with the replay of the sub-agent's session its call started, if any,
    through ``chain`` (the call's run's hooks and its fail-closed ones) then the sub-agent's own."""
    child_id = _child_session(recorded)
    if child_id is None or replayed.now_refused_by:
        return replace(replayed, child_session=child_id)
    try:
        loaded = load(child_id)
    except Exception as exc:  # noqa: BLE001 - any reason it cannot be read is said in one line
        why = f"its sub-agent's session {child_id} cannot be read ({exc})"
        if run_tools:
            return replace(replayed, child_session=child_id, not_run=why)
        notes.append(f"{replayed.name} [{replayed.id}]: {why}; only its recorded answer was replayed")
        return replace(replayed, child_session=child_id)
    report = _replay(rienda, loaded, child_id, None, None, run_tools, ui, None, inherited=chain, load=load,
                     parent_call_id=replayed.id)
    return replace(replayed, child_session=child_id, child=report)


def _results(loaded: LoadedSession) -> dict[tuple[int, str], Message]:
    """Each call's recorded result, by (the number of the message holding the call, its id):
    the last result of that id before the next message holding a call of the same id (a
    gate's call decided twice is two calls; its result after the call, PostToolUse, is the
    one kept)."""
    holder: dict[str, int] = {}
    found: dict[tuple[int, str], Message] = {}
    for number, message in enumerate(loaded.messages, 1):
        for call in message.tool_calls:
            holder[call.id] = number
        if message.role == "tool" and message.tool_call_id in holder:
            found[(holder[message.tool_call_id], message.tool_call_id)] = message
    return found


def _failed_closed(loaded: LoadedSession) -> dict[str, str]:
    """The ledger's calls refused by a fail-closed hook's failure: call id -> the error."""
    return {r.call_id: str(r.error) for r in loaded.records_of(HookDecision) if r.failed_closed and r.call_id is not None}


def _child_session(recorded: Message | None) -> str | None:
    """The sub-agent's session an ``agent`` call's recorded result names, if any."""
    link = recorded.meta.subagent if recorded is not None else None
    return link.session_id if link is not None else None


class _AsRecorded(RelayUI):
    """``inner`` whose confirms a person would answer are answered as the recording was:
    each (title, body) asked gets the answer saved for the same request (in order; the
    session file holds them scrubbed); one the recording holds no answer for goes to
    ``inner`` (with nobody to ask: no), with a note. An explicit policy still wins."""

    def __init__(self, inner: FrontEnd, observe: Callable[[Event], None], recorded: list[Confirm],
                 notes: list[str], gate_agent: str | None = None) -> None:
        super().__init__(inner, observe)
        self._left = [(r.title, r.body, r.answer) for r in recorded]
        self._notes = notes
        self._gate_agent = gate_agent

    def ask(self, title: str, body: str, cancel: CancelToken) -> Answer:
        request = (scrub_text(title), scrub_text(body))
        for index, (was_title, was_body, answer) in enumerate(self._left):
            if (was_title, was_body) == request:
                del self._left[index]
                return Answer(answer, "as recorded")
        if self._gate_agent is not None:  # as the gate answers this agent by default (confirm: ask)
            self._notes.append(f"ctx.confirm({title!r}) was asked, which the recording holds no answer for; it was "
                               f"answered as rienda gate answers {self._gate_agent}")
            return GateUI("ask", self._gate_agent in CAN_ASK).ask(title, body, cancel)
        self._notes.append(f"ctx.confirm({title!r}) was asked, which the recording holds no answer for; "
                           "it was put to this replay's own confirm policy")
        return super().ask(title, body, cancel)


_WITHHELD = "its hooks removed part of it when it was recorded, and what a hook removes is never written"
_OLDER = "the session was recorded by a Rienda that did not keep it"


def _given(meta: MessageMeta, name: str, saved: JSON, old: bool) -> tuple[JSON, str | None]:
    """What the rewriting point was given for field ``name`` when the session was recorded
    (``meta["saw"]``, see :mod:`..sessions.seen`), and None; or, when the session does not
    hold it, the saved value and why."""
    seen = meta.saw
    if seen is None:
        return saved, (_OLDER if old else None)  # no hook handled the point: saved is what came
    if name not in seen:
        return saved, None  # the hooks left it as it was
    if not isinstance(saved, str):
        return seen[name], None
    given = recover(seen[name], saved)
    return (saved, _WITHHELD) if given is None else (given, None)


def _note(what: str, point: str, why: str, differs: bool) -> str:
    outcome = ("the hooks now change that text, which is not counted as a difference" if differs
               else "the hooks leave it as saved")
    return f"{what} was replayed from the saved text, not what {point} saw ({why}): {outcome}"


def _rewritten_before(loaded: LoadedSession) -> set[int | str]:
    """In a session without ``meta["saw"]``, where its ledger says a hook rewrote the saved
    value: ``id()`` of each assistant message whose afterModelResponse rewrote, and the
    call id of each result afterToolExecute rewrote."""
    found: set[int | str] = set()
    answer_rewritten = False
    for _, entry in loaded.entries:
        if isinstance(entry, Message):
            if entry.role == "assistant" and answer_rewritten:
                found.add(id(entry))
            answer_rewritten = False
        elif isinstance(entry, HookDecision) and entry.effect == "rewrote":
            if entry.point == "afterModelResponse":
                answer_rewritten = True
            elif entry.point == "afterToolExecute" and entry.call_id is not None:
                found.add(entry.call_id)
    return found


def _replay_call(chain: HookChain, call: ToolCall, recorded: Message | None, run: RunContext, rienda: RunHost,
                 catalog: Catalog, run_tools: bool, expectation: CallExpectation | None, old: bool,
                 agent: Agent) -> CallReplay:
    """One call through the chain; with ``run_tools`` its tool runs again, unless it is the
    ``agent`` tool (its sub-agent's session is replayed instead) or a call the recording
    shows was to a tool the agent did not declare then either. A tool that cannot run (gone,
    skipped when loaded, its MCP server not started or no longer offering it, no longer
    declared by the agent) is never replaced by the recorded result: ``not_run`` says why."""
    meta = recorded.meta if recorded else EMPTY_META
    recorded_result = ToolResult(recorded.text, recorded.is_error) if recorded else None
    gate = chain.before_tool_execute(call.id, call.name, call.arguments, CancelToken())
    unchecked = not_run = None
    tool = catalog.tools.get(call.name)
    if not gate.allowed:
        now_result: ToolResult | None = gate.refusal()
    elif run_tools and tool is not None and not _is_agent_tool(tool) and declares(agent, call.name):
        raw = invoke_tool(tool, gate.arguments, run, rienda.sandbox, CancelToken())
        now_result = chain.after_tool_execute(call.id, call.name, gate.arguments, raw, CancelToken())
    elif run_tools and (tool is None or not declares(agent, call.name)) and not recorded_as_unknown(call, recorded):
        now_result, not_run = None, why_not_run(call.name, tool, catalog, agent, rienda)
    elif recorded is not None and not meta.refused_by and not meta.result_unseen:
        text, unchecked = _given(meta, "text", recorded.text, old)
        is_error, _ = _given(meta, "isError", recorded.is_error, old)
        given = ToolResult(text, is_error if isinstance(is_error, bool) else recorded.is_error)
        now_result = chain.after_tool_execute(call.id, call.name, gate.arguments, given, CancelToken())
    else:
        now_result = None  # it would run now (a gate's call: it ran unseen); run_tools shows what it returns
    given_arguments = call.arguments if meta.arguments is None else meta.arguments
    return CallReplay(call.id, call.name, given_arguments, gate.arguments, meta.refused_by, gate.refused_by, recorded_result, now_result, expectation, unchecked,
                      not_run, now_failed=gate.failed)


def session_script(rienda: RunHost, session_id: str) -> str:
    """The session's assistant responses as a scripted-model YAML file (text, thinking,
    tool calls with the model's own arguments and ids)."""
    loaded = rienda.store.load(session_id)
    items = []
    for message in loaded.messages:
        if message.role != "assistant" or message.meta.interrupted or message.meta.error:
            continue
        item: JSONObject = {"text": message.text}
        if message.thinking:
            item["thinking"] = message.thinking
        if message.tool_calls:
            item["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls]
        items.append(item)
    header = f"# Scripted model made from session {session_id} (agent {loaded.header.agent}).\n"
    return header + yaml.safe_dump(items, sort_keys=False, allow_unicode=True)


def _is_agent_tool(tool: Tool) -> bool:
    """The built-in ``agent`` tool (a sub-agent's run is replayed from its own session, never run again)."""
    return isinstance(tool, BuiltinTool) and tool.run is run_agent

