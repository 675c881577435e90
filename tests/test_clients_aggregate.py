"""Aggregated recording.

The same run summarized from its samples and from its bins and histograms agrees.
"""

import math

import numpy as np
import pytest

from iolab import load, metrics
from iolab.clients.aggregate import RELATIVE_PRECISION, Aggregate, LatencyHistogram


def close_to_histogram_precision(histogram_ms, exact_ms):
    return abs(histogram_ms - exact_ms) <= exact_ms * RELATIVE_PRECISION + 1e-6


def test_bucket_indexes_are_hdrhistograms_own():
    histogram = LatencyHistogram()
    values = np.unique(np.concatenate([
        np.arange(0, 5000), np.random.default_rng(1).integers(1, 10**12, 5000), [2047, 2048, 4095, 4096, 10**12]
    ])).astype(np.int64)
    computed = histogram.indexes(values)
    theirs = [histogram.histogram.get_counts_array_index(int(value)) for value in values]
    assert computed.tolist() == theirs


def test_ranks_are_exact_at_the_ends_and_within_precision_between():
    rng = np.random.default_rng(2)
    latencies = rng.lognormal(-6, 1.2, 20_000)
    histogram = LatencyHistogram()
    histogram.record(latencies[:7000])
    histogram.record(latencies[7000:])
    ordered = np.sort(latencies)
    assert len(histogram) == 20_000
    assert histogram.at_rank(1) == ordered[0] and histogram.at_rank(20_000) == ordered[-1]
    for rank in (2, 100, 10_000, 19_800, 19_999):
        exact = ordered[rank - 1]
        assert abs(histogram.at_rank(rank) - exact) <= exact * RELATIVE_PRECISION
    assert histogram.mean_s == pytest.approx(latencies.mean(), rel=1e-12)
    with pytest.raises(IndexError, match="rank must be between 1 and 20000"):
        histogram.at_rank(0)


@pytest.mark.parametrize("kind", ["closed_raw", "closed_async"])
def test_aggregated_summary_agrees_with_the_samples_of_the_same_run(tornado, kind):
    result = load.run_load(tornado.url + "/async-sleep?ms=20", requests=300, concurrency=10, kind=kind)
    aggregated = load.LoadResult(result.spec, Aggregate.of_samples(result.samples), result.duration_s, "completed")
    exact, binned = metrics.summarize(result), metrics.summarize(aggregated)
    assert binned.completed == exact.completed == 300
    assert binned.errors == exact.errors and binned.error_kinds == exact.error_kinds
    assert binned.rps == exact.rps and binned.ab_time_per_request_ms == exact.ab_time_per_request_ms
    assert binned.mean_ms == pytest.approx(exact.mean_ms, rel=1e-9)
    for name in ("p50_ms", "p90_ms", "p99_ms", "max_ms"):
        assert close_to_histogram_precision(getattr(binned, name), getattr(exact, name)), name
    for percentage, exact_ms in exact.ab_percentiles.items():
        assert abs(binned.ab_percentiles[percentage] - exact_ms) <= 1, percentage  # ab rounds to whole ms
    # Over time: bins of a multiple of the aggregate's own are exact; in flight is exact at its bin edges.
    assert metrics.throughput_over_time(aggregated.samples, 0.05) == metrics.throughput_over_time(result.samples, 0.05)
    times, counts = metrics.in_flight_over_time(result.samples, step_s=0.01)
    assert metrics.in_flight_over_time(aggregated.samples, step_s=0.01, until_s=times[-1]) == (times, counts)


def test_latency_from_intended_agrees_too():
    samples = [
        load.Sample(start=k * 0.01 + 0.002 * k, end=k * 0.01 + 0.002 * k + 0.005, status=200, bytes=1, error=None,
                    user=k, connection=0, intended=k * 0.01)
        for k in range(50)
    ]
    spec = load.LoadSpec("http://127.0.0.1:1/", requests=50, concurrency=1, kind="open", rate_rps=100)
    exact = metrics.summarize(load.LoadResult(spec, samples, 1.0, "completed"), latency_from="intended")
    binned = metrics.summarize(load.LoadResult(spec, Aggregate.of_samples(samples), 1.0, "completed"), latency_from="intended")
    assert exact.max_ms == pytest.approx(5 + 2 * 49)
    assert close_to_histogram_precision(binned.p99_ms, exact.p99_ms) and binned.max_ms == pytest.approx(exact.max_ms)


def test_an_aggregated_run_counts_everything_and_keeps_no_sample(tornado):
    result = load.run_load(tornado.url + "/", requests=500, concurrency=5, kind="closed_raw", record="aggregate")
    assert result.aggregated and result.completed == 500 and result.errors == 0
    summary = metrics.summarize(result)
    assert summary.completed == 500 and summary.error_kinds == {}
    assert 0 < summary.p50_ms <= summary.p99_ms <= summary.max_ms
    assert summary.rps == pytest.approx(500 / result.duration_s)
    _, rates = metrics.throughput_over_time(result.samples, 0.01)
    assert sum(rates) * 0.01 == pytest.approx(500)
    with pytest.raises(TypeError, match="recorded in aggregate"):
        list(result.samples)


def test_large_runs_are_aggregated_unless_told_otherwise():
    assert load.LoadSpec("http://127.0.0.1:1/", requests=load.AGGREGATE_ABOVE + 1).aggregated
    assert not load.LoadSpec("http://127.0.0.1:1/", requests=load.AGGREGATE_ABOVE).aggregated
    assert not load.LoadSpec("http://127.0.0.1:1/", requests=10**6, record="samples").aggregated
    assert load.LoadSpec("http://127.0.0.1:1/", requests=10, record="aggregate").aggregated


def test_errors_and_bad_statuses_are_counted_by_kind(tornado):
    result = load.run_load(tornado.url + "/async-sleep?ms=oops", requests=20, concurrency=2, kind="closed_raw",
                           record="aggregate")
    assert metrics.summarize(result).error_kinds == {"status 400": 20}
    assert result.errors == 0, "an answer, even a 400, is not a transport error"
    assert not math.isnan(metrics.summarize(result).mean_ms)
