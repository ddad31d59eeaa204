"""The ``rienda`` command: a thin front end over the engine.

    rienda run [--agent NAME] [--session ID] [--workdir DIR] [--yes] [--json] [PROMPT]
    rienda agents | tools | hooks        what exists, with diagnostics
    rienda sessions                      saved sessions, oldest first
    rienda show ID                       one session's messages, usage and hook decisions
    rienda call TOOL [JSON]              run one tool through the sandbox
    rienda replay ID [--agent A | --hooks a,b] [--run-tools]
                                         re-run a session through a hook chain; exit 1 if it differs
    rienda script ID [-o FILE]           a session as a scripted-model file

Exit codes: 0 when the run ends with ``end_turn`` (or a tool result is not an error), 1 on
``error`` or bad input, 130 when interrupted (Ctrl-C stops the run wherever it is).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .engine import BuiltinTool, CancelToken, Diagnostic, Interrupted, RiendaError, invoke_tool
from .engine.cancel import run_interruptibly
from .engine.config import redact
from .engine.host import RunContext
from .engine.replay import replay_session, session_script
from .engine.runtime import Rienda
from .terminal import JsonLinesUI, TerminalUI

__all__ = ["main"]

EXIT = {"end_turn": 0, "error": 1, "interrupted": 130}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.command(args)
    except RiendaError as exc:
        print(f"rienda: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C outside a run (listing, loading extensions)
        print("rienda: interrupted", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rienda", description="Rienda: agents with JavaScript tools and hooks.")
    parser.add_argument("--home", help="the Rienda home (default: $RIENDA_HOME or ~/.rienda)")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run one prompt (from PROMPT or standard input)")
    run.add_argument("prompt", nargs="?", help="the prompt; read from standard input when absent")
    run.add_argument("--agent", default="default", help="the agent (default: default)")
    run.add_argument("--session", help="resume this session")
    run.add_argument("--model", help="override the agent's model (provider/model)")
    run.add_argument("--workdir", default=".", help="the workspace (default: the current directory)")
    run.add_argument("--yes", action="store_true", help="answer every ctx.confirm with yes")
    run.add_argument("--json", action="store_true", help="print events as JSON Lines")
    run.set_defaults(command=_run)

    for name, handler, text in (("agents", _agents, "list agents"), ("tools", _tools, "list tools"),
                                ("hooks", _hooks, "list hooks"), ("sessions", _sessions, "list sessions")):
        commands.add_parser(name, help=f"{text}, with diagnostics").set_defaults(command=handler)

    show = commands.add_parser("show", help="print a session")
    show.add_argument("session", help="the session id")
    show.set_defaults(command=_show)

    replay = commands.add_parser("replay", help="re-run a session's calls through a hook chain (no model)")
    replay.add_argument("session", help="the session id (or last)")
    chosen = replay.add_mutually_exclusive_group()
    chosen.add_argument("--agent", help="use this agent's hooks (default: the session's agent)")
    chosen.add_argument("--hooks", help="use these hooks, comma-separated, in order ('' for none)")
    replay.add_argument("--run-tools", action="store_true", help="run the tools again instead of reusing results")
    replay.add_argument("--workdir", default=".", help="the workspace for tools and hooks")
    replay.add_argument("--yes", action="store_true", help="answer every ctx.confirm with yes")
    replay.add_argument("--json", action="store_true", help="print the report as JSON")
    replay.set_defaults(command=_replay)

    script = commands.add_parser("script", help="write a session as a scripted-model file")
    script.add_argument("session", help="the session id (or last)")
    script.add_argument("-o", "--output", help="the file to write (default: standard output)")
    script.set_defaults(command=_script)

    call = commands.add_parser("call", help="run one tool and print its result")
    call.add_argument("tool", help="the tool's name")
    call.add_argument("arguments", nargs="?", default="{}", help="the arguments as a JSON object")
    call.add_argument("--workdir", default=".", help="the workspace (default: the current directory)")
    call.add_argument("--yes", action="store_true", help="answer every ctx.confirm with yes")
    call.set_defaults(command=_call)
    return parser


def _rienda(args: argparse.Namespace) -> Rienda:
    return Rienda(home=args.home, workdir=getattr(args, "workdir", "."))


def _auto_approve(args: argparse.Namespace, rienda: Rienda) -> bool | None:
    """--yes, else the configuration's ``auto_approve``, else None (ask or deny)."""
    if args.yes:
        return True
    configured = rienda.config().get("auto_approve")
    return configured if isinstance(configured, bool) else None


def _terminal_stdin() -> Any:
    return sys.stdin if sys.stdin is not None and sys.stdin.isatty() else None


def _run(args: argparse.Namespace) -> int:
    rienda = _rienda(args)
    prompt = args.prompt if args.prompt is not None else _prompt_from_stdin()
    if not prompt.strip():
        raise RiendaError("no prompt: pass it as an argument or on standard input")
    stdin = _terminal_stdin() if args.prompt is not None else None
    kind = JsonLinesUI if args.json else TerminalUI
    ui = kind(_auto_approve(args, rienda), stdin)
    conversation = rienda.conversation(args.agent, args.session, args.model)
    for warning in conversation.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    result, interrupted = run_interruptibly(lambda cancel: conversation.run(prompt, ui, cancel))
    conversation.close()
    if result.session_id and not args.json:
        print(f"session {result.session_id}", file=sys.stderr)
    return 130 if interrupted else EXIT[result.reason]


def _prompt_from_stdin() -> str:
    if sys.stdin is None or sys.stdin.isatty():
        raise RiendaError("no prompt: pass it as an argument or on standard input")
    return sys.stdin.read()


