"""The ``%rienda`` commands: one vocabulary for the Rienda kernel and the IPython magics.

A cell (or a line magic) whose first non-blank line starts with ``%rienda`` is a command::

    %rienda use reviewer        %rienda sessions        %rienda model scripted/demo.yaml
    %rienda new                 %rienda agents          %rienda confirm allow
    %rienda resume ID           %rienda tools / hooks   %rienda help
    %rienda show [ID]           %rienda compact [WHAT TO KEEP]      %rienda pin [N]
    %rienda record NAME [--mode auto|replay|live]

:func:`run_rienda_command` acts on a :class:`TurnSession` and returns a
:class:`CommandOutput` (plain text, optional Markdown, a Python value); a mistake is a
:class:`CommandError` whose message is meant to be shown without a traceback.
:func:`complete` answers a front end's completion request. Nothing here imports Jupyter:
``rienda chat`` offers the same table as ``/use reviewer`` (``prefix`` on the session says
how the front end spells a command).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..engine import CONFIRM_POLICIES, NonInteractiveUI, RiendaError, did_you_mean
from ..frontend.output import check_output_file, error_line
from .compaction import compact_command, context_command, pin_command, prompt_numbers
from .recording import RECORD_USAGE, record_command
from .session import TurnSession
from .listings import agents_listing, hooks_listing, session_shown, sessions_listing, tools_listing
from .tables import CommandOutput, escape

__all__ = ["CELL_OPTIONS", "PREFIX", "SUBCOMMANDS", "CellOption", "CommandError", "CommandOutput", "Subcommand", "after_prefix", "agent_names",
           "ask_prompt", "command_names", "help_output", "help_text", "is_command", "model_names", "run_rienda_command",
           "session_names", "subcommands"]

PREFIX = "%rienda"
RESET = "reset"


class CommandError(RiendaError):
    """A command that cannot be done; the message is short and for the user (no traceback)."""


@dataclass(frozen=True)
class Subcommand:
    """One word of the vocabulary, the one table that drives dispatch, help and completion.

    ``usage`` follows ``%rienda``; ``help`` is one sentence; ``run`` does it (None for
    ``ask``: a turn, which the front end runs); ``least``/``most`` bound its arguments;
    ``complete`` lists candidates for its first argument.
    """

    name: str
    usage: str
    help: str
    run: Callable[[TurnSession, list[str]], CommandOutput] | None
    least: int = 0
    most: int = 0
    complete: Callable[[TurnSession], list[str]] | None = None


CONFIRM_MEANINGS: dict[str | None, str] = {
    "ask": "ask in the notebook each time a tool asks for confirmation",
    "allow": "allow every confirmation without asking",
    "deny": "deny every confirmation without asking",
    None: "not set: ask when the front end can, deny otherwise",
}


# ---------------------------------------------------------------- recognising and parsing


def after_prefix(text: str) -> str | None:
    """``text`` after a leading ``%rienda`` (leading whitespace allowed), or None if it
    does not start with the word ``%rienda``."""
    stripped = text.lstrip()
    if not stripped.startswith(PREFIX):
        return None
    rest = stripped[len(PREFIX):]
    return rest if not rest or rest[0].isspace() else None


def is_command(code: str) -> bool:
    """True when the first non-blank line of ``code`` starts with the word ``%rienda``."""
    for line in code.splitlines():
        if line.strip():
            return after_prefix(line) is not None
    return False


def _words(line: str) -> list[str]:
    rest = after_prefix(line)
    text = line if rest is None else rest
    lines = [piece.strip() for piece in text.strip().splitlines()]
    if len(lines) > 1:
        raise CommandError(f"a {PREFIX} command is one line; put {lines[1][:40]!r} and what follows in another cell")
    head = text.split(None, 3)
    if head and head[0] == "hook":
        return head  # hook NAME POINT, then the payload as written (JSON is not shell words)
    if head and head[0] == "compact":
        return text.split(None, 1)  # compact, then the instructions as written (don't, "quoted")
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise CommandError(f"cannot read the command: {exc}") from None  # a typo, not a bug the kernel should log


def run_rienda_command(session: TurnSession, line: str) -> CommandOutput:
    """Run one ``%rienda`` command (``line`` with or without the leading ``%rienda``).

    Raises :class:`CommandError` for an unknown command, wrong arguments, ``ask`` (a turn:
    see :func:`ask_prompt`), or anything the engine refuses (an unknown agent or session,
    a bad model...), with its message; and for anything else that fails (a path that is
    not a folder, a bug), one line naming the command, with the exception as its cause.
    """
    words = _words(line)
    if not words:
        return help_output(session, [])
    sub, args = _subcommand(words[0]), words[1:]
    if sub.run is None:
        raise CommandError(f"{session.prefix}{sub.name} runs a turn; the front end runs it, not a command")
    if not sub.least <= len(args) <= sub.most:
        raise CommandError(f"usage: {session.prefix}{sub.usage}")
    try:
        return sub.run(session, args)
    except CommandError:
        raise
    except RiendaError as exc:
        raise CommandError(str(exc)) from exc
    except Exception as exc:  # noqa: BLE001 - a system error (a path), or a bug: still one line, naming the command
        raise CommandError(error_line(exc, f"{session.prefix}{sub.name}")) from exc


def ask_prompt(line: str) -> str | None:
    """The prompt of ``%rienda ask PROMPT`` (``line`` with or without ``%rienda``; the
    prompt may span lines), or None when ``line`` is another command. CommandError for
    ``ask`` without a prompt."""
    rest = after_prefix(line)
    text = (line if rest is None else rest).lstrip()
    word = text.split(maxsplit=1)[0] if text else ""
    if word != "ask":
        return None
    prompt = text[len(word):].strip()
    if not prompt:
        raise CommandError(f"usage: {PREFIX} {subcommands()['ask'].usage}")
    return prompt


ERROR_FLAG = "--error"
ERROR_QUESTION = "Why does this fail, and how do I fix it?"


def error_flag(prompt: str) -> tuple[str, bool]:
    """``ask --error [PROMPT]``: (the prompt, True); the prompt defaults to asking why the
    last error happened. Any other prompt: (it, False)."""
    if prompt != ERROR_FLAG and not re.match(rf"{ERROR_FLAG}\s", prompt):
        return prompt, False
    return prompt[len(ERROR_FLAG):].strip() or ERROR_QUESTION, True


def _subcommand(name: str) -> Subcommand:
    sub = subcommands().get(name)
    if sub is None:
        raise CommandError(_unknown(name))
    return sub


def subcommands() -> dict[str, Subcommand]:
    return {sub.name: sub for sub in SUBCOMMANDS}


def _unknown(name: str) -> str:
    names = [sub.name for sub in SUBCOMMANDS]
    return f"unknown command {name!r}{did_you_mean(name, names)}; try: {', '.join(names)}"


# ---------------------------------------------------------------- the commands


def _use(session: TurnSession, args: list[str]) -> CommandOutput:
    session.use(args[0])
    agent, diagnostics = session.rienda.agent(session.agent_id)
    model = session.model or agent.model_label
    lines = [f"Using agent {agent.id} (model {model}) in a new session."]
    lines += [f"warning: {d.message}" for d in diagnostics]
    return CommandOutput("\n".join(lines), value=agent)


def _new(session: TurnSession, args: list[str]) -> CommandOutput:
    session.new()
    return CommandOutput(f"New session with agent {session.agent_id}: the next prompt starts it.")


def _resume(session: TurnSession, args: list[str]) -> CommandOutput:
    conversation = session.resume(args[0])
    model, _ = _current_model(session)
    count = len(conversation.messages)
    lines = [f"Resumed session {conversation.session_id}: agent {conversation.agent_id}, model {model}, "
             f"{count} message{'' if count == 1 else 's'}."]
    lines += [f"warning: {warning}" for warning in conversation.warnings]
    return CommandOutput("\n".join(lines), value=conversation)


def _model(session: TurnSession, args: list[str]) -> CommandOutput:
    if args and args[0] == RESET:
        session.set_model(None)
        model, origin = _current_model(session)
        return CommandOutput(f"Model override cleared: using {model} ({origin}).", value=model)
    if args:
        session.set_model(args[0])
        return CommandOutput(f"Model: {args[0]}, instead of the agent's, from the next prompt on "
                             f"({session.prefix}model {RESET} goes back).", value=args[0])
    model, origin = _current_model(session)
    return CommandOutput(f"Model: {model} ({origin}).", value=model)


def _current_model(session: TurnSession) -> tuple[str, str]:
    """The model the next prompt uses, and where that comes from."""
    if session.model:
        return session.model, f"set with {session.prefix}model"
    if session.session_id is not None and session.conversation.model:
        return session.conversation.model, f"recorded in session {session.session_id}"
    try:
        agent, _ = session.rienda.agent(session.agent_id)
    except RiendaError as exc:
        return "unknown", f"agent {session.agent_id!r} cannot be loaded: {exc}"
    if not agent.model:
        return agent.model_label, ("from OPENAI_API_KEY, ANTHROPIC_API_KEY or a local Ollama server, "
                                   "unless default_model is set in config.yaml")
    return agent.model, f"agent {agent.id}'s model"


def _confirm(session: TurnSession, args: list[str]) -> CommandOutput:
    if args:
        value = args[0].lower()
        if value not in (*CONFIRM_POLICIES, RESET):
            hint = did_you_mean(value, [*CONFIRM_POLICIES, RESET])
            raise CommandError(f"confirm takes {', '.join(CONFIRM_POLICIES)} or {RESET}, got {args[0]!r}{hint}")
        session.set_confirm(None if value == RESET else value)
    policy = session.confirm_policy
    configured = session.turn_policy() if policy is None else None
    if configured not in (None, "ask"):
        text = f"Confirm policy: {configured}, from config.yaml's confirm ({CONFIRM_MEANINGS[configured]})."
    elif policy is None:
        text = f"Confirm policy {CONFIRM_MEANINGS[None]}."
    else:
        text = f"Confirm policy: {policy} ({CONFIRM_MEANINGS[policy]})."
    if not args:
        text += f"\nSet it with {session.prefix}confirm ask|allow|deny|reset; $RIENDA_CONFIRM sets it at start."
    return CommandOutput(text, value=policy)


def _script(session: TurnSession, args: list[str]) -> CommandOutput:
    path = check_output_file(session.rienda.workdir / args[1], f"{session.prefix}script:")
    session_id = session.rienda.resolve_session(args[0])
    path.write_text(session.rienda.script(session_id), encoding="utf-8")
    return CommandOutput(f"Wrote session {session_id} as a scripted model to {args[1]} "
                         f"(use it as model: scripted/{args[1]}).", value=path)


def _replay(session: TurnSession, args: list[str]) -> CommandOutput:
    session_id = session.rienda.resolve_session(args[0])
    report = session.rienda.replay(session_id, hooks=args[1:] or None)
    lines = report.lines()
    return CommandOutput("\n".join(lines), "\n".join(f"    {line}" for line in lines), value=report)


def _hook(session: TurnSession, args: list[str]) -> CommandOutput:
    invocation = session.rienda.hook_call(args[0], args[1], args[2] if len(args) > 2 else "{}",
                                          agent_id=session.agent_id, session_id=session.session_id)
    call = invocation.run_interruptibly(NonInteractiveUI(policy=session.turn_policy(), record_events=False))
    if call is None:
        raise CommandError(f"{args[0]}.{args[1]} was interrupted")
    lines = call.lines()
    return CommandOutput("\n".join(lines), "\n".join(f"    {line}" for line in lines), value=call)


def _home(session: TurnSession, args: list[str]) -> CommandOutput:
    if args:
        try:
            session.set_home(args[0])
        except RiendaError as exc:
            raise CommandError(f"{session.prefix}home: {exc}") from exc
        return CommandOutput(f"Using RIENDA_HOME {session.rienda.home} (a new session starts at the next prompt).",
                             value=session.rienda.home)
    return CommandOutput(f"RIENDA_HOME is {session.rienda.home}", value=session.rienda.home)


def help_output(session: TurnSession, args: list[str]) -> CommandOutput:
    """``help [COMMAND]``, spelled as ``session``'s front end spells a command."""
    return _help(session.prefix, args)


