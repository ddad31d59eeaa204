"""The Jupyter front ends: the only package that imports IPython, ipykernel, ipywidgets,
jupyter_client, comm or zmq.

The Rienda kernel (:mod:`.kernel`), the ``%rienda`` magics for any IPython kernel
(:mod:`.extension`, :mod:`.magics`, the main thread kept serving the kernel by :mod:`.pump`;
a turn's :mod:`.result`), and what both share: a cell's output channel (:mod:`.cell`), one
turn for one cell (:mod:`.turns`), the live display of a run (:mod:`.display`, made of
:mod:`.views`, a sub-agent's nested in it by :mod:`.nested`), confirm buttons
(:mod:`.confirm`), the shell's namespace and a turn's errors (:mod:`.notebook`), the
completion of the ``%rienda`` commands (:mod:`.completion`), and the kernelspec installer
(:mod:`.install`). The commands and the session state they act on are shared with
``rienda chat``: :mod:`rienda_kernel.commands`.
"""
