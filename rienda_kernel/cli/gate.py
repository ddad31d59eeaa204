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
import signal
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
    gate.add_argument("--warm", nargs="?", type=float, const=600.0, metavar="IDLE",
                      help="ask this home's gate server first, and start one when there is none, which ends after "
                           "IDLE seconds without a call (default 600); a server that cannot answer changes "
                           "nothing: the gate decides itself")
    gate.set_defaults(command=_gate, json=True)
    server = commands.add_parser("gate-server", help="serve rienda gate --warm for this home until idle "
                                                     "(started by the first warm gate call)")
    server.add_argument("--idle", type=float, default=600.0, metavar="SECONDS",
                        help="end after this many seconds without a call (default 600)")
    server.set_defaults(command=_serve)


def _gate(args: argparse.Namespace) -> int:
    from ..engine import GATE_EVENT_BYTES, ask_gate_server, rienda_home

    home = rienda_home(args.home)
    data = sys.stdin.buffer.read(GATE_EVENT_BYTES + 1) if sys.stdin is not None else b""
    served = None
    if args.warm is not None:
        options = {"agent": args.agent, "timeout": args.timeout, "confirm": args.confirm}
        served = ask_gate_server(home, args.target, data, options, (args.timeout or 10.0) + 5.0)
    if served is not None:
        answer, code, notes, timed_out = served["answer"], served["exit_code"], served.get("notes") or [], False
    else:
        answer, code, notes, timed_out = _decide_here(args, home, data)
    for note in notes:
        print(f"rienda gate: {note}", file=sys.stderr)
    if answer is not None:
        print(json.dumps(answer, ensure_ascii=False))
    if timed_out:  # hooks that would not stop hold threads: the answer is out, nothing else is owed
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _decide_here(args: argparse.Namespace, home: Any, data: bytes) -> tuple[Any, int, list[str], bool]:
    from ..engine import GateOptions, answer_hook_event, start_gate_server, warm_shared_sandbox

    if args.target in ("claude-code", "codex", "gemini-cli", "copilot-cli"):  # a home with hooks: the V8
        warm_shared_sandbox(home)  # worker boots while the rest imports and the event is read
    reply = answer_hook_event(args.target, data, GateOptions(args.home, args.agent, args.timeout, args.confirm))
    if args.warm is not None and home.is_dir():
        start_gate_server(home, args.warm)
    return reply.answer, reply.exit_code, reply.notes, reply.timed_out


def _serve(args: argparse.Namespace) -> int:
    from ..engine import rienda_home, serve_gate

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # ends like an idle server: its socket removed
    return serve_gate(rienda_home(args.home), args.idle, log=sys.stderr)
