"""Lesson 13's front ends against a real PostgreSQL.

Every route with every driver, the pool's wait and timeout, faults.

The database's own figures (pool usage, waits) are checked against the client's clock in the same run.
"""

import http.client
import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers import get
from iolab import postgres, registry, servers

REASON = registry.missing("postgres", "tornado_db", "fastapi_db")
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")
ROWS = 2000
T_MS = 150  # one query's pg_sleep: long against a loaded machine's jitter, short for the suite
# Two rounds of T_MS told from one and from three (the margins leave room for a loaded machine, as test_servers does).
ROUND_LOW, ROUND_HIGH = 0.9, 1.6

# Each front end's way to run select pg_sleep(ms / 1000): {how: path without the ms}.
QUERIES = {
    "tornado_db": {how: f"/query?how={how}&ms=" for how in ("blocking", "executor", "pool", "asyncpg")},
    "fastapi_db": {"blocking": "/blocking-query?ms=", "executor": "/sync-query?ms=",
                   "pool": "/async-query?driver=psycopg&ms=", "asyncpg": "/async-query?driver=asyncpg&ms="},
}
FRONT_ENDS = sorted(QUERIES)


@pytest.fixture(scope="module")
def database():
    with servers.serve("postgres") as server:
        postgres.make_table(server.port, ROWS)
        yield server


def fetch(server, path, timeout=10):
    """(status, body, seconds) of one GET on a connection of its own."""
    connection = http.client.HTTPConnection(server.host, server.port, timeout=timeout)
    began = time.perf_counter()
    try:
        status, _, body = get(connection, path)
    finally:
        connection.close()
    return status, body, time.perf_counter() - began


def at_once(server, paths, timeout=10):
    """GET every path at once, each on its own connection: [(status, body, seconds)], and the seconds for them all."""
    began = time.perf_counter()
    with ThreadPoolExecutor(len(paths)) as pool:
        answers = list(pool.map(lambda path: fetch(server, path, timeout), paths))
    return answers, time.perf_counter() - began


def stats(server):
    status, body, _ = fetch(server, "/stats")
    assert status == 200, body
    return json.loads(body)


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_every_way_to_query_answers_with_what_it_did(database, name):
    with servers.serve(name, db_port=database.port) as server:
        for how, path in QUERIES[name].items():
            status, body, _ = fetch(server, path + "20")
            assert status == 200 and "slept 20 ms" in body, (how, body)
        for driver in ("psycopg", "asyncpg"):
            status, body, _ = fetch(server, f"/rows?n=1500&driver={driver}")
            assert (status, body) == (200, f"read 1500 rows ({driver})\n")
            for release in ("late", "early"):
                status, body, _ = fetch(server, f"/held?db_ms=10&other_ms=10&release={release}&driver={driver}")
                assert status == 200 and f"released {release}" in body, body
        figures = stats(server)
        assert figures["psycopg_pool"]["requests_num"] >= 4 and figures["asyncpg_pool"]["requests_num"] >= 4
        assert figures["requests_in_flight"] == 0 and figures["cpu_s"] > 0


BAD_VALUES = [
    ("/query?ms=banana&how=pool", "ms must be a whole number"),
    ("/query?ms=5&how=sideways", "how must be one of blocking, executor, pool, asyncpg, got 'sideways'"),
    ("/query?ms=5", "how is required"),
    ("/rows?n=-1&driver=asyncpg", "n must be between 0 and"),
    ("/rows?n=10&driver=mysql", "driver must be one of psycopg, asyncpg"),
    ("/held?db_ms=5&other_ms=x&release=late", "other_ms must be a whole number"),
    ("/held?db_ms=5&other_ms=5&release=never", "release must be one of late, early"),
]


def test_bad_values_get_a_400_naming_them(database):
    with servers.serve("tornado_db", db_port=database.port) as server:
        for path, words in BAD_VALUES:
            status, body, _ = fetch(server, path)
            assert status == 400 and words in body and body.count("\n") == 1, (path, body)


@pytest.mark.parametrize("name", FRONT_ENDS)
def test_without_a_database_every_query_is_a_503_saying_so(name):
    with servers.serve(name) as server:
        for path in QUERIES[name].values():
            status, body, took = fetch(server, path + "10")
            assert status == 503 and "--db-port" in body and took < 1, body


@pytest.mark.parametrize("name", FRONT_ENDS)
def test_the_blocking_driver_serializes_the_loop_and_the_pools_do_not(database, name):
    """4 queries at once: one after another on the loop (4 rounds), two rounds through pools of 2 (and, in FastAPI,
    through 2 threads; Tornado's executor has min(32, os.cpu_count() + 4) >= 5 threads: one round)."""
    paths = QUERIES[name]
    with servers.serve(name, db_port=database.port, pool=2, **({"threads": 2} if name == "fastapi_db" else {})) as server:
        for path in paths.values():
            fetch(server, path + "0")  # opens the pools, and the connections of the loop and a thread
        rounds = {how: at_once(server, [path + str(T_MS)] * 4)[1] / (T_MS / 1000) for how, path in paths.items()}
    expected = {"blocking": 4, "executor": 2 if name == "fastapi_db" else 1, "pool": 2, "asyncpg": 2}
    for how, rounds_taken in rounds.items():
        assert expected[how] * ROUND_LOW <= rounds_taken < expected[how] * ROUND_HIGH, (how, rounds)


