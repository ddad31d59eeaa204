"""``rienda gate AGENT``, once its words are read: the event in, the answer out.

:func:`gate_command` is the whole command after argument parsing, shared by ``rienda
gate`` (:mod:`rienda_kernel.cli.gate`) and the lean client ``rienda-gate``
(:mod:`.client`) when no server answers: ask the home's warm server (with ``warm``), else
decide here (:func:`.answering.answer_hook_event`) and start a server for the next call;
then the notes on stderr, the answer on stdout, and the exit code. A decision that timed
out leaves hooks holding threads: the process ends at once, its output flushed.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..common.json_value import JSON
from .answering import GATE_AGENTS, GateOptions, answer_hook_event
from .server import ask_gate_server, start_gate_server

__all__ = ["gate_command"]


def gate_command(home: Path, target: str, data: bytes, options: GateOptions, warm: float | None) -> int:
    """Answer the event ``data`` of agent ``target`` (see the module's docstring); the exit
    code. ``options.home`` is the home as given (None: the default), ``home`` it resolved."""
    served = None
    if warm is not None:
        asked = {"agent": options.agent, "timeout": options.timeout, "confirm": options.confirm}
        served = ask_gate_server(home, target, data, asked, (options.timeout or 10.0) + 5.0)
    if served is not None:
        answer, code, notes, timed_out = served.answer, served.exit_code, served.notes, False
    else:
        answer, code, notes, timed_out = _decide_here(home, target, data, options, warm)
    for note in notes:
        print(f"rienda gate: {note}", file=sys.stderr)
    if answer is not None:
        print(json.dumps(answer, ensure_ascii=False))
    if timed_out:  # hooks that would not stop hold threads: the answer is out, nothing else is owed
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _decide_here(home: Path, target: str, data: bytes, options: GateOptions,
                 warm: float | None) -> tuple[JSON, int, list[str], bool]:
    from ..sandbox.workers import warm_shared_sandbox

    if target in GATE_AGENTS:  # a home with hooks: the V8 worker boots while the rest imports
        warm_shared_sandbox(home)
    reply = answer_hook_event(target, data, options)
    if warm is not None and home.is_dir():
        start_gate_server(home, warm)
    return reply.answer, reply.exit_code, reply.notes, reply.timed_out
