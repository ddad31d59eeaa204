"""Rienda's engine: extensions, the V8 sandbox, tools and the hook chain.

Knows nothing of Jupyter: front ends (the kernel, the magics, the ``rienda`` command)
use only what this module exports.
"""

from .cancel import CancelToken
from .config import load_config, redact, rienda_home
from .errors import (
    ConfigError,
    ExtensionError,
    Interrupted,
    OutOfMemory,
    RiendaError,
    SandboxError,
    ScriptError,
)
from .events import Confirm, Diagnostic, Event, HookDecision, Log, Notify, Output
from .extensions import HOOK_POINTS, Catalog, ExtensionLoader, Hook, JSTool
from .builtin_tools import BUILTIN_TOOLS, BuiltinTool
from .hooks import HookChain, ModelResponse, ToolGate
from .host import Host, RunContext
from .sandbox import JSValue, Sandbox
from .tools import OUTPUT_CAP, ToolResult, invoke_tool
from .ui import UI, NonInteractiveUI

__all__ = [
    "BUILTIN_TOOLS",
    "BuiltinTool",
    "CancelToken",
    "Catalog",
    "ConfigError",
    "Confirm",
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
    "ModelResponse",
    "NonInteractiveUI",
    "Notify",
    "OUTPUT_CAP",
    "OutOfMemory",
    "Output",
    "RiendaError",
    "RunContext",
    "Sandbox",
    "SandboxError",
    "ScriptError",
    "ToolGate",
    "ToolResult",
    "UI",
    "invoke_tool",
    "load_config",
    "redact",
    "rienda_home",
]
