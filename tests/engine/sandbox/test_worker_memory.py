"""What a V8 worker measures of itself to bound a job and to ask to be replaced."""

from __future__ import annotations

import subprocess
import sys

MEASURES = """
from rienda_kernel.engine.sandbox.worker_main import memory
data, resident = memory()
grown = bytearray(64 * 1024 * 1024)  # zero-filled: written, so resident too
data_after, resident_after = memory()
assert data_after - data >= 60 * 1024 * 1024, (data, data_after)
assert resident_after - resident >= 60 * 1024 * 1024, (resident, resident_after)
del grown
assert memory()[0] < data_after
"""


def test_each_measure_reads_the_process_as_it_is_now():
    """The statm file is kept open and read anew each time: 64 MiB allocated between two
    measures show in both figures (private writable bytes and resident bytes). Measured in
    a process of its own, as a worker measures itself: in the suite's process another
    thread ending (its stack unmapped) or allocating meanwhile moves the same figures."""
    done = subprocess.run([sys.executable, "-c", MEASURES], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
