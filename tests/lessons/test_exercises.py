"""Every lesson's exercises.

Each accepts its right answer, explains a wrong one, and notices a missing one.
"""

import pytest

from iolab import checks as core
from iolab.lessons.backend import exercises as lesson10
from iolab.lessons.bank import exercises as lesson01
from iolab.lessons.c10k import exercises as lesson07
from iolab.lessons.c10k import limits as c10k_limits
from iolab.lessons.event_loop import exercises as lesson05
from iolab.lessons.io_models import exercises as lesson04
from iolab.lessons.measuring import exercises as lesson09
from iolab.lessons.ordering import exercises as lesson03
from iolab.lessons.pipelining import exercises as lesson08
from iolab.lessons.start import exercises as lesson00
from iolab.lessons.sync_async import exercises as lesson02
from iolab.lessons.workers import cores as workers_cores
from iolab.lessons.workers import exercises as lesson06
from iolab.lessons.workers import sweep as workers_sweep

LESSONS = (lesson00, lesson01, lesson02, lesson03, lesson04, lesson05, lesson06, lesson07, lesson08, lesson09,
           lesson10)
# statuses() names every exercise a lesson binds to q1, q2, ...
EVERY_EXERCISE = [getattr(lesson, name) for lesson in LESSONS for name in lesson.statuses()]

# (exercise, right answer, wrong answer, words the wrong answer's reason must contain)
OFFLINE = [
    (lesson10.q1, 7.0, 21.0, "3 sync workers"),
    (lesson10.q2, 14_195, 243.5 * 60, "every task sent"),
    (lesson10.q3, "front end", "worker pool", "idle"),
    (lesson10.q4, 120, 400, "refuses"),
    (lesson00.q1, "little", "all", "costs nothing while it sleeps"),
    (lesson00.q2, 20, 0.5, "overlapped"),
    (lesson00.q0, 0.5, 500, "in milliseconds"),
    (lesson01.q1, 50, 2, "is what one teller gives"),
    (lesson01.q1, 49, 12.5, "customers times seconds is not a rate"),
    (lesson01.q2, "ticket", "threaded", "stays at 4 per second"),
    (lesson01.q2, "Ticket", "all", "limited by its tellers"),
    (lesson01.q3, 40, 1, "the teller's time with each customer"),
    (lesson01.q3, 39.5, 200, "all 200 customers"),
    (lesson01.q4, 40, 4, "give 4 req/s"),
    (lesson01.q4, 40, 41, "more tellers than customers"),
    (lesson02.q1, 32, 40, "not the handler's 1 s"),
    (lesson02.q2, "b", "c", "100%"),
    (lesson02.q3, "users", "cpu", "well under a millisecond"),
    (lesson03.q1, "A,C", "B,C", "hands the loop back"),
    (lesson03.q2, 1000, 2000, "C is instant"),
    (lesson03.q3, 2000, 1100, "when the loop reads B"),
    (lesson03.q5, 1000, 100, "never hands the loop back"),
    (lesson03.q6, 100, 1000, "Which thread is asleep"),
    (lesson04.q3, "copy", "both", "the wait costs the application nothing"),
    (lesson04.q4, 1023, 1024, "is FD_SETSIZE, the number of bits"),
    (lesson05.q2, "step2", "step1", "asleep in accept()"),
    (lesson05.q3, 500, 300, "side by side"),
    (lesson05.q3, 500, 5000, "one after another"),
    (lesson05.q3, 500, 2500, "at the same time"),
    (lesson05.q4, "select", "callbacks", "tens of microseconds"),
    (lesson05.q6, 300, 0, "in the order the requests were sent"),
    (lesson05.q6, 310, 600, "adds the waits"),
    (lesson06.q3, "interval", "idle", "the CPU-bound thread holds the GIL"),
    (lesson06.q3, "Interval", "cpu", "after the switch interval"),
    (lesson06.q6, "kappa", "sigma", "never turns down"),
    (lesson07.q1, 20_000, 10_000, "counts one end"),
    (lesson07.q2, "vsz", "rss", "RSS counts only pages written to"),
    (lesson07.q6, c10k_limits.ports_per_source(), c10k_limits.ports_per_source() - 1, "the range is inclusive"),
    (lesson07.q7, "1 s", "0.5 s", "its SYN was dropped"),
    (lesson08.q3, 1, 1 / 16, "batched server's figure"),
    (lesson08.q6, "multiplexing", "more connections", "six per host"),
    (lesson09.q1, 800, 1000, "the first request of the stall"),
    (lesson09.q1, 790, 1, "what a closed loop would report"),
    (lesson09.q4, 0.19, 0.81, "the share of timeouts"),
    (lesson09.q5, 0, 124.63, "errors included"),
    (lesson09.q6, "a", "c", "sends on its schedule"),
    (lesson09.q7, "merged", "averaged", "between their min and max"),
]


