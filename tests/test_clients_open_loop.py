"""The open loop against real servers.

The schedule is kept, outstanding requests are bounded, coordinated omission shows.
"""

import statistics

import pytest

from iolab import load, metrics
from iolab.clients.open_loop import schedule
from iolab.clients.shares import split

RATE_RPS = 40
# The server serves /sync-sleep one request at a time: at SERVICE_MS each it keeps up with 1000/SERVICE_MS
# requests per second, half the rate sent, so every request waits SERVICE_MS - 1/rate longer than the one before.
SERVICE_MS = 50
REQUESTS = 24
# The backlog predicted from the service time measured in the same run; the loaded machine slows both the
# server (more backlog) and the client's timers (less), so the measured lag is held to a wide band around it.
BACKLOG_WITHIN = (0.5, 2.0)
# The actual latency does not grow with the backlog: the last requests' median stays within this factor of the first's.
ACTUAL_LATENCY_GROWTH_AT_MOST = 2.0


def median(values):
    return statistics.median(values)


def test_fixed_schedule_sends_every_one_over_rate_split_across_processes():
    merged = sorted(
        item for p in range(3) for item in schedule("fixed", 100, split(10, 3, p), 60, process=p, processes=3)
    )
    assert [user for user, _ in merged] == list(range(10))
    assert [intended for _, intended in merged] == pytest.approx([k / 100 for k in range(10)])


def test_schedule_stops_at_the_duration_limit():
    assert len(list(schedule("fixed", 100, 1000, 0.5))) == 50
    assert all(intended < 0.5 for _, intended in schedule("poisson", 100, 1000, 0.5, seed=1))


def test_poisson_arrivals_come_at_the_rate_on_average_and_repeat_with_a_seed():
    arrivals = [intended for _, intended in schedule("poisson", 1000, 2000, 60, seed=7)]
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    # 2000 exponential gaps: their mean is within 10% of 1/rate unless something is wrong (about 5 standard errors).
    assert statistics.fmean(gaps) == pytest.approx(1 / 1000, rel=0.1)
    # Exponential gaps: the standard deviation equals the mean (a fixed schedule's would be 0).
    assert statistics.stdev(gaps) == pytest.approx(statistics.fmean(gaps), rel=0.2)
    assert arrivals == [intended for _, intended in schedule("poisson", 1000, 2000, 60, seed=7)]


@pytest.mark.slow
def test_a_slow_server_makes_coordinated_omission_visible(tornado):
    """One connection, a server half as fast as the schedule: sends fall behind, and only the intended clock sees it."""
    result = load.run_load(
        tornado.url + f"/sync-sleep?ms={SERVICE_MS}", kind="open", rate_rps=RATE_RPS, requests=REQUESTS,
        concurrency=1, timeout_s=10,
    )
    assert result.stop_reason == "completed" and result.errors == 0
    samples = sorted(result.samples, key=lambda s: s.user)
    assert [s.intended for s in samples] == pytest.approx([k / RATE_RPS for k in range(REQUESTS)]), "the schedule"
    service_s = median([s.latency for s in samples])
    quarter = REQUESTS // 4
    first, last = samples[:quarter], samples[-quarter:]
    assert median([s.latency for s in last]) < ACTUAL_LATENCY_GROWTH_AT_MOST * median([s.latency for s in first])
    # Little's law for the client's queue: request k leaves k * (service - 1/rate) after its intended time.
    predicted = (REQUESTS - 1) * (service_s - 1 / RATE_RPS)
    low, high = BACKLOG_WITHIN
    assert low * predicted < samples[-1].send_lag < high * predicted, (samples[-1].send_lag, predicted)
    from_intended = metrics.summarize(result, latency_from="intended")
    from_send = metrics.summarize(result)
    assert from_intended.latency_from == "intended"
    assert from_intended.max_ms > 3 * from_send.p50_ms, "the intended clock shows the wait the send clock hides"


@pytest.mark.slow
def test_a_server_that_keeps_up_keeps_the_schedule(tornado):
    result = load.run_load(
        tornado.url + f"/async-sleep?ms={SERVICE_MS}", kind="open", rate_rps=RATE_RPS, requests=REQUESTS,
        concurrency=10, timeout_s=10,
    )
    assert result.errors == 0 and len(result.samples) == REQUESTS
    service_s = median([s.latency for s in result.samples])
    lags = sorted(s.send_lag for s in result.samples)
    # Waits overlap, and 10 connections are more than the rate x service = 2 outstanding that Little's law predicts:
    # no request waits for a connection, so none leaves a service time late (a loaded machine may delay a few
    # sends, never most of them), and none leaves early, as a closed loop of 10 users would.
    assert lags[0] >= 0, "a request left before its intended time"
    assert median(lags) < service_s / 10 and lags[-1] < service_s, (median(lags), lags[-1], service_s)
    _, in_flight = metrics.in_flight_over_time(result.samples, step_s=0.005)
    assert max(in_flight) <= 10


def test_outstanding_requests_never_exceed_the_connections(tornado):
    result = load.run_load(
        tornado.url + "/async-sleep?ms=200", kind="open", rate_rps=50, requests=30, concurrency=3, timeout_s=10,
        schedule="poisson", seed=3,
    )
    assert len(result.samples) == 30 and result.errors == 0
    _, in_flight = metrics.in_flight_over_time(result.samples, step_s=0.002)
    assert max(in_flight) == 3, "the bound is reached (arrivals outpace 3 x 200 ms) and never passed"
    assert len({s.connection for s in result.samples}) == 3, "kept-alive connections, opened before the clock starts"


def test_every_open_loop_request_times_out(tornado):
    result = load.run_load(
        tornado.url + "/async-sleep?ms=3000", kind="open", rate_rps=20, requests=2, concurrency=2, timeout_s=0.3
    )
    assert [s.error for s in result.samples] == ["timeout", "timeout"]
    assert all(0.25 < s.latency < 1.5 for s in result.samples)


def test_open_loop_against_nothing_records_refusals(tornado):
    url = tornado.url.rsplit(":", 1)[0] + ":9/"  # the discard port: nothing listens on loopback there
    result = load.run_load(url, kind="open", rate_rps=100, requests=10, concurrency=2, timeout_s=2)
    assert len(result.samples) == 10
    assert metrics.summarize(result).error_kinds == {"refused": 10}
