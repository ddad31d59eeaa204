"""``python -m rienda_kernel install [...]`` installs the kernelspec; anything else starts the kernel."""

import sys

if len(sys.argv) > 1 and sys.argv[1] == "install":
    from .jupyter.install import main

    sys.exit(main(sys.argv[2:]))

from .jupyter.kernel import launch

launch()