pytestmark = pytest.mark.usefixtures("fresh_exercises")  # from conftest.py

# Measured answers: 6 requests of 200 ms from 3 users take 1.2 s on the synchronous server; C,
# sent behind a blocking 300 ms A and a waiting B, answers about 300 ms after A was sent. Timer
# jitter below, a loaded machine above.
SYNC_RUN_AT_LEAST_S, SYNC_RUN_AT_MOST_S = 1.1, 1.4
C_ANSWERS_AT_LEAST_MS, C_ANSWERS_AT_MOST_MS = 280, 380


@pytest.mark.parametrize("exercise, right, wrong, reason", OFFLINE, ids=lambda v: getattr(v, "name", None))
def test_offline_exercises(exercise, right, wrong, reason, capsys):
    assert exercise.check(None) == "not attempted"
    assert exercise.check(wrong) == "incorrect"
    assert reason in capsys.readouterr().out
    assert exercise.check(right) == "correct"
    exercise.hint()
    exercise.solution()
    assert "Solution" in capsys.readouterr().out


@pytest.mark.parametrize("exercise", EVERY_EXERCISE, ids=lambda exercise: type(exercise).__name__)
@pytest.mark.parametrize("missing", [None, ...])
def test_missing_answer_is_not_attempted(exercise, missing, capsys):
    assert exercise.check(missing) == core.NOT_ATTEMPTED
    assert capsys.readouterr().out.startswith("Not attempted")


@pytest.mark.parametrize("exercise", EVERY_EXERCISE, ids=lambda exercise: type(exercise).__name__)
def test_every_exercise_has_a_prompt_a_hint_and_a_solution(exercise, capsys):
    assert exercise.prompt
    exercise.hint()
    exercise.solution()
    out = capsys.readouterr().out
    assert out.startswith("Hint") and "Solution: " in out


def test_predict_the_sync_run_time(tornado, capsys):
    exercise = lesson02.q4
    assert exercise.check(..., url=tornado.url) == "not attempted"
    assert exercise.check(0.2, url=tornado.url) == "incorrect"
    assert "one request at a time" in capsys.readouterr().out
    assert exercise.check(1.2, url=tornado.url) == "correct"
    assert SYNC_RUN_AT_LEAST_S < exercise.measured < SYNC_RUN_AT_MOST_S


def test_predict_when_c_answers_after_a_and_b(tornado, capsys):
    exercise = lesson03.q4
    kwargs = {"url": tornado.url, "delay_ms": 300, "gap_ms": 30}
    assert exercise.check(None, **kwargs) == "not attempted"
    assert exercise.check(600, **kwargs) == "incorrect"
    assert exercise.check(300, **kwargs) == "correct"
    assert C_ANSWERS_AT_LEAST_MS < exercise.measured < C_ANSWERS_AT_MOST_MS


def test_statuses_list_every_exercise():
    assert set(lesson02.statuses()) == {"q1", "q2", "q3", "q4"}
    assert set(lesson03.statuses()) == {"q1", "q2", "q3", "q4", "q5", "q6"}
    assert set(lesson00.statuses()) == {"q0", "q1", "q2"}  # q0: the warm-up that shows how exercises work


@pytest.mark.parametrize("exercise, measured, right, wrong, reason", [
    (lesson07.q3, {"measured_mb": 49.4}, 47.9, 26.0, "base + N × slope"),
    (lesson07.q9, {"measured_s": 1.31}, 1.33, 0.51, "Little's law"),
    (lesson08.q2, {"measured": 0.13}, 0.125, 2.0, "too high"),
    (lesson08.q2, {"measured": None}, 0.125, 2.0, "Count per batch"),
    (lesson08.q4, {"demand_us": 2.5}, 400_000, 800_000, "one core"),
    (lesson08.q5, {"last_ms": 305.0}, 300, 2100, "may not leave before"),
    (lesson08.q7, {"per_request_us": 2.0, "per_batch_us": 0.8}, 2.5, 0.4, "compare the two ceilings"),
    (lesson09.q2, {"users": 10}, 10, 200, "at most one request out"),
    (lesson09.q3, {"line_one_ms": 40149.0, "line_two_ms": 1003.7}, 40, 1, "concurrency × time / requests"),
], ids=["thread-server-rss", "wrk-hides-the-wait", "syscalls-at-depth-16", "syscalls-not-measured", "one-core-ceiling",
        "behind-the-wait", "batch-ceilings", "closed-loop-stalled-requests", "concurrency-from-abs-lines"])
