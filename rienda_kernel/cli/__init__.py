"""The ``rienda`` command: :mod:`.main` (arguments and subcommands), :mod:`.chat` (``rienda
chat``), :mod:`.listings` (``agents``, ``tools``, ``hooks``, ``sessions``), :mod:`.compact`
(``compact``, ``pin``), :mod:`.gate` (``gate``) and :mod:`.demo` (``rienda demo``); a run
shows in the terminal through :mod:`rienda_kernel.frontend.terminal`."""

from .main import main

__all__ = ["main"]
