"""Lesson 07's exercises: each right, wrong and missing, and the wrong answers its checkers must not let through."""

import pytest

from iolab.lessons.c10k import exercises as ex
from iolab.lessons.c10k import limits, scene

pytestmark = pytest.mark.usefixtures("fresh_exercises")  # from conftest.py

# Every exercise: (exercise, what the notebook passes to check(), a right answer, a wrong one, words of its reason).
EVERY_EXERCISE = [
    (ex.q1, {}, 20_000, 10_000, "counts one end"),
    (ex.q2, {}, "vsz", "rss", "RSS counts only pages written to"),
    (ex.q3, {"measured_mb": 310.0}, 40.0 + 10_000 * 28.0 / 1024, 40.0, "base + N × slope"),
    (ex.q4, {}, "less", "about the same", "only the thread server adds a thread"),
    (ex.q5, {}, "flat", "grows in proportion to N", "select() and poll()"),
    (ex.q6, {}, limits.ports_per_source(), limits.ports_per_source() - 1, "the range is inclusive"),
    (ex.q7, {}, "1 s", "0.5 s", "its SYN was dropped"),
    (ex.q8, {}, "the bystander", "the server", "scores every process in the group"),
    (ex.q8, {}, "the bystander", "both at once", "then looks again"),
    (ex.q9, {"measured_s": 3.1, "timeout_s": 2}, 1000 / 333.0, 2, "wrk's --timeout"),
]


def test_statuses_name_every_exercise_in_the_order_the_notebook_asks_them():
    assert list(ex.statuses()) == [f"q{n}" for n in range(1, 10)]


@pytest.mark.parametrize("exercise, context, right, wrong, reason", EVERY_EXERCISE,
                         ids=["q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8-server", "q8-both", "q9"])
def test_every_exercise_right_wrong_and_missing(exercise, context, right, wrong, reason, capsys):
    assert exercise.check(None, **context) == "not attempted"
    assert exercise.check(wrong, **context) == "incorrect"
    assert reason in capsys.readouterr().out
    assert exercise.check(right, **context) == "correct"


# q3: the lesson asserts ThreadServerRss.holds(predicted, measured); the exercise must agree with it on every run.
@pytest.mark.parametrize("measured_over_predicted", [0.8, 0.9, 1.0, 1.2, 1.33])
def test_the_rss_formula_is_never_marked_wrong_on_a_run_whose_assertion_passes(measured_over_predicted):
    base_mb, slope_kb, n = 40.0, 28.0, 10_000
    predicted = base_mb + n * slope_kb / 1024
    measured = predicted * measured_over_predicted
    assert ex.ThreadServerRss.holds(predicted, measured)
    assert ex.q3.check(predicted, measured_mb=measured) == "correct"


@pytest.mark.parametrize("measured_over_predicted", [0.7, 1.4])
def test_the_rss_formula_fails_both_the_assertion_and_the_exercise_together(measured_over_predicted):
    predicted = 300.0
    measured = predicted * measured_over_predicted
    assert not ex.ThreadServerRss.holds(predicted, measured)
    assert ex.q3.check(predicted, measured_mb=measured) == "incorrect"


def test_the_rss_prediction_that_forgets_the_units_is_rejected():
    base_mb, slope_kb, n = 40.0, 28.0, 10_000
    measured = base_mb + n * slope_kb / 1024
    assert ex.q3.check(base_mb + n * slope_kb, measured_mb=measured) == "incorrect"  # KiB taken for MiB


# q9: every accepted wrk timeout (1 to 30 s) and connections (10 to 5,000): the scene waits at least 1.5 × the
# timeout, and the lesson asserts that most of the lab client's requests wait past the timeout.
@pytest.mark.parametrize("connections, timeout_s", [(10, 1), (1000, 2), (5000, 1), (5000, 30), (10, 30)])
def test_wrks_timeout_is_rejected_and_littles_law_accepted(connections, timeout_s, capsys):
    wait_ms = scene.handler_wait_ms(connections, workers=4, timeout_s=timeout_s)
    designed_s = connections * wait_ms / 4 / 1000  # C / X with X = W / Z
    for median_s in (designed_s, 1.1 * designed_s, 0.9 * designed_s):  # the lab's median, a little either side
        assert ex.q9.check(timeout_s, measured_s=median_s, timeout_s=timeout_s) == "incorrect"
        assert "wrk's --timeout" in capsys.readouterr().out
        assert ex.q9.check(designed_s, measured_s=median_s, timeout_s=timeout_s) == "correct"


def test_the_timeout_is_rejected_even_on_a_run_that_barely_passed():
    # The lesson asserts only that at least half the lab's requests waited past the timeout: median ≥ timeout.
    assert ex.q9.check(2, measured_s=2.3, timeout_s=2) == "incorrect"
    assert ex.q9.check(2.5, measured_s=2.3, timeout_s=2) == "correct"
