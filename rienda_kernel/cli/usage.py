"""How the ``rienda`` command reads its command line.

argparse does the reading; what it says of a mistake is said as every other error of the
command is: one line, ``rienda: …``, naming the value and what to do, exit status 2
(:data:`USAGE_EXIT`), never argparse's usage block:

- an unknown command or choice gets the closest one (``unknown command 'agnets' (did you
  mean 'agents'?)``, ``--confirm must be one of ask, allow, deny, got 'alow' (did you mean
  'allow'?)``);
- an unknown option gets the closest option of its command (``run has no option --agnet
  (did you mean --agent?)``), also when it comes before the command;
- a missing or malformed argument is named, and so is the ``--help`` that shows the usage.

A bare ``rienda`` is ``rienda --help`` (the help, exit 0). Every text of the command line
is repaired as a prompt is (:func:`rienda_kernel.engine.repair`: bytes that are not UTF-8,
which Python keeps as lone surrogates, become U+FFFD), but the paths (:data:`PATH_OPTIONS`),
which name a file as the system spells it, bytes and all.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from collections.abc import Iterable, Sequence
from typing import NoReturn

from ..engine import RiendaError, did_you_mean, repair

__all__ = ["PATH_OPTIONS", "USAGE_EXIT", "Parser", "UsageError", "lenient_stdin", "parse", "positive"]

USAGE_EXIT = 2  # what a command line rienda cannot read exits with (argparse's, and the shells' convention)
PATH_OPTIONS = ("home", "workdir", "output")  # kept as the system gave them (not repaired)
SUBCOMMAND = "subcommand"  # the namespace attribute each command's parser sets to itself


class UsageError(RiendaError):
    """A command line the ``rienda`` command cannot read; its message is the one line."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose mistakes are :class:`UsageError` (see the module docstring);
    its subparsers are made of the same class."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(_said(self, message))

    def _check_value(self, action: argparse.Action, value: object) -> None:
        """An unknown choice (or command), with the closest one."""
        choices = action.choices
        if choices is None or value in choices:
            return
        names = [str(choice) for choice in choices]
        hint = did_you_mean(value, names)
        if action.metavar == "COMMAND":
            raise argparse.ArgumentError(action, f"unknown command {value!r}{hint}")
        raise argparse.ArgumentError(action, f"must be one of {', '.join(names)}, got {value!r}{hint}")


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """``argv`` (default: the process's) read by ``parser``, whose commands' parsers each set
    :data:`SUBCOMMAND` to themselves; texts repaired, paths as given (see the module
    docstring). :class:`UsageError` for a mistake; a bare command line prints the help and
    exits 0 (SystemExit, as ``--help`` does)."""
    given = list(sys.argv[1:] if argv is None else argv) or ["--help"]
    text = [repair(word) for word in given]
    _check_leading_options(parser, text)
    args = _parsed(parser, text)
    if text != given:  # bytes that are not UTF-8: a path keeps them, it names a file as the system spells it
        raw = _parsed(parser, given)
        for name in PATH_OPTIONS:
            if hasattr(raw, name):
                setattr(args, name, getattr(raw, name))
    return args


def _parsed(parser: argparse.ArgumentParser, words: list[str]) -> argparse.Namespace:
    args, extra = parser.parse_known_args(words)
    if extra:
        command = getattr(args, SUBCOMMAND, None)
        raise UsageError(_unexpected(command if isinstance(command, argparse.ArgumentParser) else parser, extra))
    return args


def _unexpected(parser: argparse.ArgumentParser, extra: list[str]) -> str:
    """The first word ``parser`` did not take: an unknown option (with the closest of its
    options), else an argument too many."""
    command = _command_name(parser)
    option = next((word for word in extra if word.startswith("-") and word != "-"), None)
    if option is not None:
        name = option.split("=", 1)[0]
        hint = _option_hint(name, _options(parser))
        return f"{command or 'rienda itself'} has no option {name}{hint}; {_help(command)} lists its options"
    where = f"{command}: " if command else ""
    return (f"{where}unexpected argument {extra[0]!r} (an argument with spaces in it goes in quotes); "
            f"{_help(command)} shows the usage")


