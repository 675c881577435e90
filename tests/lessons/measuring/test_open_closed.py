"""Lesson 09's open vs closed: the service time each model takes, and the growth past 1/D."""

import pytest

from helpers import run_with_file_limits
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


def test_a_queue_fed_the_runs_sends_waits_for_what_the_one_before_left():
    # 10 ms each: the second, sent 4 ms after the first, waits 6 ms; the third, sent 30 ms later, finds it empty.
    fed = open_closed.queue_fed([(0.004, 99.0), (0.0, 99.0), (0.034, 99.0)], 0.010)
    assert fed == [(0.0, pytest.approx(10.0)), (0.004, pytest.approx(16.0)), (0.034, pytest.approx(10.0))]


def test_a_requests_own_time_comes_from_those_that_met_an_empty_server_and_the_waits_add_to_it():
    # Five lone requests 100 ms apart measured 11 ms each (10 ms of service, 1 ms of path around it); then a pair
    # 4 ms apart, the second waiting 6 ms behind the first.
    points = [(0.1 * i, 11.0) for i in range(5)] + [(0.6, 11.0), (0.604, 17.0)]
    assert open_closed.own_time_s(points, 0.010) == pytest.approx(0.011)
    assert open_closed.fed_mean_ms(points, 0.010, 0.011) == pytest.approx(11.0 + 6.0 / 7)
    # Waits built at 8 ms a request: the second of the pair waits 4 ms, not 6.
    assert open_closed.fed_mean_ms(points, 0.008, 0.011) == pytest.approx(11.0 + 4.0 / 7)
    # Too few met an empty server to tell: the service time itself.
    assert open_closed.own_time_s(points[-2:], 0.010) == 0.010


def test_the_noise_of_a_runs_mean_by_batch_means():
    # Five batches whose means are 1, 2, 3, 4, 5 ms: their standard deviation over sqrt(5).
    latencies = [float(value) for value in (1, 2, 3, 4, 5) for _ in range(4)]
    assert open_closed.mean_noise_ms(latencies) == pytest.approx((2.5 ** 0.5) / 5 ** 0.5)
    assert open_closed.mean_noise_ms([3.0] * 50) == 0.0
    assert open_closed.mean_noise_ms([1.0, 2.0]) == float("inf")  # too few to measure their own noise


ROOM_FOR = """
import resource
from iolab import servers
from iolab.lessons.measuring import open_closed
server = servers.start("tornado_app")
try:
    fits, note = open_closed.room_for(server, 1000)
    print(fits, resource.getrlimit(resource.RLIMIT_NOFILE)[0], resource.prlimit(server.pid, resource.RLIMIT_NOFILE)[0])
    print(note)
finally:
    server.stop()
"""


def test_the_open_loop_makes_room_for_its_connections_on_a_laptops_limits():
    # Started under a soft limit of 1024, the server and this kernel are both raised to the hard limit, said once.
    out = run_with_file_limits(1024, 20_000, ROOM_FOR)
    assert out[:3] == ["1000", "20000", "20000"], out
    assert "(RLIMIT_NOFILE) was 1,024. This kernel and the server raised it to the hard limit, 20,000;" in " ".join(out)
    # Under a hard limit of 600, the open loop keeps what fits, and says so.
    out = run_with_file_limits(600, 600, ROOM_FOR)
    assert out[:3] == ["536", "600", "600"], out
    assert "So the open loop keeps at most 536 connections, not 1,000." in " ".join(out), out
