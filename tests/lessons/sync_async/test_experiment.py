"""Lesson 02's experiment.

Every corner's throughput inside the bounds its own CPU gives; the listen backlog while A sleeps.
"""

import math
import socket

import pytest

from iolab import claims, listening, servers
from iolab.lessons.sync_async import backlog, experiment


@pytest.fixture(scope="module")
def corners():
    # One server for every corner, as the lesson uses one; about 25 s in all.
    with servers.serve("tornado_app") as server:
        yield {(m.mode, m.delay_ms, m.summary.concurrency): m for m in experiment.run_corners(server)}


@pytest.mark.slow
@pytest.mark.parametrize("mode, delay_ms, users, requests", experiment.CORNERS, ids=lambda value: str(value))
def test_throughput_lies_within_the_bounds_from_the_measured_cpu(corners, mode, delay_ms, users, requests):
    measured = corners[mode, delay_ms, users]
    s, p = measured.summary, measured.prediction
    assert s.errors == 0 and s.completed == requests, s.error_kinds
    assert s.demand_ms > 0 and s.cores >= 1, "the server's CPU was not measured"
    assert p.low_rps <= p.in_step_rps <= p.high_rps
    assert measured.in_band, (
        f"{s.rps:.3f} req/s outside {p.low_rps:.3f} .. {p.high_rps:.3f} (D {s.demand_ms:.3f} ms,"
        f" queued {s.queued_ms:.3f} ms, client {s.client_demand_ms:.3f} ms)"
    )
    # The median request waits at least its wait and its CPU, at most for all the others. (Not the slowest one: an event
    # loop does not take ready requests strictly in order, so one unlucky request can be passed more than once.)
    fastest_ms, slowest_ms = experiment.percentile_band_ms(measured)
    assert 0.99 * fastest_ms <= s.p50_ms <= 1.02 * slowest_ms + 5, (s.p50_ms, fastest_ms, slowest_ms)


@pytest.mark.slow
def test_the_bound_is_tight_where_theory_says_it_is(corners):
    # A lone user, and the article's 40 users waiting a second: nothing queues, so the optimistic bound is nearly met.
    # A miss the run's neighbours explain (they held the CPUs more than the 5% margin, enough for the miss) is the
    # machine's, as the lesson's claims judge it (iolab.claims.others_explain); on a quiet run nothing is excused.
    for key in (("async", 1000, 1), ("async", 1000, 40), ("sync", 1000, 1)):
        measured = corners[key]
        rps, high = measured.summary.rps, measured.prediction.high_rps
        if rps >= 0.95 * high:
            continue
        others = measured.others.others_share if measured.others else None
        assert claims.others_explain(others, rps, 0.95 * high, math.inf, "below", high), measured.row()


@pytest.mark.parametrize("with_ss", [True, False], ids=["ss", "proc"])
def test_the_listen_queue_counts_connections_not_yet_accepted(with_ss, monkeypatch):
    if not with_ss:
        monkeypatch.setattr(listening, "find_program", lambda name: None)
    elif listening.find_program("ss") is None:
        pytest.skip("ss (iproute2) is not installed")
    with socket.create_server(("127.0.0.1", 0), backlog=7) as listener:
        port = listener.getsockname()[1]
        assert backlog.listen_queue(port).waiting == 0
        with socket.create_connection(("127.0.0.1", port)), socket.create_connection(("127.0.0.1", port)):
            reading = backlog.listen_queue(port)
            assert reading.waiting == 2
            assert reading.limit == (7 if with_ss else None)


def test_new_connections_wait_in_the_backlog_while_the_blocking_handler_sleeps():
    with servers.serve("tornado_app") as server:
        knocked = backlog.knock_while_asleep(server.host, server.port, sleep_ms=500, knocks=3)
    # The kernel completed every handshake while the thread slept; they waited until it woke, then all were accepted.
    assert knocked.connected_ms[-1] < knocked.answered_ms, knocked
    assert knocked.most_waiting == 3 and knocked.waiting_after == 0, knocked.readings
    assert knocked.answered_ms >= 500
