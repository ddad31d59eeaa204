"""Rienda: an agent runtime extended with JavaScript tools and hooks, at home in the notebook.

The engine lives in :mod:`rienda_kernel.engine`; this package adds the Jupyter kernel,
the ``rienda`` command, and the ``%rienda`` magics (``%load_ext rienda_kernel``).
"""

__version__ = "0.1.0"


def load_ipython_extension(ipython):
    """``%load_ext rienda_kernel``: register the %rienda magics."""
    from rienda_kernel.jupyter.extension import load_ipython_extension as load

    load(ipython)
