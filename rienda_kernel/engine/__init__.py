"""Rienda's engine: agents, the loop, sessions, providers, the V8 sandbox, tools, hooks.

Knows nothing of Jupyter: front ends (the kernel, the magics, the ``rienda`` command)
use only what this module exports. Start with :class:`Rienda`::

    rienda = Rienda(home="~/.rienda", workdir=".")
    result = rienda.conversation("default").run("Count the words in notes.txt", ui)

Each name is imported from its submodule on first use (PEP 562), so importing one part
(``rienda_kernel.engine.errors``, say) does not load the rest: ``rienda --help`` and a run
without JavaScript extensions start fast.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {  # name -> the submodule defining it
    "Agent": "home.agents",
    "Answer": "ui",
    "ArgumentsError": "errors",
    "BUILTIN_TOOLS": "builtins.standard",
    "BuiltinTool": "builtins.standard",
    "CancelToken": "cancel",
    "Catalog": "home.extensions",
    "ConfigError": "errors",
    "Confirm": "events",
    "Conversation": "runtime",
    "Diagnostic": "events",
    "Event": "events",
    "ExtensionError": "errors",
    "ExtensionLoader": "home.extensions",
    "HOOK_POINTS": "home.extensions",
    "Hook": "home.extensions",
    "HookChain": "hooks",
    "HookDecision": "events",
    "Host": "ctx.host",
    "How": "ui",
    "Interrupted": "errors",
    "JSTool": "home.extensions",
    "JSValue": "sandbox.protocol",
    "Log": "events",
    "Message": "sessions.messages",
    "MessageSaved": "events",
    "ModelResponse": "hooks",
    "NonInteractiveUI": "ui",
    "Notify": "events",
    "OUTPUT_CAP": "tools.invoke",
    "OutOfMemory": "errors",
    "Output": "events",
    "PayloadError": "errors",
    "Person": "ui",
    "Policy": "ui",
    "ProviderError": "errors",
    "Rienda": "runtime",
    "RiendaError": "errors",
    "RunContext": "ctx.host",
    "RunEnd": "events",
    "RunResult": "loop",
    "RunStart": "events",
    "Sandbox": "sandbox.protocol",
    "SandboxError": "errors",
    "ScriptError": "errors",
    "ScrubbingUI": "ui",
    "SessionBusy": "errors",
    "SessionError": "errors",
    "SessionWriteError": "errors",
    "TextDelta": "events",
    "ThinkingDelta": "events",
    "ToolCall": "sessions.messages",
    "ToolCallStarted": "events",
    "ToolGate": "hooks",
    "ToolResult": "tools.invoke",
    "ToolResultReady": "events",
    "UI": "ui",
    "Usage": "sessions.messages",
    "Via": "ui",
    "invoke_tool": "tools.invoke",
    "load_config": "home.config",
    "read_config": "home.config",
    "redact_config": "secrets",
    "rienda_home": "home.config",
    "scrub": "secrets",
}

__all__ = [
    "Agent",
    "Answer",
    "ArgumentsError",
    "BUILTIN_TOOLS",
    "BuiltinTool",
    "CancelToken",
    "Catalog",
    "ConfigError",
    "Confirm",
    "Conversation",
    "Diagnostic",
    "Event",
    "ExtensionError",
    "ExtensionLoader",
    "HOOK_POINTS",
    "Hook",
    "HookChain",
    "HookDecision",
    "Host",
    "How",
    "Interrupted",
    "JSTool",
    "JSValue",
    "Log",
    "Message",
    "MessageSaved",
    "ModelResponse",
    "NonInteractiveUI",
    "Notify",
    "OUTPUT_CAP",
    "OutOfMemory",
    "Output",
    "PayloadError",
    "Person",
    "Policy",
    "ProviderError",
    "Rienda",
    "RiendaError",
    "RunContext",
    "RunEnd",
    "RunResult",
    "RunStart",
    "Sandbox",
    "SandboxError",
    "ScriptError",
    "ScrubbingUI",
    "SessionBusy",
    "SessionError",
    "SessionWriteError",
    "TextDelta",
    "ThinkingDelta",
    "ToolCall",
    "ToolCallStarted",
    "ToolGate",
    "ToolResult",
    "ToolResultReady",
    "UI",
    "Usage",
    "Via",
    "invoke_tool",
    "load_config",
    "read_config",
    "redact_config",
    "rienda_home",
    "scrub",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
