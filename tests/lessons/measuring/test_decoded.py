"""Lesson 09's ab decoded: the two Time per request lines from the run's own numbers."""

import pytest

from iolab import benchtools
from iolab.lessons.measuring import decoded

AB_REPORT = """Concurrency Level:      40
Time taken for tests:   200.746 seconds
Complete requests:      200
Failed requests:        0
Requests per second:    1.00 [#/sec] (mean)
Time per request:       40149.163 [ms] (mean)
Time per request:       1003.729 [ms] (mean, across all concurrent requests)
"""


def test_abs_two_lines_are_one_total_divided_two_ways():
    # The write-up's sync run: both lines follow from the time taken, the requests and the concurrency.
    run = decoded.AbRun(200, 40, AB_REPORT, benchtools.parse_ab(AB_REPORT), 0)
    assert run.line_one_ms == pytest.approx(40149.2, abs=0.1)
    assert run.line_two_ms == pytest.approx(1003.73, abs=0.01)
    assert run.implied_concurrency == pytest.approx(40, rel=1e-4)
    assert decoded.report_lines(run, "Time per").count("\n") == 1
