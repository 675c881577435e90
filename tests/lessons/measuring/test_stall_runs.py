"""Lesson 09's stall runs: predictions by hand, wrk's paced script, and one real stall."""

import math

import pytest

from iolab import metrics, servers
from iolab.lessons.measuring import stall_runs


@pytest.mark.parametrize("fraction, stall_s, duration_s, rate, demand_s, base_ms, expected_ms", [
    (0.99, 1.0, 20, 200, 0.0, 0.0, 800.0),  # S − (1 − p) T
    (0.99, 1.0, 20, 200, 0.001, 0.0, 840.0),  # the queue drains at 1/D: 1 − 0.2 × (1 − 0.2)
    (0.99, 1.0, 20, 200, 0.0, 2.0, 802.0),  # plus what a request costs without a stall
    (0.99, 0.1, 20, 200, 0.0, 2.0, 2.0),  # a stall shorter than 1% of the run does not reach the p99
    (0.999, 1.0, 20, 200, 0.0, 0.0, 980.0),
])
def test_the_open_loops_percentile_under_a_stall_by_hand(fraction, stall_s, duration_s, rate, demand_s, base_ms,
                                                          expected_ms):
    got = stall_runs.predicted_open_ms(fraction, stall_s, duration_s, rate, demand_s, base_ms)
    assert got == pytest.approx(expected_ms)


def test_who_sees_the_stall():
    # 200 req/s for 20 s: 4000 requests; the open loop's 200 due during 1 s, the closed loop's 10 users' 10.
    assert stall_runs.predicted_stalled_share("open loop", 1.0, 20, 200, 10) == pytest.approx(0.05)
    assert stall_runs.predicted_stalled_share("closed loop", 1.0, 20, 200, 10) == pytest.approx(0.0025)


def test_the_paced_script_delays_every_request_and_prints_wrks_spectrum():
    script = stall_runs.paced_script(50.0, fractions=(0.5, 0.99))
    assert "local delay_ms = 50.000" in script and "delay = function() return delay_ms end" in script
    assert "{50.000000, 99.000000}" in script and "latency:percentile(p)" in script


@pytest.mark.slow
def test_a_real_stall_is_seen_by_the_open_loop_and_not_by_the_closed_one():
    rate, duration, stall_s, users = 200, 3, 0.5, 3
    with servers.serve("tornado_app") as server:
        closed = stall_runs.closed_loop(server, rate, users, duration, stall_s)
        opened = stall_runs.open_loop(server, rate, duration, stall_s)
        assert server.alive()
    assert opened.stall_s == pytest.approx(stall_s, abs=0.05)
    assert opened.stall_from_s == pytest.approx(duration * stall_runs.STALL_AT, abs=0.05)
    predicted = stall_runs.predicted_open_ms(0.99, opened.stall_s, duration, rate, 0.0, opened.calm_p99_ms)
    # Between no drain at all and a drain at a tenth of the rate (a very loaded machine), plus the run's noise.
    assert 0.9 * (predicted - opened.calm_p99_ms) <= opened.percentile_ms(0.99) <= predicted + 0.1 * stall_s * 1000
    assert closed.percentile_ms(0.99) < opened.percentile_ms(0.99) / 10
    assert closed.stalled_share() <= users / closed.requests
    corrected = metrics.percentile(stall_runs.corrected(closed, users / closed.rate_rps * 1000), 0.99)
    assert corrected > 0.5 * (predicted - opened.calm_p99_ms)
    assert not math.isnan(closed.calm_p99_ms)
