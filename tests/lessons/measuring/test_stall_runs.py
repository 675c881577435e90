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


def fifo_stall_run(rate=200, duration_s=3.0, stop_s=0.75, stall_s=0.5, service_s=0.001, calm_ms=1.0):
    """An open loop's run by hand: a fixed schedule, the server stopped, then answering in order at one per service_s."""
    points, free_at = [], 0.0
    for k in range(int(rate * duration_s)):
        sent = k / rate
        begins = max(sent, free_at)
        if stop_s <= begins < stop_s + stall_s:
            begins = stop_s + stall_s  # the server is stopped: it starts on this one when it resumes
        free_at = begins + service_s
        points.append((sent, (free_at - sent) * 1000 + calm_ms - service_s * 1000))
    latencies = sorted(ms for _, ms in points)
    return stall_runs.StallRun(client="open loop", latencies_ms=latencies, rate_rps=rate, duration_s=duration_s,
                               stall_from_s=stop_s, stall_s=stall_s, points=points, calm_p99_ms=calm_ms)


def test_the_rank_from_the_top_of_a_nearest_rank_percentile():
    assert stall_runs.rank_from_top(600, 0.99) == 7  # the 594th of 600: 7 values at or above it
    assert stall_runs.rank_from_top(4000, 0.99) == 41
    assert stall_runs.rank_from_top(10, 1.0) == 1


@pytest.mark.parametrize("service_s", [0.0005, 0.001, 0.004])
def test_the_open_loops_p99_lies_between_the_bounds_its_run_sets(service_s):
    run = fifo_stall_run(service_s=service_s)
    low, high, detail = stall_runs.open_percentile_bounds(run, 0.99, per_request_s=service_s)
    # The 7th request due in the stall, 30 ms into it, waits the rest of the stall and the 7 answers before its own.
    assert detail["m"] == 7 and detail["u_m_ms"] == pytest.approx(30.0)
    assert low == pytest.approx(470.0)
    assert low <= run.percentile_ms(0.99) <= high
    # The range: the first answer's own time, the 7 queued up to the 7th, and a calm request's noise.
    assert high - low <= 8 * service_s * 1000 + 2 * run.calm_p99_ms + 1e-6


def test_a_stall_after_the_last_request_holds_none_of_them():
    run = fifo_stall_run(stop_s=3.05, stall_s=0.08)
    low, high, detail = stall_runs.open_percentile_bounds(run, 0.99, per_request_s=0.001)
    assert detail["due_in_stall"] == 0 < detail["m"] and math.isnan(low) and math.isnan(high)


def test_the_corrected_floor_by_hand():
    # 3 users, 15 ms apart each, a 500 ms stall, 600 corrected values: the 7th largest is at least the third value
    # filled in below the shortest stalled wait, 500 − 15 − 0 − 2 × 15 = 455 ms.
    assert stall_runs.corrected_floor_ms(0.5, 0.015, 0.0, 15.0, 3, 600, 0.99) == pytest.approx(455.0)
    latencies = [2.0] * 597 + [485.0, 490.0, 500.0]
    corrected = metrics.corrected_for_omission(latencies, 15.0)
    floor = stall_runs.corrected_floor_ms(0.5, 0.015, 0.0, 15.0, 3, len(corrected), 0.99)
    assert metrics.percentile(corrected, 0.99) >= floor


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
    assert opened.stall_s == pytest.approx(stall_s, abs=0.05) and not opened.stall_cut_short
    assert opened.stall_from_s == pytest.approx(duration * stall_runs.STALL_AT, abs=0.05)
    summary = opened.summary
    waits = [ms for ms in (summary.queued_ms, summary.client_queued_ms) if math.isfinite(ms)]
    per_request_s = (summary.demand_ms + summary.client_demand_ms + sum(waits)) / 1000
    low, high, detail = stall_runs.open_percentile_bounds(opened, 0.99, per_request_s)
    assert low <= opened.percentile_ms(0.99) <= high, (low, high, detail)
    assert closed.percentile_ms(0.99) < stall_s * 1000 / 2 < opened.percentile_ms(0.99)
    assert closed.stalled_share() <= users / closed.requests
    interval_ms = users / closed.rate_rps * 1000
    corrected = stall_runs.corrected(closed, interval_ms)
    floor = stall_runs.corrected_floor_ms(stall_s, users / rate,
                                          closed.send_lag_s + closed.calm_p99_ms / 1000, interval_ms, users,
                                          len(corrected), 0.99)
    assert metrics.percentile(corrected, 0.99) >= floor > stall_s * 1000 / 2
    assert not math.isnan(closed.calm_p99_ms)
