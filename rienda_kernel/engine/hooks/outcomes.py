"""What a hook point's chain comes to, as the loop reads it: a tool call let through or
refused (:class:`ToolGate`), a run refused or given context (:class:`RunGate`), a run that
goes on (:class:`RunEnding`), a compaction cancelled or steered (:class:`CompactGate`), an
answer rewritten (:class:`ModelResponse`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..common.json_value import JSON
from ..sessions.messages import ToolCall
from ..tools.model import ToolResult

__all__ = ["CompactGate", "ModelResponse", "RunEnding", "RunGate", "ToolGate"]


@dataclass(frozen=True)
class ToolGate:
    """The outcome of ``beforeToolExecute``: run with ``arguments``, or refuse (``failed``:
    the error of the fail-closed hook whose failure refused it)."""

    allowed: bool
    arguments: JSON
    reason: str | None = None
    refused_by: str | None = None
    failed: str | None = None

    def refusal(self) -> ToolResult:
        """The error result the model receives for a refused call."""
        return ToolResult(self.reason or f"refused by hook {self.refused_by}", True)


@dataclass(frozen=True)
class RunGate:
    """The outcome of ``beforeRun``: ``refused_by`` the hook that refused the run (None: it
    runs) and its ``reason``; the ``context`` the hooks added for the model ("": none)."""

    refused_by: str | None = None
    reason: str | None = None
    context: str = ""


@dataclass(frozen=True)
class RunEnding:
    """The outcome of ``afterRun``: the ``prompt`` the run goes on with (None: it ends), and
    the hook that gave it."""

    prompt: str | None = None
    by: str | None = None


@dataclass(frozen=True)
class CompactGate:
    """The outcome of ``beforeCompact``: ``cancelled_by`` the hook that cancelled (None: go
    on), the ``summary`` a hook supplied (None: the summariser writes it), the
    ``instructions`` for the summariser as the hooks left them, and who set each."""

    cancelled_by: str | None = None
    summary: str | None = None
    instructions: str | None = None
    summary_by: str | None = None
    instructions_by: str | None = None
    reason: str | None = None  # why the hook cancelled, when it said


@dataclass(frozen=True)
class ModelResponse:
    """What ``afterModelResponse`` may rewrite (``tool_calls`` is read-only)."""

    text: str
    thinking: str
    tool_calls: Sequence[ToolCall] = ()
