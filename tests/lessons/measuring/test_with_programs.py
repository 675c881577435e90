"""Lesson 09's runs with ab and wrk, on a real server: the claims its last cell checks, at a few seconds' size.

The browser test runs lesson 09 without the optional programs (tests/tool_paths.py says why); these run its ab and
wrk parts with them.
"""

import math

import pytest

from iolab import benchtools, servers
from iolab.lessons.measuring import decoded, stall_runs


def needs(tool):
    reason = benchtools.missing_reason(tool)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


@needs("ab")
def test_abs_lines_divide_one_total_and_its_first_request_goes_alone():
    wait_ms, concurrency = 200, 10
    with servers.serve("tornado_app") as server:
        main = decoded.run_ab(f"{server.url}/async-sleep?ms={wait_ms}", 3 * concurrency, concurrency)
        lone = decoded.run_ab(f"{server.url}/async-sleep?ms={wait_ms}", concurrency, concurrency)
        kept = decoded.run_ab(f"{server.url}/", 3 * concurrency, concurrency, keep_alive=True)
    # ab prints both lines to three decimals: their ratio is the concurrency to within that rounding.
    assert math.isclose(main.implied_concurrency, concurrency, rel_tol=0.01), main.figures
    assert math.isclose(main.line_one_ms, main.figures["ab_time_per_request_ms"], rel_tol=0.01), main.figures
    # One wave of c requests needs at least one wait, whatever ab does with its first request.
    assert lone.duration_s >= 0.95 * wait_ms / 1000, lone.figures
    assert math.isclose(lone.figures["rps"], lone.figures["completed"] / lone.duration_s, rel_tol=0.01), lone.figures
    assert kept.keep_alive_requests == kept.figures["completed"] == 3 * concurrency, kept.report


@needs("wrk")
def test_wrk_keeps_no_latency_past_its_timeout_and_counts_timeouts_instead():
    timeout_s, stall_s = 1, 1.5  # every request due in the stall's first half second waits past the timeout
    with servers.serve("tornado_app") as server:
        run = stall_runs.wrk_run(server, rate_rps=100, users=4, duration_s=3, stall_s=stall_s, timeout_s=timeout_s,
                                 stall_from_s=0.5)
    assert run.wrk["requests"] > 0 and run.wrk_spectrum, run.wrk
    # wrk's timer is in microseconds, its timeout checked on its own clock: 1% for the two to disagree.
    assert run.wrk["max_ms"] <= timeout_s * 1000 * 1.01 and run.wrk["timeouts"] > 0, run.wrk


@needs("wrk")
@pytest.mark.parametrize("name", ["tornado_app", "bottle_gevent"])  # Bottle: the write-up's gevent + Bottle run
def test_wrk_posting_to_a_get_only_route_counts_every_answer_an_error(name):
    posted = decoded.wrk_post_to(name, connections=4, duration_s=1)
    if isinstance(posted, str):
        pytest.skip(posted)
    assert posted["requests"] > 0 and posted["non_2xx"] >= 0.99 * posted["requests"], posted
