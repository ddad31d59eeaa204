"""``rienda compact SESSION`` and ``rienda pin SESSION [N]``: a long session's compaction by
hand, and the prompts every compaction keeps verbatim (docs/compaction.md).

``rienda compact`` resumes the session with its own agent (its hooks decide as in a run:
``beforeCompact`` may cancel, supply the summary, add instructions) and says what came of
it in one line on stderr, as a run says an automatic one; ``--json`` prints every event as
JSON Lines instead, the ``compaction`` event among them. Exit 0 when the session was
compacted or had nothing to compact, 1 when the compaction was cancelled, rejected or
failed (or the session is unknown), 128 + the signal when a stop cut it short.
"""

from __future__ import annotations

import argparse
import signal
import sys

__all__ = ["add_compact_commands"]

_STOPS = (signal.SIGINT, signal.SIGTERM)


def add_compact_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``rienda compact`` and ``rienda pin`` on the subparsers ``commands``."""
    compact = commands.add_parser("compact", help="compact a session now, through its agent's hooks "
                                                  "(see docs/compaction.md)")
    compact.add_argument("session", help="the session id (or last)")
    compact.add_argument("--instructions", help="what the summary must keep (given to the summariser and to "
                                                "beforeCompact hooks)")
    compact.add_argument("--json", action="store_true", help="print the events as JSON Lines")
    compact.set_defaults(command=_compact)
    pin = commands.add_parser("pin", help="keep a prompt of a session verbatim through every compaction")
    pin.add_argument("session", help="the session id (or last)")
    pin.add_argument("number", nargs="?", type=int, metavar="N", help="the prompt's number, 1 for the first (default: the last)")
    pin.set_defaults(command=_pin)


def _compact(args: argparse.Namespace) -> int:
    from ..engine import Rienda, rienda_home
    from ..frontend.output import check_folder
    from ..frontend.terminal import JsonLinesUI, TerminalUI

    rienda = Rienda(rienda_home(args.home), check_folder(".", "the current folder"))
    try:
        conversation = rienda.conversation(session_id=args.session)
        policy = rienda.confirm_policy(None)
        ui = JsonLinesUI(policy, None) if args.json else TerminalUI(policy, None)
        for warning in conversation.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        made = conversation.compact_by_hand(ui, args.instructions, signals=_STOPS)
    finally:
        rienda.close()
    if made.event is None or made.stopped_by:
        print("rienda: interrupted; the session is as it was", file=sys.stderr)
        return 128 + (made.stopped_by or signal.SIGINT)
    return 0 if made.kept_going else 1


def _pin(args: argparse.Namespace) -> int:
    from ..engine import Rienda, rienda_home
    from ..frontend.output import check_folder

    rienda = Rienda(rienda_home(args.home), check_folder(".", "the current folder"))
    try:
        conversation = rienda.conversation(session_id=args.session)
        index = conversation.pin(args.number)
    finally:
        rienda.close()
    print(f"pinned prompt {conversation.prompt_number(index)} of session {conversation.session_id}: every compaction keeps it verbatim")
    return 0
