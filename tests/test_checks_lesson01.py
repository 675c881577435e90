"""Lesson 01's exercises accept the right answer, explain a wrong one and notice a missing one."""

import pytest

from iolab.checks import core, lesson01 as ex

RIGHT_AND_WRONG = [
    (ex.q1, 50, 2, "is what one teller gives"),
    (ex.q1, 49, 12.5, "customers times seconds is not a rate"),
    (ex.q4, 40, 4, "give 4 req/s"),
    (ex.q4, 40, 41, "more tellers than customers"),
    (ex.q3, 40, 1, "the teller's time with each customer"),
    (ex.q3, 39.5, 200, "all 200 customers"),
    (ex.q2, "ticket", "threaded", "stays at 4 per second"),
    (ex.q2, "Ticket", "all", "limited by its tellers"),
]


@pytest.fixture(autouse=True)
def fresh_exercises():
    for exercise in (ex.q1, ex.q4, ex.q5, ex.q3, ex.q2):
        exercise.reset()


@pytest.mark.parametrize("exercise, right, wrong, reason", RIGHT_AND_WRONG)
def test_right_answer_is_correct(exercise, right, wrong, reason):
    assert exercise.check(right) == core.CORRECT


@pytest.mark.parametrize("exercise, right, wrong, reason", RIGHT_AND_WRONG)
def test_wrong_answer_teaches(exercise, right, wrong, reason, capsys):
    assert exercise.check(wrong) == core.INCORRECT
    assert reason in capsys.readouterr().out


@pytest.mark.parametrize("exercise", [ex.q1, ex.q4, ex.q5, ex.q3, ex.q2])
@pytest.mark.parametrize("missing", [None, ...])
def test_missing_answer_is_not_attempted(exercise, missing, capsys):
    assert exercise.check(missing) == core.NOT_ATTEMPTED
    assert capsys.readouterr().out.startswith("Not attempted")


def test_predict_then_measure_runs_the_ticket_bank(capsys):
    sizes = dict(requests=12, concurrency=4, delay_ms=200)
    assert ex.q5.check(4 / 0.2, **sizes) == core.CORRECT
    out = capsys.readouterr().out
    assert "you predicted 20 req/s, Tornado's /async-sleep measured" in out
    assert 17 < ex.q5.measured <= 20.5
    assert ex.q5.check(1 / 0.2, **sizes) == core.INCORRECT  # what one teller gives, the synchronous bank
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
    }


def test_every_exercise_has_a_prompt_a_hint_and_a_solution(capsys):
    for exercise in (ex.q1, ex.q4, ex.q5, ex.q3, ex.q2):
        assert exercise.prompt
        exercise.hint()
        exercise.solution()
        out = capsys.readouterr().out
        assert out.startswith("Hint") and "Solution: " in out
