"""Lesson 08's exercises: each accepts its right answer, explains a wrong one, and notices a missing one."""

import pytest

from iolab.lessons.pipelining import exercises as ex

pytestmark = pytest.mark.usefixtures("fresh_exercises")  # from conftest.py

# (exercise, what check() is given besides the answer, right, wrong, words the wrong answer's reason must contain)
CASES = [
    (ex.q1, {"measured": 0.13}, 2 / 16, 1 / 16 + 2, "too high"),
    (ex.q1, {"measured": None}, 0.125, 2.0, "Count per batch"),
    (ex.q2, {}, 1, 1 / 16, "batched server's figure"),
    (ex.q3, {"demand_us": 2.5}, 400_000, 800_000, "one core"),
    (ex.q4, {"last_ms": 305.0}, 300, 2100, "may not leave before"),
    (ex.q5, {}, "multiplexing", "more connections", "six per host"),
    (ex.q6, {"per_request_us": 2.0, "per_batch_us": 0.8}, 2.5, 0.4, "compare the two ceilings"),
]


@pytest.mark.parametrize("exercise, context, right, wrong, reason", CASES, ids=lambda v: getattr(v, "name", None))
def test_right_wrong_and_missing(exercise, context, right, wrong, reason, capsys):
    assert exercise.check(None, **context) == "not attempted"
    assert exercise.check(wrong, **context) == "incorrect"
    assert reason in capsys.readouterr().out
    assert exercise.check(right, **context) == "correct"
    exercise.hint()
    exercise.solution()
    assert "Solution" in capsys.readouterr().out


def test_a_loaded_machine_still_accepts_the_design_figure():
    # Pinned to one core, fewer connections share each epoll_wait: up to 3 calls per batch of 16.
    assert ex.q1.check(2 / 16, measured=3 / 16) == "correct"


def test_statuses_name_every_exercise_in_order():
    assert list(ex.statuses()) == ["q1", "q2", "q3", "q4", "q5", "q6"]
