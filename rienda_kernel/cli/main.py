"""The ``rienda`` command: a thin front end over the engine.

Every command and option is made in :func:`_parser` (``rienda --help``, ``rienda COMMAND
--help``) and told in docs/cli.md; ``rienda gate`` is :mod:`.gate`'s, ``rienda compact``
and ``pin`` are :mod:`.compact`'s, the listings :mod:`.listings`'.

Exit codes (docs/cli.md, "Exit status"): 0 done, 1 an error, 2 a command line it cannot
read (:mod:`.usage`) or a default agent with no model, 130 Ctrl-C, 143 SIGTERM (an
interrupt too: commands are ended, ``afterRun`` runs, the session is closed), 141 standard
output closed. Whatever the exit, the MCP servers a command started are stopped.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING

# The engine loads each name on first use: `rienda --help` (and a run with no JavaScript
# extensions) loads only what it needs.
from .. import __version__
from ..engine import CONFIRM_POLICIES, CancelToken, ConfigError, RiendaError, repair
from ..frontend.output import OutputStream, Reader, check_folder, check_output_file, error_line
from .compact import add_compact_commands
from .gate import add_gate_command
from .usage import SUBCOMMAND, USAGE_EXIT, Parser, UsageError, lenient_stdin, parse, positive

if TYPE_CHECKING:
    from ..engine import ConfirmPolicy, Diagnostic, FrontEnd, Rienda, ToolResult

__all__ = ["main"]

EXIT = {"end_turn": 0, "error": 1, "interrupted": 130}
NO_MODEL_EXIT = 2
CLOSED_EXIT = 128 + signal.SIGPIPE  # the reader of stdout went away (| head): what a shell shows for SIGPIPE
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)  # both stop a run the same way; exit 128 + the signal
_OPENED: list[Rienda] = []  # closed when the command ends (their MCP servers stop)


def main(argv: list[str] | None = None) -> int:
    """The ``rienda`` command. Everything it prints passes one :class:`OutputStream` around
    stdout and one around stderr (scrubbed, paths as the reader sees them, and a closed
    pipe never a traceback); every error is one line."""
    reader = Reader()
    lenient_stdin()
    saved = sys.stdout, sys.stderr
    out, err = OutputStream(sys.stdout, reader, own_fd=True), OutputStream(sys.stderr, reader, own_fd=True)
    sys.stdout, sys.stderr = out, err
    try:
        code = _command(argv, out)
    finally:
        sys.stdout, sys.stderr = saved
    return CLOSED_EXIT if out.closed_early else code


def _command(argv: list[str] | None, out: OutputStream) -> int:
    try:
        args = parse(_parser(), argv)
        if getattr(args, "json", False):  # JSON for programs: scrubbed, paths as they are
            out.reader = Reader(paths=False)
        command: Callable[[argparse.Namespace], int] = args.command  # the subcommand's, set_defaults
        return command(args)
    except UsageError as exc:  # a command line it cannot read: one line, as every error (cli/usage.py)
        print(f"rienda: {error_line(exc)}", file=sys.stderr)
        return USAGE_EXIT
    except RiendaError as exc:
        print(f"rienda: {error_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C outside a run (listing, loading extensions)
        print("rienda: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - a system error or a bug: still one line
        print(f"rienda: {error_line(exc)}", file=sys.stderr)
        return 1
    finally:
        while _OPENED:
            _OPENED.pop().close()


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="rienda", description="Rienda: agents with JavaScript tools and hooks.")
    parser.add_argument("--home", help="the Rienda home (default: $RIENDA_HOME or ~/.rienda)")
    parser.add_argument("--version", action="version", version=f"rienda {__version__}")
    commands: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(required=True, metavar="COMMAND")  # type: ignore[assignment]  # its parsers are Parsers, which the commands' modules need not know

    run = commands.add_parser("run", help="run one prompt (from PROMPT or standard input)")
    run.add_argument("prompt", nargs="?", help="the prompt; read from standard input when absent")
    run.add_argument("--agent", default="default", help="the agent (default: default)")
    run.add_argument("--session", help="resume this session")
    run.add_argument("--model", help="override the agent's model (provider/model)")
    run.add_argument("--workdir", default=".", help="the workspace (default: the current directory)")
    run.add_argument("--max-turns", type=positive, metavar="N",
                     help="stop after N model turns without a final answer (default: the agent's "
                          "max_turns, else config.yaml's, else 50)")
    _confirm_options(run)
    run.add_argument("--json", action="store_true", help="print events as JSON Lines")
    run.add_argument("--record", metavar="FILE", help="keep the model's exchanges in FILE, answer from it what it holds")
    run.add_argument("--record-mode", metavar="MODE", help="auto (default), replay or live; else $RIENDA_RECORD_MODE")
    run.add_argument("-v", "--verbose", action="store_true", help="show every tool result whole (default: its "
                                                                   "first lines)")
    run.set_defaults(command=_run)

    chat = commands.add_parser("chat", help="talk with an agent turn after turn, in one session (/help in it lists "
                                            "the commands)",
                               description="Each line is a turn of one session; /COMMAND is a %rienda command "
                                           "(/use, /new, /resume, /tools, /help...). Ctrl-C stops a turn, Ctrl-D "
                                           "leaves. Lines may come from a pipe (no prompt; confirms cannot be asked).")
    started = chat.add_mutually_exclusive_group()
    started.add_argument("--agent", help="the agent (default: default)")
    started.add_argument("--resume", metavar="ID", help="continue this session (or last), with its agent")
    chat.add_argument("--model", help="override the agent's model (provider/model)")
    chat.add_argument("--workdir", default=".", help="the workspace (default: the current directory)")
    _confirm_options(chat)
    chat.set_defaults(command=_chat)

    demo = commands.add_parser("demo", help="run the documentation's example offline, in a home of its own, "
                                            "and register the Jupyter kernel")
    demo.add_argument("--no-kernel", action="store_true", help="do not register the Rienda Jupyter kernel")
    demo.set_defaults(command=_demo)

    for name, text in (("agents", "list agents, with diagnostics"), ("tools", "list tools, with diagnostics"),
                       ("hooks", "list hooks, with diagnostics"), ("sessions", "list sessions (oldest first), or remove them")):
        listed = commands.add_parser(name, help=text)
        listed.add_argument("--json", action="store_true", help="one JSON object a line (for programs), no table")
        listed.set_defaults(command=_listing(name))
    sessions = commands.choices["sessions"]
    sessions.add_argument("remove", nargs="*", metavar="rm ID", help="rm and the sessions to remove (or last), "
                                                                       "with their sub-agents' sessions")
    sessions.add_argument("--agent", help="only this agent's sessions")
    sessions.add_argument("--gate", nargs="?", const="", metavar="AGENT",
                          help="rienda gate's sessions instead (other agents' decided calls): all, or AGENT's "
                               "(claude-code, codex, gemini-cli, copilot-cli)")
    sessions.add_argument("-n", type=positive, metavar="N", help="only the newest N")
    sessions.add_argument("--prune", action="store_true",
                          help="remove the sessions whose run ended before the model answered")

    show = commands.add_parser("show", help="print a session")
    show.add_argument("session", nargs="?", default="last", help="the session id (default: last, the newest)")
    show.add_argument("--full", action="store_true", help="show every message and result whole (default: a "
                                                          "result's first lines)")
    show.set_defaults(command=_show)

    replay = commands.add_parser("replay", help="re-run a session's calls through a hook chain (no model)")
    replay.add_argument("session", nargs="?", default="last", help="the session id (default: last, the newest)")
    chosen = replay.add_mutually_exclusive_group()
    chosen.add_argument("--agent", help="use this agent's hooks (default: the session's agent)")
    chosen.add_argument("--hooks", help="use these hooks, comma-separated, in order ('' for none)")
    replay.add_argument("--run-tools", action="store_true", help="run the tools again instead of reusing results")
    replay.add_argument("--workdir", default=".", help="the workspace for tools and hooks")
    _confirm_options(replay)
    replay.add_argument("--json", action="store_true", help="print the report as JSON")
    replay.set_defaults(command=_replay)

    script = commands.add_parser("script", help="write a session as a scripted-model file")
    script.add_argument("session", nargs="?", default="last", help="the session id (default: last, the newest)")
    script.add_argument("-o", "--output", help="the file to write (default: standard output)")
    script.set_defaults(command=_script)

    call = commands.add_parser("call", help="run one tool and print its result")
    call.add_argument("tool", help="the tool's name")
    call.add_argument("arguments", nargs="?", default="{}", help="the arguments as a JSON object")
    call.add_argument("--workdir", default=".", help="the workspace (default: the current directory)")
    _confirm_options(call)
    call.set_defaults(command=_call)

    hook = commands.add_parser("hook", help="call one hook point with a payload and show what it did")
    hook.add_argument("name", help="the hook's name")
    hook.add_argument("point", help="the point, e.g. beforeToolExecute")
    hook.add_argument("payload", nargs="?", default="{}",
                      help="what the point receives, as JSON (afterToolExecute: {call, result}); fields left out "
                           "get what a run passes")
    hook.add_argument("--agent", default="default", help="ctx.agent (and the payload's defaults) from this agent")
    hook.add_argument("--session-id", help="ctx.session.id (default: a new id)")
    hook.add_argument("--workdir", default=".", help="ctx.workdir (default: the current directory)")
    _confirm_options(hook)
    hook.add_argument("--json", action="store_true", help="print the call as one JSON object")
    hook.set_defaults(command=_hook)

    for add in (add_compact_commands, add_gate_command):
        add(commands)
    for command in commands.choices.values():
        command.set_defaults(**{SUBCOMMAND: command})
    return parser


def _confirm_options(parser: argparse.ArgumentParser) -> None:
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("--confirm", choices=CONFIRM_POLICIES,
                        help="how ctx.confirm is answered: ask (a terminal is asked; else no), allow or deny "
                             "(default: $RIENDA_CONFIRM, else config.yaml's confirm, else ask)")
    chosen.add_argument("--yes", action="store_const", const="allow", dest="confirm",
                        help="the same as --confirm allow")


def _rienda(args: argparse.Namespace) -> Rienda:
    """The engine, once the paths given are checked: a problem is one line before any work."""
    from ..engine import Rienda

    rienda = Rienda(*_paths(args))
    _OPENED.append(rienda)
    return rienda


def _paths(args: argparse.Namespace) -> tuple[Path, Path]:
    """The home and the workdir the options name, checked (one line for a bad one)."""
    from ..engine import rienda_home

    home = rienda_home(args.home)
    if home.exists():
        check_folder(home, "--home" if args.home else "the Rienda home")
    workdir = check_folder(args.workdir, "--workdir") if hasattr(args, "workdir") else check_folder(".", "the current folder")
    return home, workdir


def _listing(name: str) -> Callable[[argparse.Namespace], int]:
    """The listing command ``name`` (:mod:`.listings`, imported when it runs) over the
    engine of ``--home``."""
    def list_them(args: argparse.Namespace) -> int:
        from . import listings

        shown = {"agents": listings.agents, "tools": listings.tools, "hooks": listings.hooks,
                 "sessions": listings.sessions}[name]
        return shown(_rienda(args), args)

    return list_them


def _policy(args: argparse.Namespace, rienda: Rienda) -> ConfirmPolicy:
    """--confirm / --yes, else $RIENDA_CONFIRM, else config.yaml's, else ask."""
    return rienda.confirm_policy(args.confirm)