def _help(prefix: str, args: list[str]) -> CommandOutput:
    """All the commands' help, or ``args[0]``'s, each usage spelled with ``prefix``."""
    subs: Sequence[Subcommand] = (_subcommand(args[0]),) if args else SUBCOMMANDS
    width = max(len(sub.usage) for sub in subs) + len(prefix)
    lines = [f"{prefix}{sub.usage}".ljust(width) + f"  {sub.help}" for sub in subs]
    markdown = [f"- `{prefix}{sub.usage}`: {escape(sub.help)}" for sub in subs]
    if not args:
        lines.insert(0, "Rienda commands:")
        markdown.insert(0, "**Rienda commands**\n")
    return CommandOutput("\n".join(lines), "\n".join(markdown), value=list(subs))


def help_text(name: str | None = None) -> str:
    """The commands' help as plain text: all of them, or ``name``'s (CommandError if unknown)."""
    return _help(TurnSession.prefix, [name] if name else []).text


def agent_names(session: TurnSession) -> list[str]:
    return [agent.id for agent in session.rienda.agents()[0]]


def session_names(session: TurnSession) -> list[str]:
    """Saved session ids, newest first."""
    return [info.id for info in reversed(session.rienda.sessions())]


def model_names(session: TurnSession) -> list[str]:
    """``reset``, each provider's prefix, and the models the agents name."""
    return [RESET, *session.rienda.models()]


