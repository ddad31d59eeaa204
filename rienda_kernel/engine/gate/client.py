"""``rienda-gate AGENT [--home H] [--agent N] [--timeout S] [--confirm P] [--idle S]``:
``rienda gate AGENT --warm S`` with the least start-up, for an agent's hook entry.

It imports only what asking the home's gate server takes (no argparse of the whole
command, no engine): when the server answers, that answer (scrubbed by the server with this
process's environment) is printed and the process ends. Otherwise it is ``rienda gate AGENT
--warm S`` (:func:`.command.gate_command`), in this process, on the event already read: the
gate decides itself (and starts the server), failing closed as always. Words it does not
take are the full ``rienda gate`` command's to judge (exit 2 and its message): the process
becomes that command before reading stdin.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import NoReturn

__all__ = ["gate_main"]

_OPTIONS = ("--home", "--agent", "--timeout", "--confirm", "--idle")


def gate_main(argv: list[str] | None = None) -> int:
    """The ``rienda-gate`` command; see the module's docstring."""
    words = list(sys.argv[1:] if argv is None else argv)
    target, given = _parsed(words)
    home = Path(given.get("home") or os.environ.get("RIENDA_HOME") or "~/.rienda").expanduser().resolve()  # rienda_home's rule
    try:
        timeout = float(given["timeout"]) if "timeout" in given else None
        idle = float(given.get("idle", "600"))
    except ValueError:
        target = None
    if given.get("confirm", "ask") not in ("ask", "allow", "deny"):
        target = None
    if target is None:  # words it does not take: the full command says what is wrong (exit 2)
        _become_full(["--home", str(home), "gate", *_without_home(words)])
    data = sys.stdin.buffer.read(1024 * 1024 + 1) if sys.stdin is not None else b""
    from .server import ask_gate_server

    options = {"agent": given.get("agent"), "timeout": timeout, "confirm": given.get("confirm")}
    reply = ask_gate_server(home, target, data, options, (timeout or 10.0) + 5.0)
    if reply is None:
        from .answering import GateOptions
        from .command import gate_command

        return gate_command(home, target, data, GateOptions(given.get("home"), given.get("agent"), timeout,
                                                            given.get("confirm")), idle)
    for note in reply.notes:
        print(f"rienda gate: {note}", file=sys.stderr)
    if reply.answer is not None:
        print(json.dumps(reply.answer, ensure_ascii=False))
    return reply.exit_code


def _become_full(argv: list[str]) -> NoReturn:
    """This process becomes the ``rienda`` command with ``argv`` (stdin not yet read)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", "rienda_kernel.cli", *argv])


def _parsed(words: list[str]) -> tuple[str | None, dict[str, str]]:
    """AGENT and the options given (``--name value`` or ``--name=value``); None for AGENT
    when the words are anything else (the full command then says what is wrong)."""
    given: dict[str, str] = {}
    targets: list[str] = []
    rest = iter(words)
    for word in rest:
        name, equals, value = word.partition("=")
        if name in _OPTIONS:
            found = value if equals else next(rest, None)
            if found is None:
                return None, given
            given[name[2:]] = found
        elif word.startswith("-"):
            return None, given
        else:
            targets.append(word)
    return (targets[0] if len(targets) == 1 else None), given


def _without_home(words: list[str]) -> list[str]:
    """``words`` without ``--home H`` (the full command takes it before ``gate``)."""
    out, rest = [], iter(words)
    for word in rest:
        if word == "--home":
            next(rest, None)
        elif not word.startswith("--home="):
            out.append(word)
    return out
