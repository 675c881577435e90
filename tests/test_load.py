"""The load generator against real servers.

Every request recorded, every bound respected.
"""

import socket
import time

import psutil
import pytest

from iolab import load, metrics
from iolab.params import ParameterError

# 10 users whose 250 ms waits overlap against 10 that queue: 10 times the throughput in theory.
# Start-up and client overhead weigh more on the overlapped run's short duration, and a loaded
# machine more still; the upper bound allows for a short run's noise.
OVERLAP_RATIO_AT_LEAST = 6
OVERLAP_RATIO_AT_MOST = 11
STOPPED_WITHIN_S = 6  # a 1 s duration limit, plus starting the client process and stopping it for sure
# A 0.3 s timeout fires after at least the client's clock granularity less, and late by at most a
# loaded machine's scheduling, never as late as the 3 s answer it gave up on.
TIMEOUT_FIRED_AFTER_S = 0.25
TIMEOUT_FIRED_BEFORE_S = 1.5
# Two requests 0.2 s apart: a timer's jitter either way, more on a loaded machine.
GAP_AT_LEAST_S = 0.18
GAP_AT_MOST_S = 0.3
CLOSED_LOOP_KINDS = ("closed_async", "closed_raw", "closed_sync")


@pytest.mark.parametrize("kind", CLOSED_LOOP_KINDS)
@pytest.mark.parametrize("keep_alive", [True, False])
def test_every_request_is_recorded(tornado, kind, keep_alive):
    result = load.run_load(tornado.url + "/", requests=60, concurrency=6, kind=kind, keep_alive=keep_alive)
    assert result.stop_reason == "completed"
    assert len(result.samples) == 60
    assert all(s.status == 200 and s.bytes == len(b"hello world\n") and s.error is None for s in result.samples)
    assert all(0 <= s.start <= s.end <= result.duration_s for s in result.samples)
    assert {s.user for s in result.samples} == set(range(6))
    # Each user keeps its own connection, or opens a new one for every request.
    assert len({s.connection for s in result.samples}) == (6 if keep_alive else 60)
    assert all(s.intended == s.start for s in result.samples), "a closed loop sends when it means to"


@pytest.mark.parametrize("kind", CLOSED_LOOP_KINDS)
def test_concurrency_is_never_exceeded(tornado, kind):
    result = load.run_load(tornado.url + "/async-sleep?ms=50", requests=40, concurrency=5, kind=kind)
    _, in_flight = metrics.in_flight_over_time(result.samples, step_s=0.005)
    assert max(in_flight) == 5


@pytest.mark.slow
@pytest.mark.parametrize("kind", CLOSED_LOOP_KINDS)
def test_async_server_overlaps_waits_and_sync_server_does_not(tornado, kind):
    """10 users, 100 ms each: about 100 req/s when the waits overlap, 10 when they queue."""
    overlapped = load.run_load(tornado.url + "/async-sleep?ms=100", requests=30, concurrency=10, kind=kind)
    queued = load.run_load(tornado.url + "/sync-sleep?ms=100", requests=10, concurrency=10, kind=kind)
    ratio = metrics.summarize(overlapped).rps / metrics.summarize(queued).rps
    assert OVERLAP_RATIO_AT_LEAST < ratio < OVERLAP_RATIO_AT_MOST, f"async/sync throughput ratio {ratio:.1f}, expected near 10"


def test_duration_limit_ends_the_run(tornado):
    began = time.monotonic()
    result = load.run_load(
        tornado.url + "/async-sleep?ms=200", requests=100_000, concurrency=4, max_duration_s=1.0
    )
    assert time.monotonic() - began < STOPPED_WITHIN_S
    assert "duration limit" in result.stop_reason
    assert 4 <= len(result.samples) <= 4 * (1.0 / 0.2 + 1)
    assert all(s.start < 1.0 for s in result.samples)


