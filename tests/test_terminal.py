"""How ``rienda run`` shows events on a terminal, where stdout and stderr share the screen."""

from __future__ import annotations

import io

from rienda_kernel.engine.events import Notify, RunEnd, TextDelta
from rienda_kernel.frontend.terminal import TerminalUI


def test_the_answer_line_ends_before_any_activity_line_is_written():
    screen = io.StringIO()  # one screen for both streams, as in a terminal
    ui = TerminalUI("ask", None, out=screen, err=screen)
    for event in (TextDelta("notes.txt has"), TextDelta(" 27 words."),
                  Notify("hook:guard.afterRun", "rienda", "run finished: end_turn"), RunEnd("end_turn")):
        ui.emit(event)
    assert screen.getvalue() == ("notes.txt has 27 words.\n"
                                 "[hook:guard.afterRun] notice: rienda: run finished: end_turn\n")


def test_an_answer_with_nothing_after_it_still_ends_its_line():
    screen = io.StringIO()
    ui = TerminalUI("ask", None, out=screen, err=screen)
    ui.emit(TextDelta("done"))
    ui.emit(RunEnd("end_turn"))
    assert screen.getvalue() == "done\n"
