"""Lesson 11's four fan-outs against a real tornado_app: each within its rounds of T, the limit read back."""

import asyncio
import threading

import psutil

from iolab.lessons.client_side import fanout, parameters

CELL = parameters.DEFAULTS | {"calls": 8, "call_ms": 50, "threads": 3, "semaphore": 4}


def ours():
    """This process's threads but two that live as long as the process by design: the lab's spawner, which starts
    every child, and pycares' closer of DNS channels (aiohttp's resolver)."""
    return {thread.name for thread in threading.enumerate()
            if not thread.name.startswith("iolab-spawner") and not thread.name.endswith("(_run_safe_shutdown_loop)")}


def test_each_way_takes_its_rounds_and_leaves_nothing_behind():
    plan = parameters.Plan.from_cell(CELL)
    threads, children = ours(), psutil.Process().children()
    rows = asyncio.run(fanout.run_all(plan))
    assert [row["rounds"] for row in rows.values()] == [8, 3, 1, 2]
    for how, row in rows.items():
        assert row["low_s"] <= row["measured_s"] <= row["high_s"], (how, row)
        assert row["answered_in_two_T"] <= min(row["limit"], row["calls"]) <= row["answered_in_T_and_work"], (how, row)
        assert len(row["calls_timed"]) == 8
    assert ours() == threads and psutil.Process().children() == children
