"""Rienda: an agent runtime extended with JavaScript tools and hooks, at home in the notebook.

The engine lives in :mod:`rienda_kernel.engine`; this package adds the Jupyter kernel,
the ``rienda`` command, and the ``%rienda`` magics (``%load_ext rienda_kernel``).
"""

__version__ = "0.1.0"

# `%load_ext rienda_kernel`: the %rienda magics (their module imports IPython only when loaded).
from rienda_kernel.jupyter.extension import load_ipython_extension  # noqa: E402

__all__ = ["__version__", "load_ipython_extension"]
