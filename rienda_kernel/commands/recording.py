"""``record``: a notebook's (or ``rienda chat``'s) model exchanges kept in a file beside it
and answered from it on later runs (:mod:`rienda_kernel.engine` ``Rienda.record``).

    %rienda record NAME [--mode auto|replay|live]     open NAME (relative to the notebook's folder)
    %rienda record                                    what is being recorded
    %rienda record --stop                             ask the model directly again

``$RIENDA_RECORD_MODE`` wins over ``--mode``, so CI can force ``replay`` on every notebook
unedited.
"""

from __future__ import annotations

from ..engine import RiendaError
from .session import TurnSession
from .tables import CommandOutput

__all__ = ["RECORD_USAGE", "record_command"]

RECORD_USAGE = "record [NAME [--mode auto|replay|live] | --stop]"


def record_command(session: TurnSession, args: list[str]) -> CommandOutput:
    """Open, show or stop the recording of ``session``'s engine (see the module docstring)."""
    rienda = session.rienda
    if not args:
        recording = rienda.recording
        if recording is None:
            return CommandOutput(f"Nothing is recorded: {session.prefix}record NAME keeps the model's exchanges "
                                 "in NAME and answers from it on later runs.")
        return CommandOutput(recording.describe(), value=recording)
    if args == ["--stop"]:
        stopped = rienda.stop_recording()
        text = f"Stopped recording {stopped.name}." if stopped else "Nothing was being recorded."
        return CommandOutput(text, value=stopped)
    name, mode = _arguments(session, args)
    recording = rienda.record(name, mode, mode_given_as=f"{session.prefix}record --mode", environment_first=True)
    # The same words in every mode and whatever the file holds, so a notebook re-run from its
    # recording (or forced to replay in CI) shows what it showed when it was recorded.
    return CommandOutput(f"Recording {name}: the model's answers are kept there and given again from it "
                         f"({session.prefix}record shows the mode).", value=recording)


def _arguments(session: TurnSession, args: list[str]) -> tuple[str, str | None]:
    """NAME and the ``--mode`` given, if any; a usage error for anything else."""
    usage = RiendaError(f"usage: {session.prefix}{RECORD_USAGE}")
    words = list(args)
    mode = None
    for index, word in enumerate(words):
        if word.startswith("--mode="):
            mode = word.split("=", 1)[1]
            del words[index]
            break
        if word == "--mode":
            if index + 1 >= len(words):
                raise usage
            mode = words[index + 1]
            del words[index:index + 2]
            break
    if len(words) != 1 or words[0].startswith("--"):
        raise usage
    return words[0], mode
