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

from ..engine import ConfigError

__all__ = ["add_gate_command"]


def add_gate_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``rienda gate`` on the subparsers ``commands``."""
    gate = commands.add_parser("gate", help="answer one hook event of Claude Code, Codex, Gemini CLI or Copilot "
                                            "CLI with a Rienda agent's hooks; install | uninstall AGENT wires it into "
                                            "that agent's settings, status says what is wired (see docs/gate.md)")
    gate.add_argument("target", metavar="AGENT", help="claude-code, codex, gemini-cli or copilot-cli; or install, "
                                                      "uninstall (then AGENT), status")
    gate.add_argument("which", nargs="?", metavar="AGENT", help=argparse.SUPPRESS)
    where = gate.add_mutually_exclusive_group()
    where.add_argument("--user", dest="scope", action="store_const", const="user",
                       help="install: into the agent's user settings (the default)")
    where.add_argument("--project", dest="scope", action="store_const", const="project",
                       help="install: into the project's settings, under the working folder")
    gate.add_argument("--dry-run", action="store_true", help="install, uninstall: print the change, make none")
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

    if args.target in ("install", "uninstall", "status"):
        return _wiring(args)
    if args.which is not None or args.scope or args.dry_run:
        raise ConfigError(f"rienda gate {args.target} takes one event on stdin: --user, --project, --dry-run and a "
                          "second word go with install and uninstall")

    started = time.monotonic()
    typed = sys.stdin is not None and sys.stdin.isatty()
    data, in_time = read_event_input(GATE_EVENT_BYTES + 1, started + gate_budget(args.timeout))
    options = GateOptions(args.home, args.agent, args.timeout, args.confirm,
                          started=time.monotonic() if typed else started)
    code: int = gate_command(rienda_home(args.home), args.target, data, options, args.warm, in_time=in_time)
    return code


def _wiring(args: argparse.Namespace) -> int:
    """``rienda gate install | uninstall AGENT``, ``rienda gate status``: a line each."""
    import os
    from pathlib import Path

    from ..engine import GATE_AGENTS, Rienda, gate_status, gate_wiring, rienda_home

    home = rienda_home(args.home)
    if args.target == "status":
        lines = gate_status(home, Path.cwd(), dict(os.environ))
    else:
        if args.which not in GATE_AGENTS:
            raise ConfigError(f"rienda gate {args.target} takes the agent: one of {', '.join(GATE_AGENTS)}, not "
                              f"{args.which!r}")
        if not home.is_dir():
            raise ConfigError(f"the Rienda home {home} does not exist (--home, $RIENDA_HOME or ~/.rienda): the "
                              "entries would name it")
        section = Rienda(home=home, workdir=Path.cwd()).config().gate
        timeout = args.timeout if args.timeout is not None else section.timeout
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 3600:
            raise ConfigError(f"the gate's timeout must be a positive number of seconds up to 3600, got {timeout!r}")
        lines = gate_wiring(args.target, args.which, args.scope or "user", home=home,
                            decider=args.agent or section.agent or "gate", timeout=float(timeout), cwd=Path.cwd(),
                            env=dict(os.environ), dry_run=args.dry_run)
    for line in lines:
        print(line)
    return 0


def _serve(args: argparse.Namespace) -> int:
    from ..engine import rienda_home, serve_gate

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # ends like an idle server: its socket removed
    code: int = serve_gate(rienda_home(args.home), args.idle, log=sys.stderr)
    return code
