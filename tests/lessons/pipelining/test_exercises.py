"""Lesson 08's exercises beyond their fixed answers (checked with every lesson's in tests/lessons/test_exercises.py)."""

import pytest

from iolab.lessons.pipelining import exercises as ex

pytestmark = pytest.mark.usefixtures("fresh_exercises")  # from conftest.py


def test_a_loaded_machine_still_accepts_the_design_figure():
    # Pinned to one core, fewer connections share each epoll_wait: up to 3 calls per batch of 16.
    assert ex.q1.check(2 / 16, measured=3 / 16) == "correct"


def test_statuses_name_every_exercise_in_order():
    assert list(ex.statuses()) == ["q1", "q2", "q3", "q4", "q5", "q6"]
