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
- :mod:`.loop`, :mod:`.hooks`: one run from ``beforeRun`` to ``afterRun``; the hook chain.
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

_TYPING = False  # importing typing costs the lean gate client (rienda-gate) milliseconds on every call
if _TYPING:
    from typing import Any

# The public names, by the submodule that defines them: the one list (``__all__`` and the
# lazy loader below are both made from it).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "builtins.code_runner": ("CodeRunner", "Runner"),
    "builtins.notebook": ("PythonNamespace", "notebook_tools", "with_error"),
    "builtins.standard": ("BUILTIN_TOOLS",),
    "cancel": ("CancelToken", "run_interruptibly", "settle", "signals_wake"),
    "errors": ("ArgumentsError", "ConfigError", "ContextOverflow", "ExtensionError", "Interrupted", "OutOfMemory",
               "PayloadError", "ProviderError", "RiendaError", "SandboxError", "ScriptError", "SessionBusy", "SessionError",
               "SessionWriteError"),
    "events": ("Compaction", "Confirm", "Diagnostic", "Event", "HookDecision", "Log", "MessageSaved", "Notify", "Output",
               "RunEnd", "RunStart", "TextDelta", "ThinkingDelta", "ToolCallStarted", "ToolResultReady"),
    "home.agents": ("Agent",),
    "home.config": ("Config", "check_config", "load_config", "read_config", "rienda_home"),
    "home.extensions": ("ExtensionLoader",),
    "http": ("warm_http",),
    "common.hints": ("did_you_mean",),
    "common.imports": ("import_module", "prewarm"),
    "common.json_value": ("JSON", "JSONObject"),
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
    "sessions.fill": ("ContextFill",),
    "sessions.messages": ("Message", "MessageMeta", "SubagentLink", "ToolCall", "Usage"),
    "sessions.reading": ("LoadedSession",),
    "sessions.records": ("ApprovalRecord", "CompactionRecord", "PinRecord", "Record", "RunEndRecord", "SessionHeader",
                         "StoppedRecord", "UnknownRecord"),
    "sessions.store": ("SessionInfo",),
    "testing.hook_call": ("HookCall", "HookInvocation"),
    "testing.report": ("ReplayReport",),
    "tools.invoke": ("OUTPUT_CAP",),
    "tools.model": ("HOOK_POINTS", "NAME_RULE", "BuiltinTool", "Catalog", "Hook", "JSTool", "McpTool", "ToolResult"),
    "ui": ("ASK_PROMPT", "CONFIRM_POLICIES", "Answer", "Asker", "ConfirmPolicy", "EventSink", "FrontEnd", "How",
           "NonInteractiveUI", "Person", "PersonAsker", "Recorder", "ScrubbingUI", "UI", "Via", "confirm_policy",
           "typed_answer"),
}

_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
