"""The Jupyter front ends: the only package that imports IPython, ipykernel, ipywidgets,
jupyter_client, comm or zmq.

The Rienda kernel (:mod:`.kernel`), the ``%rienda`` magics for any IPython kernel
(:mod:`.extension`, :mod:`.magics`), and what both share: a cell's output channel
(:mod:`.cell`), the live display of a run (:mod:`.display`, a sub-agent's nested in it by
:mod:`.nested`), confirm buttons
(:mod:`.confirm`), the completion of the ``%rienda`` commands, and the kernelspec installer
(:mod:`.install`). The commands and the session state they act on are shared with
``rienda chat``: :mod:`rienda_kernel.commands`.
"""
