"""The ``rienda`` command: :mod:`.main` (arguments and subcommands) and :mod:`.demo`
(``rienda demo``); a run shows in the terminal through :mod:`rienda_kernel.frontend.terminal`."""

from .main import main

__all__ = ["main"]
