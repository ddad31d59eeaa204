"""Hooks: :mod:`.chain` runs an agent's hooks at each of the eight points, in order, with
their rules; :mod:`.outcomes` is what each point comes to, as the loop reads it."""

from .chain import HookChain, HookOutcome, chain_hooks, declared_hooks, inert_fail_closed
from .outcomes import CompactGate, ModelResponse, RunEnding, RunGate, ToolGate

__all__ = ["CompactGate", "HookChain", "HookOutcome", "ModelResponse", "RunEnding", "RunGate", "ToolGate",
           "chain_hooks", "declared_hooks", "inert_fail_closed"]
