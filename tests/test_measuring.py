"""Lesson 09's measuring code: spectra, predictions and ab's lines against hand-computed cases, and one real stall run."""

import math

import pytest

from iolab import benchtools, metrics, servers
from iolab.lessons.measuring import decoded, open_closed, spectrum, stall_runs


def test_the_spectrum_halves_the_rest_each_step_and_ends_at_the_maximum():
    values = list(range(1, 1001))  # 1..1000 ms
    points = spectrum.spectrum(values)
    fractions = [f for f, _ in points]
    assert fractions[0] == 0.5 and points[0][1] == 500
    assert fractions == sorted(fractions)
    # 99% is one of the points (k = 4 × log2(100) is not whole: the nearest below and above are there) ...
    assert any(abs(f - 0.99) < 0.003 for f in fractions)
    # ... and the last is the maximum, drawn at its rank.
    assert points[-1] == (1 - 0.5 / 1000, 1000)
    assert all(value <= 1000 for _, value in points)


def test_the_jump_share_and_window_p99s_by_hand():
    assert spectrum.jump_fraction([1, 1, 1, 500, 1000], 500) == 0.4
    # 100 requests a second; three slow ones in the second second are its slowest 3%, so its p99.
    points = [(t / 100, 1.0) for t in range(400)] + [(1.5, 900.0)] * 3
    assert spectrum.window_p99s(points, 4, 4) == [1.0, 900.0, 1.0, 1.0]
    # One slow request among 101 is above the p99 (its rank is 101, the p99's is 100).
    assert spectrum.window_p99s([(t / 100, 1.0) for t in range(100)] + [(0.5, 900.0)], 1, 1) == [1.0]


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


def test_open_vs_closed_service_time_adds_the_client_only_on_one_cpu():
    summary = metrics.Summary(
        requests=1, concurrency=1, completed=1, errors=0, error_kinds={}, duration_s=1, rps=1, mean_ms=1, p50_ms=1,
        p90_ms=1, p99_ms=1, max_ms=1, ab_time_per_request_ms=1, ab_time_per_request_all_ms=1, demand_ms=4.0,
        queued_ms=0.5, client_demand_ms=0.3,
    )
    assert open_closed.service_time_s(summary, shared_cpu=False) == pytest.approx(0.0045)
    assert open_closed.service_time_s(summary, shared_cpu=True) == pytest.approx(0.0048)
    # The growth check reads the first and last thirds by send time.
    assert open_closed.growth([(0.1, 10.0), (0.5, 20.0), (2.9, 90.0)], 3.0) == (15.0, 90.0)


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
