"""Lesson 07's wrk scene.

Wrk's timeouts read from its report, and four blocking workers pushed past wrk's timeout as
predicted.
"""

import pytest

from iolab import benchtools, environment
from iolab.lessons.c10k import scene

WRK_REPORT = """Running 5s test @ http://127.0.0.1:46033/sync-sleep?ms=10
  2 threads and 1000 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.00s   578.92ms   2.00s    57.75%
    Req/Sec   193.24     92.40   363.00     63.95%
  Latency Distribution
     50%    1.00s
     75%    1.50s
     90%    1.80s
     99%    1.98s
  1757 requests in 5.07s, 295.12KB read
  Socket errors: connect 0, read 0, write 0, timeout 1054
Requests/sec:    346.32
Transfer/sec:     58.17KB
"""


def test_wrk_timeouts_are_counted_apart_from_its_latency():
    report = benchtools.parse_wrk(WRK_REPORT)
    assert report["timeouts"] == 1054 and report["requests"] == 1757
    assert report["mean_ms"] == 1000.0 and report["max_ms"] == 2000.0
    assert report["percentiles_ms"] == {50: 1000.0, 75: 1500.0, 90: 1800.0, 99: 1980.0}


def test_handler_wait_puts_blocking_workers_past_the_timeout():
    wait_ms = scene.handler_wait_ms(1000, workers=4, timeout_s=2)
    assert wait_ms == 12  # R = C·Z/W = 1000 × 12 ms / 4 = 3 s = 1.5 × 2 s
    assert scene.handler_wait_ms(200, workers=4, timeout_s=1) == 30


@pytest.mark.parametrize("connections, timeout_s", [(10, 1), (10, 30), (1000, 2), (3333, 1), (5000, 1), (5000, 30)])
def test_the_wait_is_rounded_up_so_the_requests_wait_past_the_designed_multiple(connections, timeout_s):
    # At 5,000 connections and 1 s, Z = 1.2 ms: rounded to 1 ms it would put R at 1.25 s, the old edge.
    wait_ms = scene.handler_wait_ms(connections, workers=4, timeout_s=timeout_s)
    assert connections * wait_ms / 4 / 1000 >= scene.OVER_TIMEOUT * timeout_s


@pytest.mark.slow
def test_the_scene_on_four_sync_workers_and_tornado():
    reason = scene.missing_reason("gunicorn_app")  # wrk, gunicorn or the registry entry
    if reason:
        pytest.skip(reason)
    environment.raise_file_limit()
    connections, timeout_s = 100, 1
    wait_ms = scene.handler_wait_ms(connections, workers=4, timeout_s=timeout_s)
    runs = [scene.run(label, name, options, connections=connections, duration_s=2, wait_ms=wait_ms,
                      timeout_s=timeout_s) for label, (name, options) in scene.LINEUP.items()]
    sync, tornado = runs
    assert sync.serves_at_once == 4 and tornado.serves_at_once is None
    assert sync.path.startswith("/sync-sleep") and tornado.path.startswith("/async-sleep")
    for run in runs:
        assert run.wrk["max_ms"] <= timeout_s * 1000 * 1.01  # nothing slower than the timeout in wrk's figures
        assert len(run.lab_latencies_ms) == 2 * connections and run.lab.errors == 0
    assert sync.lab.rps <= 1.02 * sync.bound_rps
    assert sync.lab_over_timeout >= connections  # the second round waits C·Z/W = 1.5 s, all of it
    assert sync.wrk["timeouts"] > 0
    row = sync.row()
    assert row["wrk_timeouts"] == sync.wrk["timeouts"] and row["predicted_latency_s"] == pytest.approx(1.5)
