"""``%rienda record`` (and ``/record``) as the command table runs it, on a real engine: its
usage, its status, ``--stop``, and the recording kept when ``%rienda home`` changes home."""

from __future__ import annotations

import pytest

from rienda_kernel.commands.session import TurnSession
from rienda_kernel.commands.vocabulary import CommandError, run_rienda_command


@pytest.fixture
def nb(tmp_path, monkeypatch):
    monkeypatch.delenv("RIENDA_RECORD_MODE", raising=False)
    (tmp_path / "home").mkdir()
    session = TurnSession(home=tmp_path / "home", workdir=tmp_path)
    yield session
    session.close()


def test_record_opens_shows_and_stops(nb, tmp_path):
    assert run_rienda_command(nb, "%rienda record").text.startswith("Nothing is recorded: %rienda record NAME")
    opened = run_rienda_command(nb, "%rienda record talk.rec.jsonl --mode live")
    assert opened.text == ("Recording talk.rec.jsonl: the model's answers are kept there and given again from it "
                           "(%rienda record shows the mode).")
    assert nb.rienda.recording.path == tmp_path / "talk.rec.jsonl"
    assert run_rienda_command(nb, "%rienda record").text == (
        "Recording talk.rec.jsonl (mode live: the model is always asked, and the file rewritten with this run's "
        "exchanges); it holds 0 exchanges.")
    nb.set_home(tmp_path / "other-home")  # %rienda home: the notebook's recording goes on
    assert nb.rienda.recording is opened.value
    assert run_rienda_command(nb, "%rienda record --stop").text == "Stopped recording talk.rec.jsonl."
    assert nb.rienda.recording is None


@pytest.mark.parametrize("line", ["%rienda record --mode", "%rienda record a b", "%rienda record --mode auto",
                                  "%rienda record --stp"])
def test_record_usage_mistakes_are_one_line(nb, line):
    with pytest.raises(CommandError, match=r"^usage: %rienda record \[NAME \[--mode auto\|replay\|live\] \| --stop\]$"):
        run_rienda_command(nb, line)


def test_a_mode_that_is_not_one_names_the_option(nb):
    with pytest.raises(CommandError, match=r"^%rienda record --mode: 'replai' is not a recording mode"):
        run_rienda_command(nb, "%rienda record x.jsonl --mode replai")