def _print_diagnostics(diagnostics: list[Diagnostic]) -> None:
    for diagnostic in diagnostics:
        print(f"diagnostic: {diagnostic.message}", file=sys.stderr)


def _agents(args: argparse.Namespace) -> int:
    agents, diagnostics = _rienda(args).agents()
    for agent in agents:
        print(f"{agent.id}\t{agent.model}\t{agent.description}\t[{agent.path or 'built-in'}]")
    _print_diagnostics(diagnostics)
    return 0


def _tools(args: argparse.Namespace) -> int:
    catalog = _rienda(args).catalog()
    for name, tool in sorted(catalog.tools.items()):
        origin = "built-in" if isinstance(tool, BuiltinTool) else tool.path
        note = " (shadows the built-in)" if name in catalog.shadowed else ""
        print(f"{name}\t{tool.description}\t[{origin}]{note}")
    _print_diagnostics([d for d in catalog.diagnostics if d.source == "extensions:tool"])
    return 0


def _hooks(args: argparse.Namespace) -> int:
    catalog = _rienda(args).catalog()
    for name, hook in sorted(catalog.hooks.items()):
        print(f"{name}\t{', '.join(hook.points)}\t[{hook.path}]")
    _print_diagnostics([d for d in catalog.diagnostics if d.source == "extensions:hook"])
    return 0


def _sessions(args: argparse.Namespace) -> int:
    for info in _rienda(args).sessions():
        print(f"{info.id}\t{info.agent}\t{info.model}\t{info.messages} messages\t{info.title}")
    return 0


def _show(args: argparse.Namespace) -> int:
    rienda = _rienda(args)
    loaded = rienda.store.load(rienda.resolve_session(args.session))
    header = loaded.header
    print(f"session {header['id']}  agent {header['agent']}  model {header['model']}  created {header['created']}")
    for warning in loaded.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for line in _show_lines(loaded):
        print(line)
    return 0


def _show_lines(loaded: Any) -> list[str]:
    lines = []
    for message in loaded.messages:
        if message.role == "tool":
            lines.append(f"  {'✗' if message.is_error else '←'} {message.name} [{message.tool_call_id}]: {message.text}")
            continue
        note = "".join(f" ({flag})" for flag in ("interrupted", "error") if message.meta.get(flag))
        lines.append(f"{message.role}{note}: {message.text}")
        if message.thinking:
            lines.append(f"  thinking: {message.thinking}")
        for call in message.tool_calls:
            lines.append(f"  → {call.name} [{call.id}] {call.arguments}")
        if message.usage:
            lines.append(f"  usage: {message.usage.input_tokens} in, {message.usage.output_tokens} out")
    for record in loaded.records:
        if record.get("type") == "hook_decision" and record.get("effect") != "none":
            detail = record.get("reason") or record.get("error") or ", ".join(record.get("changes") or {})
            lines.append(f"  hook {record['hook']}.{record['point']}: {record['effect']}"
                         + (f" ({detail})" if detail else ""))
        elif record.get("type") == "run_end":
            lines.append(f"-- run ended: {record['reason']}" + (f": {record['error']}" if record.get("error") else ""))
    turns = [message.usage for message in loaded.messages if message.usage]
    if turns:
        lines.append(f"usage: {sum(u.input_tokens for u in turns)} in, {sum(u.output_tokens for u in turns)} out "
                     f"over {len(turns)} model turn{'s' if len(turns) != 1 else ''}")
    return lines


def _replay(args: argparse.Namespace) -> int:
    rienda = _rienda(args)
    hooks = None if args.hooks is None else [name for name in args.hooks.split(",") if name.strip()]
    ui = TerminalUI(True if args.yes else None, None)
    report = replay_session(rienda, rienda.resolve_session(args.session), hooks=hooks, agent_id=args.agent,
                            run_tools=args.run_tools, ui=ui)
    if args.json:
        print(json.dumps({"session_id": report.session_id, "hooks": report.hooks, "changed": report.changed,
                          "calls": [{"id": c.id, "name": c.name, "differences": c.differences} for c in report.calls],
                          "texts": [{"recorded": r, "now": n} for r, n in report.texts]}, ensure_ascii=False))
    else:
        print("\n".join(report.lines()))
    return 1 if report.changed else 0


def _script(args: argparse.Namespace) -> int:
    rienda = _rienda(args)
    text = session_script(rienda, rienda.resolve_session(args.session))
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _call(args: argparse.Namespace) -> int:
    rienda = _rienda(args)
    catalog = rienda.catalog()
    if args.tool not in catalog.tools:
        _print_diagnostics(catalog.diagnostics)
        raise RiendaError(f"no tool named {args.tool!r} in {rienda.home / 'tools'} or the built-ins "
                          f"({', '.join(sorted(catalog.tools))})")
    ui = TerminalUI(_auto_approve(args, rienda), None)
    run = RunContext(workdir=rienda.workdir, ui=ui, session={"id": None},
                     agent={"id": None, "description": "", "model": None, "tools": [args.tool], "hooks": []},
                     config=redact(rienda.config()))
    tool = catalog.tools[args.tool]
    result, interrupted = run_interruptibly(lambda cancel: _invoke(tool, args.arguments, run, rienda, cancel))
    if interrupted or result is None:
        print("rienda: interrupted", file=sys.stderr)
        return 130
    print(result.text)
    return 1 if result.is_error else 0


def _invoke(tool: Any, arguments: str, run: RunContext, rienda: Rienda, cancel: CancelToken) -> Any:
    try:
        return invoke_tool(tool, arguments, run, rienda.sandbox, cancel)
    except Interrupted:
        return None


if __name__ == "__main__":
    sys.exit(main())
