"""The exercises of lessons 00, 02 and 03: each accepts its right answer, rejects a wrong one, and notices a missing one."""

import pytest

from iolab import servers
from iolab.checks import lesson00, lesson02, lesson03

# (exercise, right answer, wrong answer, words the wrong answer's reason must contain)
OFFLINE = [
    (lesson00.q1, 80, 40, "one request per user per second"),
    (lesson00.q2, 20, 0.5, "overlapped"),
    (lesson02.q1, 50, 2, "synchronous server"),
    (lesson02.q2, "b", "c", "100%"),
    (lesson02.q3, "users", "cpu", "well under a millisecond"),
    (lesson03.q1, "A,C", "B,C", "hands the loop back"),
    (lesson03.q2, 1000, 2000, "C is instant"),
    (lesson03.q4, 2000, 1100, "when the loop reads B"),
]


@pytest.mark.parametrize("exercise, right, wrong, reason", OFFLINE, ids=lambda v: getattr(v, "name", None))
def test_offline_exercises(exercise, right, wrong, reason, capsys):
    assert exercise.check(None) == "not attempted"
    assert exercise.check(wrong) == "incorrect"
    assert reason in capsys.readouterr().out
    assert exercise.check(right) == "correct"
    exercise.hint()
    exercise.solution()
    assert "Solution" in capsys.readouterr().out


@pytest.fixture(scope="module")
def tornado():
    with servers.serve("tornado_app") as server:
        yield server


def test_predict_the_sync_run_time(tornado, capsys):
    exercise = lesson02.q4
    assert exercise.check(..., url=tornado.url) == "not attempted"
    assert exercise.check(0.2, url=tornado.url) == "incorrect"
    assert "one request at a time" in capsys.readouterr().out
    assert exercise.check(1.2, url=tornado.url) == "correct"
    assert 1.1 < exercise.measured < 1.4


def test_predict_when_c_answers_after_a_and_b(tornado, capsys):
    exercise = lesson03.q3
    kwargs = {"url": tornado.url, "delay_ms": 300, "gap_ms": 30}
    assert exercise.check(None, **kwargs) == "not attempted"
    assert exercise.check(600, **kwargs) == "incorrect"
    assert exercise.check(300, **kwargs) == "correct"
    assert 280 < exercise.measured < 380


def test_statuses_list_every_exercise():
    assert set(lesson02.statuses()) == {"q1", "q2", "q3", "q4"}
    assert set(lesson03.statuses()) == {"q1", "q2", "q3", "q4"}
    assert set(lesson00.statuses()) == {"q1", "q2"}
