"""``rienda gate AGENT``: one hook event of another coding agent, decided by a Rienda agent.

Reads one event from stdin (at most 1 MiB), answers on stdout in AGENT's format and exits
0, whatever happens: every failure (bad input, a missing home or agent, a hook that
throws, the time bound) is a deny carrying the reason, with the same reason in one line
on stderr. Only an AGENT that is none of the four exits 2 (the one exit code all four
read as "block"), its reason on stderr. The engine's :func:`gate_command` does it all
once the words are read; see docs/gate.md.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import time
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
    gate.add_argument("--warm", nargs="?", type=_idle, const=600.0, metavar="IDLE",
                      help="ask this home's gate server first, and start one when there is none, which ends after "
                           "IDLE seconds without a call (default 600); a server that cannot answer changes "
                           "nothing: the gate decides itself")
    gate.set_defaults(command=_gate, json=True)
    server = commands.add_parser("gate-server", help="serve rienda gate --warm for this home until idle "
                                                     "(started by the first warm gate call)")
    server.add_argument("--idle", type=_idle, default=600.0, metavar="SECONDS",
                        help="end after this many seconds without a call (default 600)")
    server.set_defaults(command=_serve)


def _idle(text: str) -> float:
    """A server's idle time: a positive, finite number of seconds, at most a week."""
    seconds = float(text)
    if not (math.isfinite(seconds) and 0 < seconds <= 7 * 24 * 3600):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds up to a week, got {text!r}")
    return seconds


def _gate(args: argparse.Namespace) -> int:
    from ..engine import GATE_EVENT_BYTES, GateOptions, gate_budget, gate_command, read_event_input, rienda_home

    started = time.monotonic()
    typed = sys.stdin is not None and sys.stdin.isatty()
    data, in_time = read_event_input(GATE_EVENT_BYTES + 1, started + gate_budget(args.timeout))
    options = GateOptions(args.home, args.agent, args.timeout, args.confirm,
                          started=time.monotonic() if typed else started)
    code: int = gate_command(rienda_home(args.home), args.target, data, options, args.warm, in_time=in_time)
    return code


def _serve(args: argparse.Namespace) -> int:
    from ..engine import rienda_home, serve_gate

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # ends like an idle server: its socket removed
    code: int = serve_gate(rienda_home(args.home), args.idle, log=sys.stderr)
    return code
