"""What a V8 worker measures of itself to bound a job and to ask to be replaced."""

from __future__ import annotations

from rienda_kernel.engine.sandbox.worker_main import memory


def test_each_measure_reads_the_process_as_it_is_now():
    """The statm file is kept open and read anew each time: 64 MiB allocated between two
    measures show in both figures (private writable bytes and resident bytes)."""
    data, resident = memory()
    grown = bytearray(64 * 1024 * 1024)  # zero-filled: written, so resident too
    data_after, resident_after = memory()
    assert data_after - data >= 60 * 1024 * 1024
    assert resident_after - resident >= 60 * 1024 * 1024
    del grown
    assert memory()[0] < data_after
