"""Lesson 04's measured exercises and its statuses (fixed answers are checked with every lesson's in test_lesson_checks.py)."""

import pytest

from iolab import checks as core
from iolab.lessons.io_models import exercises as ex

pytestmark = pytest.mark.usefixtures("fresh_exercises")  # from conftest.py


@pytest.mark.parametrize("exercise, measured", [(ex.q3, 150.0), (ex.q4, 140.0)])
def test_predictions_against_a_stand_in_measurement(exercise, measured, monkeypatch, capsys):
    monkeypatch.setattr(exercise, "measure", lambda **context: measured)
    assert exercise.check(150, delay_ms=150) == core.CORRECT
    assert exercise.check(600, delay_ms=150) == core.INCORRECT  # four delays: the waits do not add up
    assert "too high" in capsys.readouterr().out
    assert exercise.check(...) == core.NOT_ATTEMPTED


def test_predictions_measure_the_real_programs():
    assert 95 <= ex.q3.measure(delay_ms=100) <= 160  # the multiplexed wait is about one delay
    assert 80 <= ex.q4.measure(delay_ms=100) <= 160  # the busy loop wants a CPU for about the wait


def test_statuses_for_the_results_file():
    ex.q1.check("copy")
    ex.q2.check(7)
    assert ex.statuses() == {"q1": "correct", "q2": "incorrect", "q3": "not attempted", "q4": "not attempted"}
