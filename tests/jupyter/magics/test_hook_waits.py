"""A hook that keeps a ``%rienda ask`` waiting, in a python3 kernel through jupyter_client:
the same status line and the same named stop as in the Rienda kernel."""

from __future__ import annotations

from ...helpers.cells import a_live_cell_names_the_hook_it_waits_on


def test_the_status_line_names_the_hook_and_an_interrupt_names_it_in_the_result(python_kernel):
    home, work, start = python_kernel
    a_live_cell_names_the_hook_it_waits_on(start(), home, work, "%rienda ask go", "TurnInterrupted")
