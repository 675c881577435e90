"""Lesson 15's lost tasks, run for real in a child process.

Lesson 15's lost tasks, run for real in a child process: every unkept task is destroyed, every kept one lives.
"""

from iolab.lessons.service import lost_tasks


def test_each_way_in_a_child_process():
    rows = {row["way"]: row for row in lost_tasks.measure(200)}
    assert (rows["fire and forget"]["destroyed"], rows["fire and forget"]["alive"]) == (200, 0)
    for way in ("kept in a set", "in a TaskGroup"):
        assert (rows[way]["destroyed"], rows[way]["alive"]) == (0, 200)
