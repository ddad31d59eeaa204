"""``rienda-gate AGENT [--home H] [--agent N] [--timeout S] [--confirm P] [--idle S]``:
``rienda gate AGENT --warm S`` with the least start-up, the command an agent's hook entry
runs (``rienda gate install`` writes it).

When the home's server answers, this process has imported nothing but :mod:`.wire` (no
engine, no ``json``, ``re`` or ``typing``): the server's reply (scrubbed by it with this
process's environment) is printed and the process ends. Otherwise it is ``rienda gate
AGENT --warm S`` (:func:`.command.gate_command`), in this process, on the event already
read, with the time that is left: the gate decides itself (and starts the server), failing
closed as always; a server that said how long it would take and did not answer in that
time leaves no time to decide, so the call is denied. The whole answer is out within the
gate's timeout of this process's start. Words it does not take are the full ``rienda
gate`` command's to judge (exit 2 and its message): the process becomes that command
before reading stdin.
"""

from __future__ import annotations

import math
import os
import sys
import time

from .wire import Request, Served, Unanswered, ask_server, read_event_input

TYPE_CHECKING = False  # not typing's: importing typing costs the lean client milliseconds; mypy reads the name
if TYPE_CHECKING:
    from typing import NoReturn

__all__ = ["gate_main"]

_OPTIONS = ("--home", "--agent", "--timeout", "--confirm", "--idle")
_DEFAULT_TIMEOUT = 10.0  # config.yaml's gate.timeout when not given; the server says its own
_MAX_TIMEOUT = 3600.0  # as .decision.MAX_TIMEOUT: past it the value is denied, and the default bounds the wait
_MAX_IDLE = 7 * 24 * 3600.0
_EVENT_LIMIT = 1024 * 1024 + 1  # one byte past the largest event: the gate says it is too large


def gate_main(argv: list[str] | None = None) -> int:
    """The ``rienda-gate`` command; see the module's docstring."""
    started = time.monotonic()
    words = list(sys.argv[1:] if argv is None else argv)
    target, given = _parsed(words)
    home = os.path.realpath(os.path.expanduser(given.get("home") or os.environ.get("RIENDA_HOME") or "~/.rienda"))
    try:
        timeout = float(given["timeout"]) if "timeout" in given else None
        idle = float(given.get("idle", "600"))
    except ValueError:
        target = None
    else:
        if not (math.isfinite(idle) and 0 < idle <= _MAX_IDLE):
            target = None
    if given.get("confirm", "ask") not in ("ask", "allow", "deny"):
        target = None
    if target is None:  # words it does not take: the full command says what is wrong (exit 2)
        _become_full(["--home", home, "gate", *_without_home(words)])
    budget = timeout if timeout is not None and math.isfinite(timeout) and 0 < timeout <= _MAX_TIMEOUT \
        else _DEFAULT_TIMEOUT
    typed = sys.stdin is not None and os.isatty(0)
    data, in_time = read_event_input(_EVENT_LIMIT, started + budget)
    if typed:
        started = time.monotonic()  # a person typed the event: the gate's time starts now
    outcome: Unanswered | None = None
    if in_time:
        env = b"\0".join(b"%s=%s" % pair for pair in os.environb.items())
        request = Request(target, home, given.get("agent", ""), given.get("timeout", ""), given.get("confirm", ""),
                          time.monotonic() - started, os.getcwd(), env, data)
        served = ask_server(home, request, started + budget if "timeout" in given else None)
        if isinstance(served, Served):
            _write_all(2, served.err)
            _write_all(1, served.out)
            return served.code
        outcome = served
    from pathlib import Path

    from .answering import GateOptions
    from .command import gate_command

    options = GateOptions(given.get("home"), given.get("agent"), timeout, given.get("confirm"), started=started)
    return gate_command(Path(home), target, data, options, idle, asked=outcome, in_time=in_time)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


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
    """``words`` without ``--home H`` (the full command takes it before ``gate``), and
    ``--idle`` as the full command says it (``--warm``)."""
    out, rest = [], iter(words)
    for word in rest:
        if word == "--home":
            next(rest, None)
        elif not word.startswith("--home="):
            out.append("--warm" + word[len("--idle"):] if word.split("=")[0] == "--idle" else word)
    return out
