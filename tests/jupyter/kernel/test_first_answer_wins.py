"""The README's promise "the first answer wins", with two answers arriving before the turn
reads one: two clicks sent back to back while the turn waits on its y/N prompt too (a page
whose views report late), through a real kernel. The seam itself is tested in
tests/jupyter/test_confirm_race.py."""

from __future__ import annotations

from ...helpers.frontend import BackgroundTab, buttons, records, texts
from .test_confirm import started, until_buttons


def test_two_clicks_before_the_turn_reads_one_the_first_wins(frontend_factory, home):
    fe = started(frontend_factory, home, BackgroundTab)
    msg_id = fe.submit("publish", allow_stdin=True)
    fe.input_request()  # the turn now waits on its prompt too, reading the stdin socket between polls
    found = buttons(fe.collect(msg_id, until=until_buttons))
    fe.click(found["Allow"])
    fe.click(found["Deny"])  # the kernel handles it right after the first, before the turn looks again
    messages = fe.collect(msg_id)
    assert any("pushed" in text for text in texts(messages))
    assert [r["text/plain"].split(";")[0] for r in records(messages)] == ["✓ Publish: allowed (answered with the buttons)"]