def _terminal_stdin() -> IO[str] | None:
    return sys.stdin if sys.stdin is not None and sys.stdin.isatty() else None


def _run(args: argparse.Namespace) -> int:
    from ..engine import prewarm, rienda_home, warm_shared_sandbox

    if warm_shared_sandbox(rienda_home(args.home)):  # its first V8 worker boots while the rest imports
        prewarm("jsonschema")  # which checks the JavaScript tools' parameters, while that worker boots
    from ..engine import NoModelError, run_interruptibly
    from ..frontend.terminal import JsonLinesUI, TerminalUI, usage_summary

    rienda = _rienda(args)
    prompt = args.prompt if args.prompt is not None else _prompt_from_stdin()
    if not prompt.strip():
        raise RiendaError("no prompt: pass it as an argument or on standard input")
    stdin = _terminal_stdin() if args.prompt is not None else None
    ui = JsonLinesUI(_policy(args, rienda), stdin) if args.json else TerminalUI(_policy(args, rienda), stdin,
                                                                                 verbose=args.verbose)
    if args.record_mode and not args.record:
        raise ConfigError("--record-mode needs --record FILE: the recording it applies to")
    if args.record:  # --record-mode before $RIENDA_RECORD_MODE
        rienda.record(args.record, args.record_mode, mode_given_as="--record-mode", environment_first=False)
    conversation = rienda.conversation(args.agent, args.session, args.model, max_turns=args.max_turns)
    for warning in conversation.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    cancel = CancelToken()
    closed = sys.stdout  # closed (| head -1): the run stops as interrupted, on a thread of its own
    assert isinstance(closed, OutputStream)  # main() put it there
    closed.on_closed = lambda: threading.Thread(target=cancel.cancel, name="rienda-stop", daemon=True).start()
    result, stopped_by = run_interruptibly(lambda cancel: conversation.run(prompt, ui, cancel), cancel,
                                           signals=STOP_SIGNALS)
    conversation.close()
    if closed.closed_early:
        print(f"rienda: standard output was closed, so the run was stopped; session {result.session_id} kept "
              "what was produced", file=sys.stderr)
        return CLOSED_EXIT
    if result.reason == "interrupted" and not args.json:  # even before the first token: say why it ended
        print("rienda: interrupted", file=sys.stderr)
    if result.session_id and not args.json:
        usage = usage_summary([m.usage for m in result.messages if m.role == "assistant"], result.context, ui.replayed)
        print(f"session {result.session_id}" + (f" · {usage}" if usage else ""), file=sys.stderr)
    if isinstance(result.failure, NoModelError):
        return NO_MODEL_EXIT
    return 128 + stopped_by if stopped_by else EXIT[result.reason]


