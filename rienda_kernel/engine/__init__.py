"""Rienda's engine: agents, the loop, sessions, providers, the V8 sandbox, tools, hooks.

Knows nothing of Jupyter. This module is the whole surface the front ends (the kernel,
the magics, the ``rienda`` command, the pytest plugin) use: they import from here, never
from a submodule (``tests/test_layout.py`` holds them to it). Start with :class:`Rienda`::

    rienda = Rienda(home="~/.rienda", workdir=".")
    result = rienda.conversation("default").run("Count the words in notes.txt", ui)

Each name is imported from its submodule on first use (PEP 562), so importing one part
(``RiendaError``, say) does not load the rest: ``rienda --help`` and a run without
JavaScript extensions start fast.

Where things are (each folder's ``__init__`` says more):

- ``runtime/`` (:class:`Rienda`, :class:`Conversation`, sub-agents): where a run is made;
  ``gate/``: ``rienda gate``, an agent's hooks deciding other coding agents' calls.
- :mod:`.hooks`: the hook chain (one run from ``beforeRun`` to ``afterRun`` is ``runtime/loop.py``).
- :mod:`.events`, :mod:`.ui`: what the engine tells a front end, and what it asks (confirms).
- :mod:`.errors`, :mod:`.secrets`, :mod:`.cancel`: the one error tree, the one scrubber,
  the one cancel token.
- ``home/``: what lives under ``RIENDA_HOME``: config.yaml, agents, tools and hooks.
- ``tools/``: invoking a tool and checking its schema; ``tools/mcp/``: MCP servers' tools.
  ``builtins/``: the built-in tools and the notebook tools. ``ctx/``: what ``ctx`` does on the host.
- ``sandbox/``: the V8 bridge (host side, worker process side, the wire).
- ``sessions/``: messages, the JSON Lines store, its one writer.
- ``providers/``: the model vendors. ``testing/``: hook calls, replay, expectations.
"""

from __future__ import annotations

import importlib

# Not typing.TYPE_CHECKING: importing typing costs the lean gate client (rienda-gate)
# milliseconds on every call. mypy reads a name TYPE_CHECKING as true wherever it comes from.
TYPE_CHECKING = False

# The public names, by the submodule that defines them: the one list (``__all__`` and the
# lazy loader below are both made from it).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "builtins.code_runner": ("CodeRunner", "Runner"),
    "builtins.notebook": ("PythonNamespace", "notebook_tools", "with_error"),
    "builtins.standard": ("BUILTIN_TOOLS",),
    "cancel": ("CancelToken", "run_interruptibly", "settle", "signals_wake"),
    "errors": ("ArgumentsError", "ConfigError", "ContextOverflow", "ExtensionError", "Interrupted", "NotInRecording",
               "OutOfMemory", "PayloadError", "ProviderError", "RiendaError", "SandboxError", "ScriptError", "SessionBusy",
               "SessionError", "SessionWriteError"),
    "events": ("Compaction", "Confirm", "Diagnostic", "Divergence", "Event", "HookDecision", "Log", "MessageSaved",
               "Notify", "Output", "Replayed", "RunEnd", "RunEndReason", "RunStart", "TextDelta", "ThinkingDelta",
               "ToolCallStarted", "ToolResultReady", "Waiting"),
    "home.agents": ("Agent",),
    "home.config": ("Config", "check_config", "load_config", "read_config", "rienda_home"),
    "home.extensions": ("ExtensionLoader",),
    "http": ("warm_http",),
    "common.hints": ("did_you_mean",),
    "common.imports": ("import_module", "prewarm", "without"),
    "common.json_value": ("JSON", "JSONObject"),
    "common.text": ("repair",),
    "runtime.loop": ("RunResult",),
    "providers.choice": ("NoModelError",),
    "runtime.conversation": ("Conversation",),
    "gate.answering": ("GATE_AGENTS", "GATE_EVENT_BYTES", "GateOptions", "GateReply", "answer_hook_event"),
    "gate.command": ("gate_budget", "gate_command"),
    "gate.install": ("gate_status", "gate_wiring"),
    "gate.server": ("serve_gate", "start_gate_server"),
    "gate.wire": ("read_event_input",),
    "runtime.rienda": ("CONFIRM_ENV", "Rienda", "SavedExtension"),
    "sandbox.workers": ("Sandbox", "shared_sandbox", "warm_shared_sandbox"),
    "secrets": ("redact_config", "scrub", "scrub_text"),
    "sessions.compaction.plan": ("pruned_and_folded",),
    "sessions.compaction.use": ("ContextUse",),
    "sessions.fill": ("ContextFill",),
    "sessions.messages": ("Message", "MessageMeta", "SubagentLink", "ToolCall", "Usage"),
    "sessions.reading": ("LoadedSession",),
    "sessions.records": ("ApprovalRecord", "CompactionRecord", "PinRecord", "Record", "RunEndRecord", "SessionHeader",
                         "StoppedRecord", "UnknownRecord"),
    "sessions.store": ("SessionInfo",),
    "testing.hook_call": ("HookCall", "HookInvocation"),
    "testing.report": ("ReplayReport",),
    "tools.invoke": ("OUTPUT_CAP",),
    "tools.model": ("HOOK_POINTS", "NAME_RULE", "BuiltinTool", "Catalog", "Hook", "JSTool", "McpTool", "Tool",
                    "ToolResult"),
    "ui": ("ASK_PROMPT", "CONFIRM_POLICIES", "Answer", "Asker", "ConfirmPolicy", "EventSink", "FrontEnd", "How",
           "NonInteractiveUI", "Person", "PersonAsker", "Recorder", "ScrubbingUI", "UI", "Via", "confirm_policy",
           "typed_answer"),
}