def test_predictions_checked_against_what_the_notebook_measured(exercise, measured, right, wrong, reason, capsys):
    assert exercise.check(None, **measured) == "not attempted"
    assert exercise.check(wrong, **measured) == "incorrect"
    assert reason in capsys.readouterr().out
    assert exercise.check(right, **measured) == "correct"


# Lesson 06's matrix on /sync-sleep, as measured: (workers, threads) -> req/s (more in tests/lessons/workers/).
WAITING_MATRIX = {(1, 1): 47.0, (1, 8): 376.0, (2, 1): 94.0, (2, 8): 752.0}


def test_the_best_cell_for_waiting_is_the_one_that_holds_most(capsys):
    exercise = lesson06.q5
    assert exercise.check(None, measured=WAITING_MATRIX) == "not attempted"
    assert exercise.check((2, 1), measured=WAITING_MATRIX) == "incorrect"
    assert "held 2 requests at once" in capsys.readouterr().out
    assert exercise.check((3, 3), measured=WAITING_MATRIX) == "incorrect"
    assert "not one of the cells asked about" in capsys.readouterr().out
    assert exercise.check("2x8", measured=WAITING_MATRIX) == "incorrect"
    assert exercise.check((2, 8), measured=WAITING_MATRIX) == "correct"


@pytest.mark.parametrize("one_core", [False, True], ids=["every-core", "one-core"])
def test_predict_four_threads_on_cpu_work(one_core):
    # On one core the client takes its turns too: 1 / D is still right, with the client's share allowed.
    cpus = {min(workers_cores.usable_cores())} if one_core else None
    lab = workers_sweep.Lab(wait_ms=20, cpu_ms=5, run_seconds=0.3, users=16, handlers=("cpu",), cpus=cpus)
    exercise = lesson06.q2
    assert exercise.check(None, lab=lab) == "not attempted"
    assert exercise.check(4 * 190, lab=lab) == "incorrect"  # four threads, one GIL: not four times one thread
    one_thread = lab.demands(workers_sweep.Config("gthread"), "cpu")
    assert exercise.check(1000 / one_thread.app_ms, lab=lab) == "correct"


def _wrong_answers(exercise):
    """A too-high and a too-low answer to a number exercise, clear of its tolerance and of its known mistakes."""
    expected = exercise.expected_value()
    answers = []
    for factor in (3, 1 / 3):
        answer = expected * factor + (7 if factor > 1 else -7)
        while core._close(answer, expected, exercise.rel_tol, exercise.abs_tol) or any(
            core._close(answer, mistake, exercise.rel_tol, exercise.abs_tol) for mistake in exercise.mistakes
        ):
            answer = answer * factor + (7 if factor > 1 else -7)
        answers.append(answer)
    return answers


def _lesson(cls):
    return cls.__module__.split(".")[2] if cls.__module__.startswith("iolab.lessons.") else None


NUMBER_EXERCISES = [
    exercise for exercise in EVERY_EXERCISE
    if isinstance(exercise, core.NumberExercise) and type(exercise).judge is core.NumberExercise.judge
]
# The feedback each lesson writes for its own number exercises (the core's neutral words aside): no other
# lesson's student should read it.
LESSON_TEXTS = {
    (_lesson(type(exercise)), text)
    for exercise in NUMBER_EXERCISES
    for text in (exercise.too_high_text, exercise.too_low_text, *exercise.mistakes.values())
    if text not in (core.NumberExercise.too_high_text, core.NumberExercise.too_low_text)
}


@pytest.mark.parametrize("exercise", NUMBER_EXERCISES, ids=lambda exercise: type(exercise).__name__)
def test_a_wrong_number_hears_only_its_own_lesson_and_the_core(exercise, capsys):
    own = _lesson(type(exercise))
    for answer in _wrong_answers(exercise):
        assert exercise.check(answer) == core.INCORRECT
        said = capsys.readouterr().out
        others = sorted(text for lesson, text in LESSON_TEXTS if lesson != own and text in said)
        assert not others, f"{type(exercise).__name__} (lesson {own}) answers {answer} with other lessons' words: {others}"
        if own != "bank":
            assert "bank" not in said.lower() and "teller" not in said.lower(), said
        for name in ("too_high_text", "too_low_text"):
            # Whoever wrote the words it inherits: the core, or a class of its own lesson.
            author = next(cls for cls in type(exercise).__mro__ if name in vars(cls))
            assert author is core.NumberExercise or _lesson(author) == own, (name, author)
