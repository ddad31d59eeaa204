"""The ``rienda`` command: :mod:`.main` (arguments and subcommands), :mod:`.terminal` (how a
run shows in a terminal) and :mod:`.demo` (``rienda demo``)."""

from .main import main

__all__ = ["main"]