# What the checker sees: each public name with its real type (``X as X`` re-exports it
# under mypy --strict). At run time nothing here is imported; ``__getattr__`` below loads
# a name on first use. tests/test_layout.py holds this block to the table above.
if TYPE_CHECKING:
    from .builtins.code_runner import CodeRunner as CodeRunner, Runner as Runner
    from .builtins.notebook import (
        PythonNamespace as PythonNamespace, notebook_tools as notebook_tools, with_error as with_error,
    )
    from .builtins.standard import BUILTIN_TOOLS as BUILTIN_TOOLS
    from .cancel import (
        CancelToken as CancelToken, run_interruptibly as run_interruptibly, settle as settle,
        signals_wake as signals_wake,
    )
    from .errors import (
        ArgumentsError as ArgumentsError, ConfigError as ConfigError, ContextOverflow as ContextOverflow,
        ExtensionError as ExtensionError, Interrupted as Interrupted, OutOfMemory as OutOfMemory,
        PayloadError as PayloadError, ProviderError as ProviderError, RiendaError as RiendaError,
        SandboxError as SandboxError, ScriptError as ScriptError, SessionBusy as SessionBusy,
        SessionError as SessionError, SessionWriteError as SessionWriteError, NotInRecording as NotInRecording,
    )
    from .events import (
        Compaction as Compaction, Confirm as Confirm, Diagnostic as Diagnostic, Event as Event,
        HookDecision as HookDecision, Log as Log, MessageSaved as MessageSaved, Notify as Notify, Output as Output,
        RunEnd as RunEnd, RunEndReason as RunEndReason, RunStart as RunStart, TextDelta as TextDelta,
        ThinkingDelta as ThinkingDelta, ToolCallStarted as ToolCallStarted, ToolResultReady as ToolResultReady,
        Divergence as Divergence, Replayed as Replayed, Waiting as Waiting,
    )
    from .home.agents import Agent as Agent
    from .home.config import (
        Config as Config, check_config as check_config, load_config as load_config, read_config as read_config,
        rienda_home as rienda_home,
    )
    from .home.extensions import ExtensionLoader as ExtensionLoader
    from .http import warm_http as warm_http
    from .common.hints import did_you_mean as did_you_mean
    from .common.imports import import_module as import_module, prewarm as prewarm, without as without
    from .common.json_value import JSON as JSON, JSONObject as JSONObject
    from .common.text import repair as repair
    from .runtime.loop import RunResult as RunResult
    from .providers.choice import NoModelError as NoModelError
    from .runtime.conversation import Conversation as Conversation
    from .gate.answering import (
        GATE_AGENTS as GATE_AGENTS, GATE_EVENT_BYTES as GATE_EVENT_BYTES, GateOptions as GateOptions,
        GateReply as GateReply, answer_hook_event as answer_hook_event,
    )
    from .gate.command import gate_budget as gate_budget, gate_command as gate_command
    from .gate.install import gate_status as gate_status, gate_wiring as gate_wiring
    from .gate.server import serve_gate as serve_gate, start_gate_server as start_gate_server
    from .gate.wire import read_event_input as read_event_input
    from .runtime.rienda import CONFIRM_ENV as CONFIRM_ENV, Rienda as Rienda, SavedExtension as SavedExtension
    from .sandbox.workers import (
        Sandbox as Sandbox, shared_sandbox as shared_sandbox, warm_shared_sandbox as warm_shared_sandbox,
    )
    from .secrets import redact_config as redact_config, scrub as scrub, scrub_text as scrub_text
    from .sessions.compaction.plan import pruned_and_folded as pruned_and_folded
    from .sessions.compaction.use import ContextUse as ContextUse
    from .sessions.fill import ContextFill as ContextFill
    from .sessions.messages import (
        Message as Message, MessageMeta as MessageMeta, SubagentLink as SubagentLink, ToolCall as ToolCall,
        Usage as Usage,
    )
    from .sessions.reading import LoadedSession as LoadedSession
    from .sessions.records import (
        ApprovalRecord as ApprovalRecord, CompactionRecord as CompactionRecord, PinRecord as PinRecord,
        Record as Record, RunEndRecord as RunEndRecord, SessionHeader as SessionHeader, StoppedRecord as StoppedRecord,
        UnknownRecord as UnknownRecord,
    )
    from .sessions.store import SessionInfo as SessionInfo
    from .testing.hook_call import HookCall as HookCall, HookInvocation as HookInvocation
    from .testing.report import ReplayReport as ReplayReport
    from .tools.invoke import OUTPUT_CAP as OUTPUT_CAP
    from .tools.model import (
        HOOK_POINTS as HOOK_POINTS, NAME_RULE as NAME_RULE, BuiltinTool as BuiltinTool, Catalog as Catalog,
        Hook as Hook, JSTool as JSTool, McpTool as McpTool, Tool as Tool, ToolResult as ToolResult,
    )
    from .ui import (
        ASK_PROMPT as ASK_PROMPT, CONFIRM_POLICIES as CONFIRM_POLICIES, Answer as Answer, Asker as Asker,
        ConfirmPolicy as ConfirmPolicy, EventSink as EventSink, FrontEnd as FrontEnd, How as How,
        NonInteractiveUI as NonInteractiveUI, Person as Person, PersonAsker as PersonAsker, Recorder as Recorder,
        ScrubbingUI as ScrubbingUI, UI as UI, Via as Via, confirm_policy as confirm_policy,
        typed_answer as typed_answer,
    )

_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> object:
    """A public name, imported from its submodule on first use (PEP 562). Typed ``object``
    rather than ``Any``: a name the block above forgot fails the checker where it is used."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
