"""Metrics computed from hand-made samples whose answers are known."""

import math

import pytest

from iolab import metrics
from iolab.load import LoadResult, LoadSpec, Sample


def result_of(latencies, concurrency=1, duration=None):
    samples, clock = [], 0.0
    for index, latency in enumerate(latencies):
        samples.append(Sample(clock, clock + latency, 200, 12, None, index % concurrency))
        clock += latency / concurrency
    duration = duration or max(s.end for s in samples)
    return LoadResult(LoadSpec("http://127.0.0.1:1/", len(latencies), concurrency), samples, duration, "completed")


def test_ab_time_per_request_is_concurrency_times_total_over_n():
    # The article's sync run: 200 requests, 40 concurrent, 200.7 s in all.
    result = result_of([1.0] * 200, concurrency=40, duration=200.7)
    summary = metrics.summarize(result)
    assert summary.ab_time_per_request_ms == pytest.approx(40 * 200.7 * 1000 / 200)
    assert summary.ab_time_per_request_all_ms == pytest.approx(200.7 * 1000 / 200)
    assert summary.rps == pytest.approx(200 / 200.7)
    # The mean latency is a measurement, not ab's division: here every request took 1 s.
    assert summary.mean_ms == pytest.approx(1000)


def test_percentiles_and_ab_table_index_like_ab():
    latencies = [i / 1000 for i in range(1, 101)]  # 1 ms .. 100 ms
    summary = metrics.summarize(result_of(latencies))
    assert summary.p50_ms == pytest.approx(50)
    assert summary.p90_ms == pytest.approx(90)
    assert summary.p99_ms == pytest.approx(99)
    assert summary.max_ms == pytest.approx(100)
    # ab reads stats[done * p / 100]: one place above nearest rank.
    assert summary.ab_percentiles[50] == 51
    assert summary.ab_percentiles[100] == 100


def test_errors_by_kind_count_transport_errors_and_bad_statuses():
    samples = [
        Sample(0, 1, 200, 1, None, 0),
        Sample(0, 1, 0, 0, "refused", 0),
        Sample(0, 1, 0, 0, "refused", 0),
        Sample(0, 1, 500, 1, None, 0),
    ]
    result = LoadResult(LoadSpec("http://127.0.0.1:1/", 4, 1), samples, 1.0, "completed")
    summary = metrics.summarize(result)
    assert summary.error_kinds == {"refused": 2, "status 500": 1}
    assert summary.errors == 3


def test_throughput_over_time_counts_completions_per_bin():
    samples = [Sample(0, t, 200, 1, None, 0) for t in (0.1, 0.2, 0.6, 0.7, 0.8)]
    starts, rates = metrics.throughput_over_time(samples, bin_s=0.5)
    assert starts == [0.0, 0.5]
    assert rates == [4.0, 6.0]


def test_in_flight_over_time():
    samples = [Sample(0.0, 1.0, 200, 1, None, 0), Sample(0.5, 1.5, 200, 1, None, 1)]
    times, counts = metrics.in_flight_over_time(samples, step_s=0.25)
    by_time = dict(zip(times, counts))
    assert by_time[0.0] == 1 and by_time[0.5] == 2 and by_time[1.0] == 1 and by_time[1.5] == 0


def test_little_bound():
    assert metrics.little_bound(40, 1.0) == 40
    assert metrics.little_bound(40, 1.0, workers=1) == 1
    assert metrics.little_bound(25, 0.5, workers=4) == 8
    with pytest.raises(ValueError, match="service_s"):
        metrics.little_bound(1, 0)


def test_empty_run_does_not_crash():
    summary = metrics.summarize(LoadResult(LoadSpec("http://127.0.0.1:1/", 1, 1), [], 0.0, "stopped"))
    assert summary.completed == 0 and summary.rps == 0 and math.isnan(summary.mean_ms)


def test_an_aggregate_gives_the_same_figures_to_histogram_precision():
    from iolab.clients.aggregate import RELATIVE_PRECISION, Aggregate

    exact_result = result_of([i / 1000 for i in range(1, 101)])
    aggregated = LoadResult(exact_result.spec, Aggregate.of_samples(exact_result.samples), exact_result.duration_s,
                            "completed")
    exact, binned = metrics.summarize(exact_result), metrics.summarize(aggregated)
    for name in ("p50_ms", "p90_ms", "p99_ms"):
        assert getattr(binned, name) == pytest.approx(getattr(exact, name), rel=RELATIVE_PRECISION)
    assert binned.max_ms == exact.max_ms == pytest.approx(100)
    assert binned.mean_ms == pytest.approx(exact.mean_ms)
    assert binned.ab_percentiles == exact.ab_percentiles
    assert binned.errors == 0 and len(aggregated.samples) == 100


def test_an_aggregate_counts_errors_like_samples_do():
    from iolab.clients.aggregate import Aggregate

    samples = [
        Sample(0, 1, 200, 1, None, 0),
        Sample(0, 1, 0, 0, "refused", 0),
        Sample(0, 1, 0, 0, "refused", 0),
        Sample(0, 1, 500, 1, None, 0),
    ]
    assert metrics.error_kinds(Aggregate.of_samples(samples)) == metrics.error_kinds(samples)


def test_latency_from_must_be_send_or_intended():
    with pytest.raises(ValueError, match="latency_from must be 'send' or 'intended', got 'arrival'"):
        metrics.summarize(result_of([0.1]), latency_from="arrival")
