"""Lesson 04's measured exercises and their statuses.

Fixed answers are checked with every lesson's in tests/lessons/test_exercises.py.
"""

import types

import pytest

from iolab import checks as core
from iolab.lessons.io_models import exercises as ex
from iolab.lessons.io_models import nonblocking

# With a 100 ms delay: the multiplexed wait is about one delay (a peer and a woken thread are
# never early, 5 ms of timing aside, and may be late on a loaded machine); the busy loop wants
# a CPU for about the wait, less what a loaded machine's scheduler takes from it.
MULTIPLEXED_WAIT_AT_LEAST_MS = 95
BUSY_LOOP_CPU_AT_LEAST_MS = 80
LOADED_MACHINE_AT_MOST_MS = 160
# A loaded machine may also keep the peer from sending on time, and the busy loop spins until it
# does: so its demand (CPU used plus CPU queued for) is judged against its own wait, not the delay.
BUSY_LOOP_DEMAND_OF_ITS_WAIT = (0.8, 1.15)

pytestmark = pytest.mark.usefixtures("fresh_exercises")  # from conftest.py


@pytest.mark.parametrize("exercise, measured", [(ex.q2, 150.0), (ex.q1, 140.0)])
def test_predictions_against_a_stand_in_measurement(exercise, measured, monkeypatch, capsys):
    monkeypatch.setattr(exercise, "measure", lambda **context: measured)
    assert exercise.check(150, delay_ms=150) == core.CORRECT
    assert exercise.check(600, delay_ms=150) == core.INCORRECT  # four delays: the waits do not add up
    assert "too high" in capsys.readouterr().out
    assert exercise.check(...) == core.NOT_ATTEMPTED


def test_predictions_measure_the_real_programs(monkeypatch):
    # The thread may be kept off its waits on a loaded machine: the allowance says by how much.
    wait_ms = ex.q2.measure(delay_ms=100)
    assert wait_ms + ex.q2.allowance >= MULTIPLEXED_WAIT_AT_LEAST_MS and wait_ms <= LOADED_MACHINE_AT_MOST_MS
    runs = []
    real_run = nonblocking.run
    monkeypatch.setattr(nonblocking, "run", lambda *args, **kwargs: runs.append(real_run(*args, **kwargs)) or runs[-1])
    demand = ex.q1.measure(delay_ms=100)
    low, high = BUSY_LOOP_DEMAND_OF_ITS_WAIT
    assert demand >= BUSY_LOOP_CPU_AT_LEAST_MS
    assert low * runs[0].wait_ms <= demand <= high * runs[0].wait_ms, runs[0].figures()


@pytest.mark.parametrize("last_sent_ms, ready_ms, wait_ms, allowed_ms", [
    (100.0, 100.2, 100.0, 0.0),  # an idle machine: nothing to allow
    (130.0, 130.1, 130.0, 30.1),  # the peer sent 30 ms late: the wait is that much longer
    (100.0, 100.1, 60.0, 40.1),  # the thread queued 40 ms between waits: the wait is that much shorter
])
def test_a_busy_machine_is_allowed_for_by_what_this_run_measured(last_sent_ms, ready_ms, wait_ms, allowed_ms):
    run = types.SimpleNamespace(last_sent_ms=last_sent_ms, ready_ms=ready_ms, wait_ms=wait_ms)
    ex.allow_for_a_busy_machine(ex.q2, run, delay_ms=100)
    assert ex.q2.allowance == pytest.approx(allowed_ms, abs=0.01)


def test_a_thread_kept_off_its_waits_does_not_fail_a_right_prediction(monkeypatch):
    run = types.SimpleNamespace(last_sent_ms=100.0, ready_ms=100.1, wait_ms=60.0)
    monkeypatch.setattr(ex.multiplexing, "run", lambda *args, **kwargs: run)
    assert ex.q2.check(100, delay_ms=100) == core.CORRECT
    assert ex.q2.check(400, delay_ms=100) == core.INCORRECT  # the waits still do not add up


def test_statuses_for_the_results_file():
    ex.q3.check("copy")
    ex.q4.check(7)
    assert ex.statuses() == {"q1": "not attempted", "q2": "not attempted", "q3": "correct", "q4": "incorrect"}
