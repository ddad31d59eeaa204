"""The ``%rienda`` IPython extension's entry: ``%load_ext magics`` from a checkout.

Thin on purpose: everything lives in :mod:`rienda_kernel.jupyter`. The installed wheel
does not ship this package (it would claim the generic import name ``magics``);
``%load_ext rienda_kernel`` is the same extension everywhere.
"""

from rienda_kernel.jupyter.extension import load_ipython_extension

__all__ = ["load_ipython_extension"]