def _chat(args: argparse.Namespace) -> int:
    from .chat import start_chat

    return start_chat(*_paths(args), args.agent, args.model, args.resume, args.confirm)


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(kernel=not args.no_kernel)


def _prompt_from_stdin() -> str:
    if sys.stdin is None or sys.stdin.isatty():
        raise RiendaError("no prompt: pass it as an argument or on standard input")
    return repair(sys.stdin.read())  # bytes that are not UTF-8 are U+FFFD, as on the command line


def _show(args: argparse.Namespace) -> int:
    from ..frontend.show import context_line, print_session

    rienda = _rienda(args)
    loaded = rienda.load_session(args.session)
    return print_session(loaded, args.full, context_line(rienda, loaded))


def _replay(args: argparse.Namespace) -> int:
    from ..frontend.terminal import TerminalUI

    hooks = None if args.hooks is None else [name for name in args.hooks.split(",") if name.strip()]
    rienda = _rienda(args)
    ui = TerminalUI(_policy(args, rienda), None)
    report = rienda.replay(args.session, hooks=hooks, agent_id=args.agent, run_tools=args.run_tools, ui=ui)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False))  # scrubbed by the one OutputStream
    else:
        print("\n".join(report.lines()))
    return 1 if report.changed else 0


def _script(args: argparse.Namespace) -> int:
    if args.output:
        check_output_file(args.output, "-o")
    text = _rienda(args).script(args.session)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _call(args: argparse.Namespace) -> int:
    from ..engine import Interrupted, run_interruptibly
    from ..frontend.terminal import TerminalUI

    rienda = _rienda(args)
    ui = TerminalUI(_policy(args, rienda), None)
    tool = rienda.find_tool(args.tool, ui)

    def call(cancel: CancelToken) -> ToolResult | RiendaError | None:
        try:
            return rienda.call_tool(tool, args.arguments, ui, cancel)
        except Interrupted:
            return None
        except RiendaError as exc:  # no such tool...: said on this thread, as one line
            return exc

    result, stopped_by = run_interruptibly(call, signals=STOP_SIGNALS)
    if isinstance(result, RiendaError):
        raise result
    if stopped_by or result is None:
        print("rienda: interrupted", file=sys.stderr)
        return 128 + (stopped_by or signal.SIGINT)
    print(result.text)
    return 1 if result.is_error else 0


def _hook(args: argparse.Namespace) -> int:
    from ..engine import NonInteractiveUI
    from ..frontend.terminal import TerminalUI

    rienda = _rienda(args)
    invocation = rienda.hook_call(args.name, args.point, args.payload, agent_id=args.agent,
                                  session_id=args.session_id)
    if args.json:
        ui: FrontEnd = NonInteractiveUI(policy=_policy(args, rienda), record_events=False)
    else:  # ctx.log, notices and confirms show on stderr as they happen
        ui = TerminalUI(_policy(args, rienda), _terminal_stdin())
    call = invocation.run_interruptibly(ui)
    if call is None:
        print("rienda: interrupted", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(call.to_dict(), ensure_ascii=False))
    else:
        print("\n".join(call.lines(activity=False)))
    return 0 if call.ok else 1


if __name__ == "__main__":
    sys.exit(main())
