"""``rienda-gate AGENT [--home H] [--agent N] [--timeout S] [--confirm P] [--idle S]``:
``rienda gate AGENT --warm S`` with the least start-up, for an agent's hook entry.

It imports only what asking the home's gate server takes (no argparse of the whole
command, no engine): when the server answers, that answer (scrubbed by the server with this
process's environment) is printed and the process ends. Otherwise, or for words it does
not take, it is ``rienda gate AGENT --warm S`` in full, in this process, on the event
already read: the gate decides itself (and starts the server), failing closed as always.
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

__all__ = ["gate_main"]

_OPTIONS = ("--home", "--agent", "--timeout", "--confirm", "--idle")


def gate_main(argv: list[str] | None = None) -> int:
    """The ``rienda-gate`` command; see the module's docstring."""
    words = list(sys.argv[1:] if argv is None else argv)
    target, given = _parsed(words)
    home = Path(given.get("home") or os.environ.get("RIENDA_HOME") or "~/.rienda").expanduser().resolve()  # rienda_home's rule
    data = sys.stdin.buffer.read(1024 * 1024 + 1) if sys.stdin is not None else b""
    if target is None:  # words it does not take: the full command says what is wrong (exit 2)
        return _full(["--home", str(home), "gate", *_without_home(words)], data)
    from .engine import ask_gate_server

    try:
        timeout = float(given["timeout"]) if "timeout" in given else None
    except ValueError:
        return _full(["--home", str(home), "gate", *_without_home(words)], data)
    options = {"agent": given.get("agent"), "timeout": timeout, "confirm": given.get("confirm")}
    reply = ask_gate_server(home, target, data, options, (timeout or 10.0) + 5.0)
    if reply is None:
        rest = [word for name, value in given.items() if name not in ("home", "idle") for word in (f"--{name}", value)]
        return _full(["--home", str(home), "gate", target, *rest, "--warm", given.get("idle", "600")], data)
    for note in reply.get("notes") or []:
        print(f"rienda gate: {note}", file=sys.stderr)
    if reply["answer"] is not None:
        print(json.dumps(reply["answer"], ensure_ascii=False))
    return reply["exit_code"]


def _full(argv: list[str], data: bytes) -> int:
    """The ``rienda`` command with ``argv``, reading ``data`` as its stdin."""
    from .cli.main import main

    sys.stdin = io.TextIOWrapper(io.BytesIO(data))
    return main(argv)


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