def test_the_pools_own_figures_agree_with_the_clients_clock(database):
    """Little's law on the pool: usage_ms is the connections' busy time, T per query; waits show past P."""
    with servers.serve("tornado_db", db_port=database.port, pool=2) as server:
        for how in ("pool", "asyncpg"):
            fetch(server, f"/query?how={how}&ms=0")
        before = stats(server)
        answers, _ = at_once(server, [f"/query?how=pool&ms={T_MS}"] * 4 + [f"/query?how=asyncpg&ms={T_MS}"] * 4)
        after = stats(server)
    assert [status for status, _, _ in answers] == [200] * 8
    for pool in ("psycopg_pool", "asyncpg_pool"):
        busy_ms = after[pool]["usage_ms"] - before[pool]["usage_ms"]
        waited_ms = after[pool]["requests_wait_ms"] - before[pool]["requests_wait_ms"]
        # Each of 4 queries held its connection at least T; two of them waited a round (T) for one.
        assert 4 * T_MS <= busy_ms < 4 * T_MS * ROUND_HIGH, (pool, busy_ms)
        assert 2 * T_MS * ROUND_LOW <= waited_ms < 2 * T_MS * 2 * ROUND_HIGH, (pool, waited_ms)


@pytest.mark.parametrize("how", ["pool", "asyncpg"])
def test_past_the_acquire_timeout_a_request_gets_a_503_and_without_one_it_waits(database, how):
    with servers.serve("tornado_db", db_port=database.port, pool=1, acquire_timeout_s=0.2) as server:
        fetch(server, f"/query?how={how}&ms=0")
        answers, _ = at_once(server, [f"/query?how={how}&ms=600"] * 2)
    statuses = sorted(status for status, _, _ in answers)
    assert statuses == [200, 503], answers
    (_, body, took), = [answer for answer in answers if answer[0] == 503]
    assert "no connection free" in body and "pool of 1" in body and 0.2 <= took < 0.5, (body, took)
    if how == "asyncpg":  # asyncpg's own default: acquire(timeout=None) waits for ever, so the second waits a round
        with servers.serve("tornado_db", db_port=database.port, pool=1) as server:
            fetch(server, "/query?how=asyncpg&ms=0")
            answers, elapsed = at_once(server, [f"/query?how=asyncpg&ms={T_MS}"] * 2)
        assert [status for status, _, _ in answers] == [200, 200]
        assert 2 * ROUND_LOW <= elapsed / (T_MS / 1000) < 2 * ROUND_HIGH


def test_a_pool_larger_than_max_connections_is_refused_at_once_with_the_reason():
    with (servers.serve("postgres", max_connections=3) as database,
          servers.serve("tornado_db", db_port=database.port, pool=5) as server):
        for how, driver in (("pool", "psycopg"), ("asyncpg", "asyncpg")):
            status, body, took = fetch(server, f"/query?how={how}&ms=1")
            assert status == 503 and f"could not open the {driver} pool of 5" in body, body
            assert "too many clients already" in body and took < 1, (body, took)


@pytest.mark.parametrize("name", FRONT_ENDS)
def test_statement_timeout_cancels_a_long_query_with_a_503(database, name):
    with servers.serve(name, db_port=database.port, statement_timeout_ms=100) as server:
        for how, path in QUERIES[name].items():
            status, body, took = fetch(server, path + "2000")
            assert status == 503 and "statement_timeout (100 ms)" in body and took < 1, (how, body, took)


@pytest.mark.parametrize("name", FRONT_ENDS)
def test_a_database_killed_mid_run_gets_503s_at_once_and_the_front_end_recovers(name):
    paths = QUERIES[name]
    with servers.serve("postgres") as first:
        port = first.port
        server = servers.start(name, db_port=port, pool=2)
        try:
            for path in paths.values():
                assert fetch(server, path + "0")[0] == 200
            # Killed with queries in flight: they and every query after answer 503 at once, none hangs.
            with ThreadPoolExecutor(4) as pool:
                flying = [pool.submit(fetch, server, paths[how] + "3000") for how in ("pool", "asyncpg", "executor")]
                time.sleep(0.3)
                first.stop()
                in_flight = [future.result() for future in flying]
            after = [fetch(server, path + "10") for path in paths.values()]
            for status, body, took in after:
                assert status == 503 and "database unreachable" in body and took < 1, (body, took)
            for status, body, took in in_flight:
                assert status == 503 and took < 1.5, (body, took)
            with servers.serve("postgres", port=port):
                began = time.monotonic()
                while time.monotonic() - began < 5:
                    if all(fetch(server, path + "0")[0] == 200 for path in paths.values()):
                        break
                    time.sleep(0.05)
                recovered_s = time.monotonic() - began
                assert recovered_s < 5, "the front end did not recover within 5 s of the database's return"
                assert stats(server)["pool_generation"] == 1
        finally:
            server.stop()


def test_a_database_that_stops_answering_gets_503s_at_the_clients_deadline():
    """SIGSTOPped, PostgreSQL cannot enforce statement_timeout: the front end's own deadline (1 s after it) must."""
    import psutil

    with (servers.serve("postgres") as database,
          servers.serve("tornado_db", db_port=database.port, statement_timeout_ms=100) as server):
        paths = QUERIES["tornado_db"]
        for path in paths.values():
            assert fetch(server, path + "0")[0] == 200
        stopped = psutil.Process(database.pid).children(recursive=True)
        for process in stopped:
            process.suspend()
        try:
            answers, _ = at_once(server, [path + "10" for path in paths.values()])
        finally:
            for process in stopped:
                process.resume()
        for status, body, took in answers:
            # The deadline is 0.1 + 1 s; the blocking one may hold the loop that long before the others start.
            assert status == 503 and "no answer from the database within 1.1 s" in body and took < 2 * 1.1 + 0.5, (
                body, took)
        assert [fetch(server, path + "0")[0] for path in paths.values()] == [200] * 4