def test_request_timeout_is_recorded_as_an_error(tornado):
    result = load.run_load(tornado.url + "/async-sleep?ms=3000", requests=2, concurrency=2, timeout_s=0.3)
    assert [s.error for s in result.samples] == ["timeout", "timeout"]
    assert all(TIMEOUT_FIRED_AFTER_S < s.latency < TIMEOUT_FIRED_BEFORE_S for s in result.samples)


def test_progress_is_visible_while_the_run_goes(tornado):
    run = load.start_load(tornado.url + "/async-sleep?ms=100", requests=30, concurrency=3)
    seen = []
    while not run.done():
        seen.append(len(run.samples()))
        time.sleep(0.05)
    result = run.wait()
    assert len(result.samples) == 30
    assert any(0 < count < 30 for count in seen), "no partial progress was ever visible"


def test_stop_keeps_what_was_recorded(tornado):
    run = load.start_load(tornado.url + "/async-sleep?ms=100", requests=1000, concurrency=2)
    # Stop once two answers are in, however long the client took to start on a busy machine (a fixed sleep was not
    # always enough), and long before its 1,000 requests (50 s at this pace) could be.
    deadline = time.monotonic() + 30
    while len(run.samples()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    run.stop()
    result = run.result()
    assert result.stop_reason == "stopped"
    assert 2 <= len(result.samples) < 1000
    assert run.process.poll() is not None


def test_fire_staggered_keeps_the_gap(tornado):
    first, second = load.fire_staggered([tornado.url + "/", tornado.url + "/"], gap_s=0.2)
    assert first.status == second.status == 200
    assert GAP_AT_LEAST_S < second.start - first.start < GAP_AT_MOST_S


@pytest.mark.parametrize(
    "spec, words",
    [
        ({"concurrency": 0}, ["concurrency", "between 1 and", "got 0"]),
        ({"concurrency": -3}, ["concurrency", "got -3"]),
        ({"requests": 0}, ["requests", "between 1 and", "got 0"]),
        ({"requests": 5, "concurrency": 10}, ["requests must be at least concurrency (10)", "got 5"]),
        ({"timeout_s": 0}, ["timeout_s", "got 0"]),
        ({"max_duration_s": 10**6}, ["max_duration_s", "got 1000000"]),
        ({"kind": "curl"}, ["kind must be one of", "'curl'"]),
        ({"concurrency": 1_000_000, "requests": 1_000_000}, ["concurrency", "got 1000000"]),
        ({"concurrency": 2000, "requests": 2000, "kind": "closed_sync"}, ["at most 1000 with the sync client"]),
        ({"connect_first": True, "kind": "closed_async"}, ["connect_first is not an option of the 'closed_async'", "closed_raw"]),
        ({"connect_first": True, "kind": "closed_raw", "keep_alive": False}, ["connect_first", "keep_alive=False"]),
        ({"think_s": 1, "kind": "closed_sync"}, ["think_s is not an option of the 'closed_sync'", "closed_async, closed_raw"]),
    ],
)
def test_bad_parameters_are_named_with_their_range(spec, words):
    with pytest.raises(load.LoadParameterError) as raised:
        load.start_load("http://127.0.0.1:9/", **spec)
    for word in words:
        assert word in str(raised.value)


@pytest.mark.parametrize(
    "old, instead",
    [
        ({"loop": "open", "rate_rps": 10}, "kind='open'"),
        ({"client": "raw"}, "kind='closed_raw'"),
        ({"loop": "closed", "client": "sync"}, "kind='closed_sync'"),
        ({"loop": "pipelined", "pipeline_depth": 4}, "kind='pipelined'"),
        ({"loop": "half-open"}, "give kind= (the kinds: batch, closed_async"),
    ],
)
def test_the_old_keywords_are_refused_with_the_kind_that_says_the_same(old, instead):
    # One way to choose a client: loop= and client= are refused by name, whatever else is given.
    for given in (old, {**old, "kind": "closed_async"}):
        with pytest.raises(load.LoadParameterError) as raised:
            load.LoadSpec("http://127.0.0.1:9/", **given)
        said = str(raised.value)
        assert instead in said and "a run names its client with kind= alone" in said, said
        assert all(f"{keyword}={value!r}" in said for keyword, value in old.items() if keyword in ("loop", "client"))
    assert isinstance(raised.value, ParameterError)


def test_concurrency_is_checked_against_the_file_limit(monkeypatch):
    monkeypatch.setattr(load.resource, "getrlimit", lambda which: (256, 256))
    with pytest.raises(load.LoadParameterError, match="RLIMIT_NOFILE is 256"):
        load.start_load("http://127.0.0.1:9/", requests=500, concurrency=500)


@pytest.mark.parametrize("url", ["http://10.0.0.1:80/", "http://example.com/", "http://0.0.0.0:80/", "ftp://127.0.0.1/"])
def test_only_loopback_urls_are_accepted(url):
    with pytest.raises(load.LoadParameterError, match="url"):
        load.start_load(url, requests=1, concurrency=1)


@pytest.mark.parametrize("connect_first, connected", [(True, 8), (False, 0)], ids=["connect-first", "connect-on-send"])
def test_connect_first_decides_whether_the_users_are_connected_at_the_go(tornado, connect_first, connected):
    # The hook runs just before the go: with connect_first every user's handshake is done. Counted on the server's
    # side by port, not by the server's process, which may not have accepted the last ones from its queue yet.
    seen = []

    def count_connections():
        seen.append(sum(
            1 for c in psutil.net_connections("tcp") if c.status == "ESTABLISHED" and c.laddr.port == tornado.port
        ))

    result = load.run_load(
        tornado.url + "/", requests=40, concurrency=8, kind="closed_raw", connect_first=connect_first,
        before_go=count_connections,
    )
    assert result.stop_reason == "completed" and len(result.samples) == 40
    assert seen == [connected], seen
    # Each user keeps one connection all run: with connect_first, the one it opened ahead.
    assert len({s.connection for s in result.samples}) == 8


def test_a_failing_look_before_the_go_stops_the_run_with_its_reason(tornado):
    def broken():
        raise RuntimeError("the server could not be read")

    started = time.monotonic()
    result = load.run_load(tornado.url + "/", requests=40, concurrency=4, kind="closed_raw", before_go=broken)
    assert "before the go: RuntimeError: the server could not be read" in result.stop_reason
    assert len(result.samples) == 0 and time.monotonic() - started < STOPPED_WITHIN_S


def test_connect_first_to_a_port_nobody_listens_on_records_each_refusal_and_ends():
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    result = load.run_load(f"http://127.0.0.1:{port}/", requests=12, concurrency=4, kind="closed_raw", connect_first=True)
    assert len(result.samples) == 12 and {s.error for s in result.samples} == {"refused"}, result.samples[:3]
    assert time.monotonic() - started < STOPPED_WITHIN_S


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["closed_raw", "closed_async"])
def test_users_who_think_send_at_users_over_think_time(tornado, kind):
    # 4 users thinking 50 ms after each ~1 ms answer: about 4 / 0.051 = 78 requests per second.
    result = load.run_load(tornado.url + "/", kind=kind, concurrency=4, think_s=0.05, requests=10_000,
                           max_duration_s=1.5)
    rate = len(result.samples) / result.duration_s
    assert 50 < rate <= 4 / 0.05 * 1.05, rate
    # Each user's next request leaves at least the think time after its last answer.
    for user in range(4):
        mine = sorted((s for s in result.samples if s.user == user), key=lambda s: s.start)
        assert all(later.start - earlier.end >= 0.049 for earlier, later in zip(mine, mine[1:]))


def test_think_time_is_for_the_closed_loop_only():
    with pytest.raises(load.LoadParameterError, match="think_s is not an option of the 'open' client kind"):
        load.LoadSpec("http://127.0.0.1:1/", kind="open", rate_rps=10, think_s=0.1).validate()
    with pytest.raises(load.LoadParameterError, match="think_s must be between"):
        load.LoadSpec("http://127.0.0.1:1/", think_s=-1).validate()