def hook_names(session: TurnSession) -> list[str]:
    return sorted(session.rienda.catalog().hooks)


def command_names(session: TurnSession) -> list[str]:
    return [sub.name for sub in SUBCOMMANDS]


@dataclass(frozen=True)
class CellOption:
    """One option of a ``%%rienda`` cell's first line (the magics): the one table that
    declares the cell magic's arguments and completes them."""

    flag: str
    help: str
    complete: Callable[[TurnSession], list[str]] | None = None
    switch: bool = False  # takes no value


CELL_OPTIONS: tuple[CellOption, ...] = (
    CellOption("--agent", "this cell's agent (cells naming it share one session of it)", agent_names),
    CellOption("--session", "continue this session (ID or last) for this cell", session_names),
    CellOption("--model", "this cell's model (provider/model)", model_names),
    CellOption("--error", "add the last cell's exception and traceback to the prompt", switch=True),
)


SUBCOMMANDS: tuple[Subcommand, ...] = (
    Subcommand("ask", "ask [--error] PROMPT", "Run PROMPT as one turn of the current agent (in a Python kernel, "
               "it returns a TurnResult; --error adds the last cell's exception and traceback).", None),
    Subcommand("use", "use AGENT", "Switch to AGENT in a new session.", _use, 1, 1, agent_names),
    Subcommand("new", "new", "Start a new session with the current agent (at the next prompt).", _new),
    Subcommand("resume", "resume ID|last", "Continue the saved session ID (last: the newest); its agent becomes "
               "the current one.", _resume, 1, 1, session_names),
    Subcommand("sessions", "sessions [gate]", "List the saved sessions, newest last (* marks the current one); gate: "
               "rienda gate's sessions instead (other agents' decided calls).", sessions_listing, 0, 1,
               lambda session: ["gate"]),
    Subcommand("show", "show [ID|last]", "Show a saved session as rienda show prints it (default: the current one).",
               session_shown, 0, 1, session_names),
    Subcommand("agents", "agents", "List the agents and what is wrong with any agent file (* marks the current "
               "one).", agents_listing),
    Subcommand("tools", "tools", "List the tools, built-in and yours, and what is wrong with any tool file.", tools_listing),
    Subcommand("hooks", "hooks", "List the hooks and their points, and what is wrong with any hook file.", hooks_listing),
    Subcommand("model", "model [PROVIDER/MODEL|reset]",
               "Show the model; use another one instead of the agent's; or go back to the agent's.", _model, 0, 1,
               model_names),
    Subcommand("confirm", "confirm [ask|allow|deny|reset]",
               "Show or set what happens when a tool asks for confirmation (ctx.confirm).", _confirm, 0, 1,
               lambda session: [*CONFIRM_POLICIES, RESET]),
    Subcommand("replay", "replay ID|last [HOOK ...]",
               "Re-run a session's calls through its agent's hooks (or these), without the model; show what differs.",
               _replay, 1, 64, session_names),
    Subcommand("script", "script ID|last FILE",
               "Write a session's model responses as a scripted-model file (a deterministic test of your hooks).",
               _script, 2, 2, session_names),
    Subcommand("hook", "hook NAME POINT [JSON]",
               "Call one hook point with a payload, as a run would; show what it returned, changed, logged and asked "
               "(confirms: yes with confirm allow, else no).", _hook, 2, 3, hook_names),
    Subcommand("compact", "compact [INSTRUCTIONS]",
               "Compact the session's context now, through its agent's beforeCompact/afterCompact hooks; "
               "INSTRUCTIONS tell the summary what to keep.", compact_command, 0, 1),
    Subcommand("pin", "pin [N]", "Keep prompt N (1 for the first; default the last) verbatim through every "
               "compaction.", pin_command, 0, 1, prompt_numbers),
    Subcommand("context", "context", "Say what fills the session's next request (system prompt, tools, pinned "
               "prompts, summary, messages) and what is left of the model's window.", context_command),
    Subcommand("record", RECORD_USAGE,
               "Keep the model's exchanges in NAME (beside the notebook) and answer from it what it holds, offline; "
               "hooks and tools still run (docs/recordings.md).", record_command, 0, 3),
    Subcommand("home", "home [PATH]",
               "Show RIENDA_HOME, or use another one (e.g. beside the notebook) in a new session.", _home, 0, 1),
    Subcommand("help", "help [COMMAND]", "List these commands, or show one.", help_output, 0, 1, command_names),
)
