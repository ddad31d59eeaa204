"""The confirm race (jupyter/confirm.py's ``_Race``) at its seam: however many answers
arrive before the waiting turn reads one (a click racing a typed reply, two clicks), the
first one is the answer and every later one is refused."""

from __future__ import annotations

import threading

from rienda_kernel.engine import Answer, CancelToken
from rienda_kernel.jupyter.confirm import _Race

CLICK_ALLOW = Answer(True, "user", "buttons")
CLICK_DENY = Answer(False, "user", "buttons")
TYPED_NO = Answer(False, "user", "y/N")


def test_answers_that_arrive_before_the_turn_reads_one_the_first_wins():
    race = _Race(CancelToken())
    assert race.offer(CLICK_ALLOW) is True
    assert race.offer(TYPED_NO) is False and race.offer(CLICK_DENY) is False
    race.wait()  # the turn reads only now
    assert race.answer == CLICK_ALLOW


def test_answers_offered_at_the_same_moment_from_two_threads_exactly_one_wins():
    for _ in range(200):
        race = _Race(CancelToken())
        start = threading.Barrier(2)
        won: dict[str, bool] = {}

        def answer(name: str, value: Answer) -> None:
            start.wait()
            won[name] = race.offer(value)

        threads = [threading.Thread(target=answer, args=("click", CLICK_ALLOW)),
                   threading.Thread(target=answer, args=("typed", TYPED_NO))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert sorted(won.values()) == [False, True]
        race.wait()
        assert race.answer == (CLICK_ALLOW if won["click"] else TYPED_NO)


def test_a_waiting_turn_is_woken_by_the_first_answer_and_reads_it():
    race = _Race(CancelToken())
    read: list[Answer | None] = []
    waiting = threading.Thread(target=lambda: (race.wait(), read.append(race.answer)))
    waiting.start()
    race.offer(CLICK_DENY)
    race.offer(CLICK_ALLOW)
    waiting.join(10)
    assert read == [CLICK_DENY]
