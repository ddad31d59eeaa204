"""``rienda gate AGENT``, once its words are read: the event in, the answer out.

:func:`gate_command` is the whole command after argument parsing, shared by ``rienda
gate`` (:mod:`rienda_kernel.cli.gate`) and the lean client ``rienda-gate``
(:mod:`.client`) when its server did not answer: ask the home's warm server (with
``warm``, unless the client already did), else decide here
(:func:`.answering.answer_hook_event`) and start a server for the next call; then the
notes on stderr, the answer on stdout, and the exit code.

Contracts:
- The whole answer is out within the gate's timeout of ``options.started``: a server that
  said how long it would take and did not answer in that time leaves none to decide
  here, so the call is denied; a server that is not there, or failed early, leaves the
  rest of the time to a decision here. An event whose stdin did not end in time is denied.
- A decision that timed out leaves hooks holding threads: the process ends at once, its
  output flushed.
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

from ..home.config import DEFAULT_GATE_TIMEOUT
from .answering import GATE_AGENTS, GateOptions, GateReply, answer_hook_event, refusal
from .decision import MAX_TIMEOUT
from .server import start_gate_server
from .wire import Request, Served, Unanswered, ask_server

__all__ = ["gate_command", "gate_budget"]


def gate_budget(timeout: float | None) -> float:
    """The seconds the gate may take with ``timeout`` given (None: not given, so the
    default until config.yaml is read; an unusable value is denied in far less)."""
    if timeout is None or not math.isfinite(timeout) or not 0 < timeout <= MAX_TIMEOUT:
        return DEFAULT_GATE_TIMEOUT
    return timeout


def gate_command(home: Path, target: str, data: bytes, options: GateOptions, warm: float | None,
                 asked: Unanswered | None = None, in_time: bool = True) -> int:
    """Answer the event ``data`` of agent ``target`` (see the module's contracts); the exit
    code. ``options.home`` is the home as given (None: the default), ``home`` it resolved;
    ``asked``: what the server said when the caller asked it already; ``in_time``: whether
    stdin ended within the gate's time."""
    started = time.monotonic() if options.started is None else options.started
    options = GateOptions(options.home, options.agent, options.timeout, options.confirm, options.cwd, options.env,
                          started)
    if not in_time:
        reply = refusal(target, data, f"the hook event did not end within {gate_budget(options.timeout):g} s "
                                      "(the gate's timeout): stdin stayed open")
        return _printed(reply)
    if asked is None and warm is not None:
        timeout = "" if options.timeout is None else repr(options.timeout)
        request = Request(target, str(home), options.agent or "", timeout, options.confirm or "",
                          time.monotonic() - started, os.getcwd(), b"\0".join(b"%s=%s" % pair for pair in
                                                                            os.environb.items()), data)
        known = None if options.timeout is None else started + gate_budget(options.timeout)
        outcome = ask_server(str(home), request, known)
        if isinstance(outcome, Served):
            return _served(outcome)
        asked = outcome
    if asked is not None and asked.why == "late":
        return _printed(refusal(target, data, asked.detail))
    if target in GATE_AGENTS:  # a home with hooks: the V8 worker boots while the rest imports
        from ..sandbox.workers import warm_shared_sandbox

        warm_shared_sandbox(home)
    reply = answer_hook_event(target, data, options)
    if warm is not None and (asked is None or asked.why == "none") and home.is_dir():
        start_gate_server(home, warm)
    return _printed(reply)


def _served(served: Served) -> int:
    """The server's reply, printed as it gave it."""
    sys.stderr.write(served.err.decode("utf-8", "replace"))
    sys.stdout.write(served.out.decode("utf-8", "replace"))
    return served.code


def _printed(reply: GateReply) -> int:
    sys.stderr.write(reply.stderr())
    sys.stdout.write(reply.stdout())
    if reply.timed_out:  # hooks that would not stop hold threads: the answer is out, nothing else is owed
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(reply.exit_code)
    return reply.exit_code
