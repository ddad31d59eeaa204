"""The commands of a long session: ``compact [INSTRUCTIONS]`` (the current session's context
compacted now, through its agent's ``beforeCompact``/``afterCompact`` hooks), ``pin [N]``
(a prompt every compaction keeps verbatim) and ``context`` (what fills the next request); ``%rienda compact …`` in a notebook, ``/compact …``
in ``rienda chat`` (see docs/compaction.md). The one line each says is the engine's, as
``rienda compact`` and ``rienda pin`` say it.
"""

from __future__ import annotations

from ..engine import Diagnostic, Log, NonInteractiveUI, RiendaError
from .session import TurnSession
from .tables import CommandOutput

__all__ = ["CompactionFailed", "compact_command", "context_command", "pin_command", "prompt_numbers"]


class CompactionFailed(RiendaError):
    """A compaction that was cancelled, rejected, failed or stopped: its one line."""


def compact_command(session: TurnSession, args: list[str]) -> CommandOutput:
    """Compact the current session now (``args``: the instructions for the summariser, as
    written). The output is what the hooks logged, then the compaction's line; its value the
    :class:`Compaction`. :class:`CompactionFailed` (its line) unless it compacted or there
    was nothing to compact."""
    instructions = args[0].strip() if args and args[0].strip() else None
    ui = NonInteractiveUI(policy=session.turn_policy())  # records the events: the hooks' logs are shown
    made = session.conversation.compact_by_hand(ui, instructions)
    event = made.event
    if event is None:
        raise CompactionFailed("the compaction was interrupted; the session is as it was")
    if not made.kept_going:
        raise CompactionFailed(event.message)
    lines = [f"[{e.source}] {e.text}" for e in ui.events if isinstance(e, Log)]
    lines += [f"warning: {e.message}" for e in ui.events if isinstance(e, Diagnostic)]
    return CommandOutput("\n".join([*lines, event.message]), value=event)


def pin_command(session: TurnSession, args: list[str]) -> CommandOutput:
    """Pin prompt N of the current session (1 for the first; default the last); its value
    the prompt's message number."""
    if args and not args[0].isdigit():
        raise CompactionFailed(f"{session.prefix}pin takes a prompt's number (1 for the first), got {args[0]!r}")
    conversation = session.conversation
    index = conversation.pin(int(args[0]) if args else None)
    return CommandOutput(f"Pinned prompt {conversation.prompt_number(index)} of session {conversation.session_id}: every compaction keeps it "
                         "verbatim.", value=index)


def prompt_numbers(session: TurnSession) -> list[str]:
    """The current session's prompt numbers, newest first (``pin``'s completion)."""
    if session.session_id is None:
        return []
    prompts = sum(1 for message in session.conversation.messages if message.role == "user")
    return [str(number) for number in range(prompts, 0, -1)]


def context_command(session: TurnSession, args: list[str]) -> CommandOutput:
    """What fills the current session's next request, part by part, and what is left of the
    model's window (Claude Code's /context): one line; its value the :class:`ContextUse`."""
    if session.session_id is None:
        raise CompactionFailed(f"no session yet: the next prompt starts one ({session.prefix}context then says "
                               "what fills it)")
    use = session.conversation.context_use()
    return CommandOutput(use.line(), value=use)
