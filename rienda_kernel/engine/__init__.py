"""Rienda's engine: agents, the loop, sessions, providers, the V8 sandbox, tools, hooks.

Knows nothing of Jupyter: front ends (the kernel, the magics, the ``rienda`` command)
use only what this module exports. Start with :class:`Rienda`::

    rienda = Rienda(home="~/.rienda", workdir=".")
    result = rienda.conversation("default").run("Count the words in notes.txt", ui)
"""

from .cancel import CancelToken
from .config import load_config, read_config, rienda_home
from .agents import Agent
from .errors import (
    ArgumentsError,
    ConfigError,
    ExtensionError,
    Interrupted,
    OutOfMemory,
    ProviderError,
    RiendaError,
    SandboxError,
    ScriptError,
    SessionBusy,
    SessionError,
    SessionWriteError,
)
from .events import (
    Confirm,
    Diagnostic,
    Event,
    HookDecision,
    Log,
    MessageSaved,
    Notify,
    Output,
    RunEnd,
    RunStart,
    TextDelta,
    ThinkingDelta,
    ToolCallStarted,
    ToolResultReady,
)
from .extensions import HOOK_POINTS, Catalog, ExtensionLoader, Hook, JSTool
from .builtin_tools import BUILTIN_TOOLS, BuiltinTool
from .hooks import HookChain, ModelResponse, ToolGate
from .host import Host, RunContext
from .loop import RunResult
from .messages import Message, ToolCall, Usage
from .runtime import Conversation, Rienda
from .sandbox import JSValue, Sandbox
from .secrets import redact_config, scrub
from .tools import OUTPUT_CAP, ToolResult, invoke_tool
from .ui import UI, NonInteractiveUI, ScrubbingUI

__all__ = [
    "Agent",
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
    "invoke_tool",
    "load_config",
    "read_config",
    "redact_config",
    "rienda_home",
    "scrub",
]
