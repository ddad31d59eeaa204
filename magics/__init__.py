"""The ``%rienda`` IPython extension: ``%load_ext magics`` or ``%load_ext rienda_kernel``."""

from __future__ import annotations

from typing import Any

__all__ = ["load_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """Register %rienda, %%rienda, %%rienda_tool and %%rienda_hook in this shell.

    Importing ipywidgets here registers the widget comm targets, so a front end that
    connects (or reconnects) from now on can announce that it renders widgets; before
    that, confirms fall back to a y/N input request when the front end allows stdin.
    """
    import ipywidgets  # noqa: F401

    from .rienda_magics import RiendaMagics, keep_questions

    ipython.register_magics(RiendaMagics)
    if keep_questions not in ipython.input_transformers_cleanup:
        ipython.input_transformers_cleanup.append(keep_questions)
