"""The ``%rienda`` IPython extension: ``%load_ext magics`` or ``%load_ext rienda_kernel``."""

from __future__ import annotations

from typing import Any

__all__ = ["load_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """Register %rienda, %%rienda, %%rienda_tool and %%rienda_hook in this shell."""
    from .rienda_magics import RiendaMagics

    ipython.register_magics(RiendaMagics)
