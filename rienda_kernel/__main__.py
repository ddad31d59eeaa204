"""``python -m rienda_kernel install [...]`` installs the kernelspec; ``--help`` and
``--version`` say what this entry is; anything else starts the kernel (as kernel.json does)."""

import sys

from . import __version__

USAGE = f"""\
usage: python -m rienda_kernel install [--user | --sys-prefix | --prefix PREFIX] [--confirm POLICY]
       python -m rienda_kernel -f CONNECTION_FILE

The Rienda Jupyter kernel (rienda {__version__}). `install` registers it with Jupyter;
with a connection file it starts the kernel, as Jupyter does from kernel.json.
The rienda command runs agents from a terminal: rienda --help.
"""

if len(sys.argv) > 1 and sys.argv[1] == "install":
    from .jupyter.install import main

    sys.exit(main(sys.argv[2:]))
if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help", "help"):
    sys.stdout.write(USAGE)
    sys.exit(0)
if len(sys.argv) > 1 and sys.argv[1] == "--version":
    sys.stdout.write(f"rienda {__version__}\n")
    sys.exit(0)

from .jupyter.kernel import launch

launch()
