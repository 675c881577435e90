"""Lesson 09's open vs closed: the service time each model takes, and the growth past 1/D."""

import pytest

from iolab import metrics
from iolab.lessons.measuring import open_closed


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


def test_the_noise_of_a_runs_mean_by_batch_means():
    # Five batches whose means are 1, 2, 3, 4, 5 ms: their standard deviation over sqrt(5).
    latencies = [float(value) for value in (1, 2, 3, 4, 5) for _ in range(4)]
    assert open_closed.mean_noise_ms(latencies) == pytest.approx((2.5 ** 0.5) / 5 ** 0.5)
    assert open_closed.mean_noise_ms([3.0] * 50) == 0.0
    assert open_closed.mean_noise_ms([1.0, 2.0]) == float("inf")  # too few to measure their own noise
