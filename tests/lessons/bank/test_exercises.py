"""Lesson 01's measured exercise and its statuses.

Fixed answers are checked with every lesson's in tests/lessons/test_exercises.py.
"""

import pytest

from iolab import checks as core
from iolab.lessons.bank import exercises as ex

# The ticket bank's bound is 4 users / 0.2 s = 20 req/s: a loaded machine and the run's start
# take some of it, and the clock's rounding may add a little.
TICKET_RPS_AT_LEAST = 17
TICKET_RPS_AT_MOST = 20.5

pytestmark = pytest.mark.usefixtures("fresh_exercises")  # from conftest.py


def test_counter_work_inferred_from_the_article(capsys):
    assert ex.q5.check(None) == core.NOT_ATTEMPTED
    assert ex.q5.check(0.41) == core.CORRECT
    assert ex.q5.check(16.5) == core.INCORRECT
    assert "whole round" in capsys.readouterr().out
    assert ex.q5.check(25.4) == core.INCORRECT
    assert "time per request across all" in capsys.readouterr().out
    assert ex.q5.check(4) == core.INCORRECT and "too little" not in capsys.readouterr().out


def test_predict_then_measure_runs_the_ticket_bank(capsys):
    sizes = dict(requests=12, concurrency=4, delay_ms=200)
    assert ex.q6.check(4 / 0.2, **sizes) == core.CORRECT
    out = capsys.readouterr().out
    assert "you predicted 20 req/s, Tornado's /async-sleep measured" in out
    assert TICKET_RPS_AT_LEAST < ex.q6.measured <= TICKET_RPS_AT_MOST
    assert ex.q6.check(1 / 0.2, **sizes) == core.INCORRECT  # what one teller gives, the synchronous bank
    assert "too low" in capsys.readouterr().out


def test_statuses_lists_every_exercise_in_order():
    ex.q1.check(50)
    ex.q2.check("sync")
    assert ex.statuses() == {
        "q1": "correct",
        "q2": "incorrect",
        "q3": "not attempted",
        "q4": "not attempted",
        "q5": "not attempted",
        "q6": "not attempted",
    }

