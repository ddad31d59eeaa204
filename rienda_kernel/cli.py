"""The ``rienda`` command: a thin front end over the engine.

    rienda tools                  list tools (built-in and user) with diagnostics
    rienda hooks                  list hooks and the points they handle, with diagnostics
    rienda call TOOL [JSON]       run one tool through the sandbox, printing its result

Results go to stdout; logs, command output, notices and diagnostics to stderr. Exit codes:
0 for a successful result, 1 for an error result or bad input, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any

from .engine import (
    BuiltinTool,
    CancelToken,
    Confirm,
    Diagnostic,
    Event,
    ExtensionLoader,
    Interrupted,
    Log,
    NonInteractiveUI,
    Notify,
    Output,
    RiendaError,
    RunContext,
    Sandbox,
    invoke_tool,
    load_config,
    redact,
    rienda_home,
)

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.command(args)
    except RiendaError as exc:
        print(f"rienda: {exc}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rienda", description="Rienda: JavaScript tools and hooks in V8.")
    parser.add_argument("--home", help="the Rienda home (default: $RIENDA_HOME or ~/.rienda)")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    tools = commands.add_parser("tools", help="list tools, with diagnostics")
    tools.set_defaults(command=_tools)
    hooks = commands.add_parser("hooks", help="list hooks, with diagnostics")
    hooks.set_defaults(command=_hooks)

    call = commands.add_parser("call", help="run one tool and print its result")
    call.add_argument("tool", help="the tool's name")
    call.add_argument("arguments", nargs="?", default="{}", help="the arguments as a JSON object")
    call.add_argument("--workdir", default=".", help="the workspace (default: the current directory)")
    call.add_argument("--yes", action="store_true", help="answer every ctx.confirm with yes")
    call.set_defaults(command=_call)
    return parser


def _catalog(args: argparse.Namespace):
    home = rienda_home(args.home)
    return ExtensionLoader(Sandbox()).discover(home)


def _print_diagnostics(diagnostics: list[Diagnostic]) -> None:
    for diagnostic in diagnostics:
        print(f"diagnostic: {diagnostic.message}", file=sys.stderr)


def _tools(args: argparse.Namespace) -> int:
    catalog = _catalog(args)
    for name, tool in sorted(catalog.tools.items()):
        origin = "built-in" if isinstance(tool, BuiltinTool) else tool.path
        note = " (shadows the built-in)" if name in catalog.shadowed else ""
        print(f"{name}\t{tool.description}\t[{origin}]{note}")
    _print_diagnostics([d for d in catalog.diagnostics if d.source == "extensions:tool"])
    return 0


def _hooks(args: argparse.Namespace) -> int:
    catalog = _catalog(args)
    for name, hook in sorted(catalog.hooks.items()):
        print(f"{name}\t{', '.join(hook.points)}\t[{hook.path}]")
    _print_diagnostics([d for d in catalog.diagnostics if d.source == "extensions:hook"])
    return 0


def _call(args: argparse.Namespace) -> int:
    home = rienda_home(args.home)
    sandbox = Sandbox()
    catalog = ExtensionLoader(sandbox).discover(home)
    if args.tool not in catalog.tools:
        _print_diagnostics(catalog.diagnostics)
        print(f"rienda: no tool named {args.tool!r} in {home / 'tools'} or the built-ins "
              f"({', '.join(sorted(catalog.tools))})", file=sys.stderr)
        return 1
    config = load_config(home)
    auto_approve = args.yes or bool(config.get("auto_approve", False))
    run = RunContext(
        workdir=Path(args.workdir).resolve(),
        ui=NonInteractiveUI(auto_approve=auto_approve, sink=_print_event),
        session={"id": None},
        agent={"id": None, "description": "", "model": None, "tools": [args.tool], "hooks": []},
        config=redact(config),
    )
    cancel = CancelToken()
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["result"] = invoke_tool(catalog.tools[args.tool], args.arguments, run, sandbox, cancel)
        except Interrupted:
            outcome["interrupted"] = True

    worker = threading.Thread(target=work, name="rienda-call")
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.1)
    except KeyboardInterrupt:
        cancel.cancel()
        worker.join()
        print("rienda: interrupted", file=sys.stderr)
        return 130
    if "interrupted" in outcome:
        return 130
    result = outcome["result"]
    print(result.text)
    return 1 if result.is_error else 0


def _print_event(event: Event) -> None:
    if isinstance(event, Log):
        line = f"[{event.source}] {event.text}\n"
    elif isinstance(event, Output):
        line = event.text
    elif isinstance(event, Notify):
        line = f"[{event.source}] notice: {event.title}: {event.body}\n"
    elif isinstance(event, Confirm):
        line = f"[{event.source}] confirm {event.title!r}: {'yes' if event.answer else 'no'} ({event.how})\n"
    elif isinstance(event, Diagnostic):
        line = f"diagnostic: {event.message}\n"
    else:
        return
    sys.stderr.write(line)
    sys.stderr.flush()


if __name__ == "__main__":
    sys.exit(main())
