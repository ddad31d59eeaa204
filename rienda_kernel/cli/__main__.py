"""``python -m rienda_kernel.cli``: the ``rienda`` command."""

import sys

from .main import main

sys.exit(main())
