"""Lesson 11's q5: the student's in_batches run against a real tornado_app and judged by when each call went out."""

import asyncio

from iolab.lessons.client_side import exercises as ex
from iolab.lessons.client_side import fanout


async def in_batches(session, url, n, size):
    calls = []
    for first in range(0, n, size):
        calls += await asyncio.gather(*(fanout.fetch(session, url) for _ in range(min(size, n - first))))
    return calls


async def as_a_pool(session, url, n, size):
    return await fanout.with_semaphore(session, url, n, size)


async def all_at_once(session, url, n, size):
    return await fanout.with_gather(session, url, n)


async def not_written(session, url, n, size):
    return None


def judge(fan_out):
    exercise = type(ex.q5)()
    status = exercise.check(asyncio.run(fanout.try_yours(fan_out, n=10, size=4, T_ms=100)))
    return status, exercise.message


def test_batches_are_correct_and_a_pool_or_one_gather_is_not():
    status, message = judge(in_batches)
    assert status == "correct", message
    assert "3 batches of at most 4" in message
    status, message = judge(as_a_pool)
    assert status == "incorrect" and "a pool" in message, message
    status, message = judge(all_at_once)
    assert status == "incorrect" and "10 calls were out at once" in message, message
    assert judge(not_written)[0] == "not attempted"


def test_the_timeline_is_read_as_waves_of_answers_already_in():
    # Three calls sent at 0, answered at 1; two sent at 1, answered at 2: waves of 3 then 2, at most 3 at once.
    calls = [(0.0, 1.0)] * 3 + [(1.0, 2.0)] * 2
    assert fanout.waves(calls) == [(0, 3), (3, 2)]
    assert fanout.most_at_once(calls) == 3