def _check_leading_options(parser: argparse.ArgumentParser, words: list[str]) -> None:
    """An option before the command that is not ``rienda``'s own: a command's option put
    first (``rienda --agent x run``), or a typo; UsageError with the closest option."""
    own = _options(parser)
    takes_value = {option for action in parser._actions if action.nargs != 0  # noqa: SLF001 - argparse lists no options publicly
                   for option in action.option_strings}
    index = 0
    while index < len(words) and words[index].startswith("-") and words[index] not in ("-", "--"):
        name, has_value = words[index].split("=", 1)[0], "=" in words[index]
        if not any(option.startswith(name) for option in own):  # argparse takes a prefix of an option
            everywhere = sorted({*own, *(option for command in _commands(parser) for option in _options(command))})
            hint = _option_hint(name, everywhere)
            raise UsageError(f"{name} is not an option of rienda itself{hint}; a command's options go after "
                             "the command (rienda COMMAND --help lists them)")
        index += 1 if has_value or name not in takes_value else 2


def _commands(parser: argparse.ArgumentParser) -> Iterable[argparse.ArgumentParser]:
    for action in parser._actions:  # noqa: SLF001 - argparse lists no subparsers publicly
        if isinstance(action.choices, dict):
            yield from (command for command in action.choices.values() if isinstance(command, argparse.ArgumentParser))


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return [option for action in parser._actions for option in action.option_strings]  # noqa: SLF001


def _command_name(parser: argparse.ArgumentParser) -> str:
    """``pin`` for ``rienda pin``'s parser, "" for ``rienda``'s own."""
    return parser.prog.partition(" ")[2]


def _help(command: str) -> str:
    return f"rienda {command} --help" if command else "rienda --help"


_ARGUMENT = re.compile(r"argument (?P<name>\S+?): (?P<detail>.*)", re.S)


def _said(parser: argparse.ArgumentParser, message: str) -> str:
    """argparse's ``message`` about ``parser``'s command line as one line for a person."""
    command = _command_name(parser)
    where = f"{command}: " if command else ""
    found = _ARGUMENT.fullmatch(message)
    if found is None:
        missing = message.removeprefix("the following arguments are required: ")
        text = f"missing {missing}" if missing != message else message
        return f"{where}{text}; {_help(command)} shows the usage"
    name, detail = max(found["name"].split("/"), key=len), found["detail"]  # -v/--verbose: --verbose
    if name == "COMMAND":
        return f"{detail}; rienda --help lists the commands"
    if detail == "expected one argument":
        detail = "needs a value"
    elif detail.startswith("not allowed with argument "):
        other = max(detail.removeprefix("not allowed with argument ").split("/"), key=len)
        detail = f"cannot go with {other}"
    elif (number := re.fullmatch(r"invalid (int|float) value: (.*)", detail)) is not None:
        detail = f"must be a {'whole ' if number[1] == 'int' else ''}number, got {number[2]}"
    return f"{where}{name} {detail}; {_help(command)} shows the usage"


def lenient_stdin() -> None:
    """Standard input read as the command line is: bytes that are not UTF-8 come as lone
    surrogates, for :func:`rienda_kernel.engine.repair` to make U+FFFD, whatever error
    handler the locale set (a strict one would fail on them)."""
    if isinstance(sys.stdin, io.TextIOWrapper):
        sys.stdin.reconfigure(errors="surrogateescape")


def positive(text: str) -> int:
    """An option's value that must be a positive whole number (``-n``, ``--max-turns``)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text!r}")
    return value


def _option_hint(name: str, options: Iterable[str]) -> str:
    """Did you mean the option closest to ``name``, their dashes aside (``--bogus`` is not
    close to ``--user`` for sharing ``--``)."""
    bare = {option.lstrip("-"): option for option in options}
    return did_you_mean(name.lstrip("-"), bare, shown=lambda found: bare[found])
