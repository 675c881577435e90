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
    return LoadResult(LoadSpec("http://127.0.0.1:1/", requests=len(latencies),
                               concurrency=concurrency), samples, duration, "completed")


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
    result = LoadResult(LoadSpec("http://127.0.0.1:1/", requests=4, concurrency=1), samples, 1.0, "completed")
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
    summary = metrics.summarize(LoadResult(LoadSpec("http://127.0.0.1:1/", requests=1,
                                                    concurrency=1), [], 0.0, "stopped"))
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


# --- Corrected recording (coordinated omission) and the warnings a report leads with -----------------


@pytest.mark.parametrize("latencies, interval, expected", [
    # Nothing longer than the interval: nothing added.
    ([1, 2, 2], 2, [1, 2, 2]),
    # 10 with an interval of 2: the requests a user on schedule would have sent meanwhile waited 8, 6, 4 and 2.
    ([1, 1, 1, 10], 2, [1, 1, 1, 2, 4, 6, 8, 10]),
    # 5 with an interval of 2: 3 is added; 1 is below one interval, so it is not (HdrHistogram's Java rule).
    ([5], 2, [3, 5]),
    # HdrHistogram's README case in miniature: a sample every 10 ms, 1 ms each, then one stall of 100 ms.
    ([1] * 9 + [100], 10, [1] * 9 + [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]),
])
def test_corrected_recording_by_hand(latencies, interval, expected):
    assert metrics.corrected_for_omission(latencies, interval) == expected


def test_corrected_recording_moves_the_p99_to_the_stall():
    # A closed loop: 990 requests of 1 ms and 10 users stalled 1 s, each user sending every 50 ms.
    latencies = [1.0] * 990 + [1000.0] * 10
    assert metrics.percentile(sorted(latencies), 0.99) == 1.0
    corrected = metrics.corrected_for_omission(latencies, 50.0)
    assert len(corrected) == 1000 + 10 * 19  # 950, 900, ..., 50 for each stalled user
    # The slowest 1% of 1190 is 12 values: the ten 1000s and two 950s.
    assert metrics.percentile(corrected, 0.99) == 950.0


def test_corrected_recording_refuses_a_useless_interval():
    with pytest.raises(ValueError, match="expected_interval"):
        metrics.corrected_for_omission([1, 2], 0)


def summary_of(samples, duration=1.0):
    spec = LoadSpec("http://127.0.0.1:1/", requests=len(samples), concurrency=1)
    return metrics.summarize(LoadResult(spec, samples, duration, "completed"))


def test_a_run_of_errors_says_so_in_its_first_words():
    samples = [Sample(0.0, 0.001, 405, 10, None, 0)] * 98 + [Sample(0.0, 0.5, 0, 0, "timeout", 0)] * 2
    summary = summary_of(samples)
    warnings = summary.warnings()
    assert warnings[0].startswith("98 of 100 answers were not 2xx (98 × 405)")
    assert warnings[1] == "2 of 100 requests failed without an answer"
    assert summary.headline().startswith("WARNING: 98 of 100 answers were not 2xx")


def test_a_clean_run_has_no_warning():
    summary = summary_of([Sample(0.0, 0.001, 200, 12, None, 0)] * 10)
    assert summary.warnings() == [] and not summary.headline().startswith("WARNING")


def test_a_saturated_client_is_named():
    clean = summary_of([Sample(0.0, 0.001, 200, 12, None, 0)] * 1000)
    # 1000 requests in 1 s at 0.95 ms of client CPU each: the client was busy 95% of the run.
    busy = metrics.Summary(**{**clean.as_dict(), "client_demand_ms": 0.95})
    assert busy.client_utilization == pytest.approx(0.95)
    assert "the client was saturated" in busy.headline()
    idle = metrics.Summary(**{**clean.as_dict(), "client_demand_ms": 0.5})
    assert "saturated" not in idle.headline()
    assert "saturated" in metrics.Summary(**{**clean.as_dict(), "client_demand_ms": 0.85}).headline()
    # On a CPU half the time and waiting for one most of the rest (a CPU shared with the server): saturated too.
    crowded = metrics.Summary(**{**clean.as_dict(), "client_demand_ms": 0.5, "client_queued_ms": 0.35})
    assert crowded.client_utilization == pytest.approx(0.5) and crowded.client_runnable == pytest.approx(0.85)
    assert "saturated" in crowded.headline()
    two = metrics.Summary(**{**clean.as_dict(), "client_demand_ms": 0.95, "client_processes": 2})
    assert two.client_utilization == pytest.approx(0.475) and "saturated" not in two.headline()


def test_a_client_that_took_most_of_a_full_cpu_is_named():
    clean = summary_of([Sample(0.0, 0.001, 200, 12, None, 0)] * 1000)
    # One CPU, full: the server 0.28 ms per request, the client 0.72 ms, 1000 requests in 1 s.
    shared = metrics.Summary(**{**clean.as_dict(), "cores": 1, "utilization": 0.28, "demand_ms": 0.28,
                                "client_demand_ms": 0.72})
    assert shared.client_took_the_cpus() and "the CPUs were full and the client took most" in shared.headline()
    # Two CPUs: the same run leaves one idle, so neither set the pace by CPU.
    roomy = metrics.Summary(**{**shared.as_dict(), "cores": 2})
    assert not roomy.client_took_the_cpus() and not roomy.warnings()
    # The server took most of it: the server set the pace, as a benchmark wants.
    server_bound = metrics.Summary(**{**shared.as_dict(), "utilization": 0.72, "demand_ms": 0.72, "client_demand_ms": 0.28})
    assert not server_bound.warnings()


def test_a_line_fit_gives_its_noise_from_the_points_own_scatter():
    slope, intercept, slope_se, spread = metrics.line_fit([0, 1, 2, 3], [1, 3, 5, 7])
    assert (slope, intercept) == pytest.approx((2, 1)) and slope_se == pytest.approx(0, abs=1e-9)
    slope, _, slope_se, spread = metrics.line_fit([0, 1, 2, 3], [0, 2, 2, 4])  # residuals -0.2, 0.6, -0.6, 0.2
    assert slope == pytest.approx(1.2) and spread == pytest.approx((0.8 / 2) ** 0.5)
    assert slope_se == pytest.approx(spread / 5**0.5)
    assert metrics.line_fit([2, 2, 2], [1, 2, 3])[2] == float("inf")  # no spread in x: the slope is unknown
