"""Lesson 08's exercises, each checked right, wrong and missing, on figures where the lesson's own assertions pass."""

import pytest

from iolab.lessons.pipelining import exercises as ex

pytestmark = pytest.mark.usefixtures("fresh_exercises")  # from conftest.py

# Calls per request at depth 16 that the lesson's own assertions accept: a read and a write per batch at least,
# at most those and an epoll_wait per batch (measured from 1.9/16 at a window's edge to 3/16 pinned to one core).
COUNTS_THE_LESSON_PASSES = [1.9 / 16, 2 / 16, 2.6 / 16, 3 / 16]
# D (µs) of the ladder's servers as two-core (wrk or the lab's client) and one-CPU runs measured them.
LADDERS = [
    {"tornado_app": 156.4, "aiohttp_app": 37.2, "raw asyncio": 13.7, "uvloop + httptools": 10.0, "nginx": 7.1},
    {"tornado_app": 231.6, "aiohttp_app": 71.2, "raw asyncio": 12.7, "uvloop + httptools": 8.5},
    {"tornado_app": 147.9, "aiohttp_app": 45.1, "raw asyncio": 12.7, "uvloop + httptools": 8.6, "nginx": 7.3},
    {"tornado_app": 154.8, "aiohttp_app": 77.2, "raw asyncio": 13.8, "uvloop + httptools": 12.6, "nginx": 8.6},
    {"tornado_app": 153.4, "aiohttp_app": 49.3, "raw asyncio": 16.2, "uvloop + httptools": 10.4, "nginx": 7.9},
]
RIGHT_ORDER = ["tornado_app", "aiohttp_app", "uvloop + httptools"]


@pytest.mark.parametrize("measured", COUNTS_THE_LESSON_PASSES + [None])
def test_q2_rejects_the_answer_that_forgets_the_write_with_strace_and_without(measured, capsys):
    assert ex.q2.check(None, measured=measured) == "not attempted"
    assert ex.q2.check(1 / 16, measured=measured) == "incorrect"
    assert "forgets the write" in capsys.readouterr().out
    for wrong in (1.0, 2.0, 1 / 32):  # no batching at all; a read and a write per request; half a call per batch
        assert ex.q2.check(wrong, measured=measured) == "incorrect"
    for right in (2 / 16, 3 / 16):  # a read and a write per batch; and an epoll_wait per batch
        assert ex.q2.check(right, measured=measured) == "correct"


def test_q2_says_when_the_design_stands_in_for_strace(capsys):
    ex.q2.check(2 / 16, measured=None)
    said = capsys.readouterr().out
    assert said.startswith("Correct") and "strace could not count here" in said and "not a measurement" in said
    ex.q2.check(2 / 16, measured=2.2 / 16)
    said = capsys.readouterr().out
    assert "strace counted 0.138" in said and "could not count" not in said


def test_q2_accepts_what_this_run_counted_when_more_calls_shared_a_batch():
    # Beside a CPU hog, fewer connections are ready per wake-up: up to 4 calls a batch, and a student who read
    # the count off the strace table is right.
    assert ex.q2.check(4 / 16, measured=4 / 16) == "correct"
    assert ex.q2.check(4 / 16, measured=2 / 16) == "incorrect"


@pytest.mark.parametrize("demands", LADDERS)
def test_q1_the_ladders_order_and_spread(demands, capsys):
    measured = demands["tornado_app"] / demands["uvloop + httptools"]
    assert ex.q1.check(None, demands_us=demands) == "not attempted"
    assert ex.q1.check((RIGHT_ORDER, 16), demands_us=demands) == "correct"  # the solution, on every ladder here
    assert ex.q1.check((RIGHT_ORDER, measured * 1.9), demands_us=demands) == "correct"
    assert ex.q1.check((RIGHT_ORDER[::-1], measured), demands_us=demands) == "incorrect"  # C first: upside down
    assert "most CPU first: tornado_app" in capsys.readouterr().out
    assert ex.q1.check((RIGHT_ORDER, 2), demands_us=demands) == "incorrect"  # "Python is Python"
    assert "too low" in capsys.readouterr().out
    assert ex.q1.check((RIGHT_ORDER, measured * 2.1), demands_us=demands) == "incorrect"
    assert ex.q1.check(16, demands_us=demands) == "incorrect"  # the ratio without the order
    assert ex.q1.check((["tornado_app", "nginx", "raw asyncio"], 16), demands_us=demands) == "incorrect"


def test_q3_writes_per_answer():
    assert ex.q3.check(None) == "not attempted"
    assert ex.q3.check(1) == "correct"
    assert ex.q3.check(1 / 16) == "incorrect" and ex.q3.check(16) == "incorrect"


def test_q4_one_process_ceiling_is_one_over_d():
    assert ex.q4.check(None, demand_us=3.2) == "not attempted"
    assert ex.q4.check(1e6 / 3.2, demand_us=3.2) == "correct"
    assert ex.q4.check(2e6 / 3.2, demand_us=3.2) == "incorrect"  # both cores: one process is one thread
    assert ex.q4.check(3.2, demand_us=3.2) == "incorrect"  # D itself


def test_q5_the_last_answer_waits_for_the_one_ahead():
    assert ex.q5.check(None, last_ms=303.0) == "not attempted"
    assert ex.q5.check(300, last_ms=303.0) == "correct"
    assert ex.q5.check(0.5, last_ms=303.0) == "incorrect"  # the seven leave at once
    assert ex.q5.check(8 * 300, last_ms=303.0) == "incorrect"  # the waits do not add up


def test_q6_what_http2_did():
    assert ex.q6.check(None) == "not attempted"
    assert ex.q6.check("multiplexing") == "correct"
    assert ex.q6.check("deeper pipelines") == "incorrect" and ex.q6.check("more connections") == "incorrect"


def test_q7_the_batch_servers_ceiling_over_the_per_request_one():
    figures = {"per_request_us": 3.1, "per_batch_us": 0.9}
    assert ex.q7.check(None, **figures) == "not attempted"
    assert ex.q7.check(3.1 / 0.9, **figures) == "correct"
    assert ex.q7.check(0.9 / 3.1, **figures) == "incorrect"  # upside down


def test_statuses_name_every_exercise_in_order():
    assert list(ex.statuses()) == ["q1", "q2", "q3", "q4", "q5", "q6", "q7"]
