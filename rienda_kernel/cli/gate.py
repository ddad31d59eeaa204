"""``rienda gate AGENT``: one hook event of another coding agent, decided by a Rienda agent.

Reads one event from stdin (at most 1 MiB), answers on stdout in AGENT's format and exits
0, whatever happens: every failure (bad input, a missing home or agent, a hook that
throws, the time bound) is a deny carrying the reason, with the same reason in one line
on stderr. Only an AGENT that is none of the four exits 2 (the one exit code all four
read as "block"), its reason on stderr. The engine's :func:`answer_hook_event` does it
all; see docs/gate.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

__all__ = ["add_gate_command"]


def add_gate_command(commands: Any) -> None:
    """Register ``rienda gate`` on the subparsers ``commands``."""
    gate = commands.add_parser("gate", help="answer one hook event of Claude Code, Codex, Gemini CLI or Copilot "
                                            "CLI with a Rienda agent's hooks (see docs/gate.md)")
    gate.add_argument("target", metavar="AGENT", help="claude-code, codex, gemini-cli or copilot-cli")
    gate.add_argument("--agent", help="the Rienda agent whose hooks decide (default: config.yaml's gate.agent, "
                                      "else gate)")
    gate.add_argument("--timeout", type=float, metavar="SECONDS",
                      help="deny when no decision came in this many seconds (default: gate.timeout, else 10)")
    gate.add_argument("--confirm", choices=("ask", "allow", "deny"),
                      help="how ctx.confirm is answered: ask (the agent asks its person where it can, "
                           "else no), allow or deny (default: gate.confirm, else ask)")
    gate.set_defaults(command=_gate, json=True)


def _gate(args: argparse.Namespace) -> int:
    from ..engine import rienda_home, warm_shared_sandbox

    if args.target in ("claude-code", "codex", "gemini-cli", "copilot-cli"):  # a home with hooks: the V8
        warm_shared_sandbox(rienda_home(args.home))  # worker boots while the rest imports and the event is read
    from ..engine import GATE_EVENT_BYTES, GateOptions, answer_hook_event

    data = sys.stdin.buffer.read(GATE_EVENT_BYTES + 1) if sys.stdin is not None else b""
    options = GateOptions(args.home, args.agent, args.timeout, args.confirm)
    reply = answer_hook_event(args.target, data, options)
    for note in reply.notes:
        print(f"rienda gate: {note}", file=sys.stderr)
    if reply.answer is not None:
        print(json.dumps(reply.answer, ensure_ascii=False))
    if reply.timed_out:  # hooks that would not stop hold threads: the answer is out, nothing else is owed
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(reply.exit_code)
    return reply.exit_code
