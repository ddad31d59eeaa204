"""A hook that keeps a cell waiting, in the Rienda kernel through jupyter_client: the
status line of a live cell says which hook runs (and goes back to "working…" once it
returned); an interrupt while it runs names it in the call's result."""

from __future__ import annotations

from ...helpers.cells import a_live_cell_names_the_hook_it_waits_on


def test_the_status_line_names_the_hook_and_an_interrupt_names_it_in_the_result(frontend_factory, home):
    agent_home, work = home
    a_live_cell_names_the_hook_it_waits_on(frontend_factory(), agent_home, work, "go", "KeyboardInterrupt")
