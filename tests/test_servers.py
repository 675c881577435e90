"""Every server in servers/ against the server contract, and the iolab.servers launcher that runs them."""

import http.client
import os
import signal
import socket
import time

import pytest

from helpers import get, start_by_hand
from iolab import contract, registry, servers

# Four 300 ms requests on two threads take two rounds, 0.6 s. Quicker, and more than two ran
# at once (the clock's jitter aside); the upper bound allows a loaded machine, not a pool of four.
TWO_ROUNDS_AT_LEAST_S = 0.55
TWO_ROUNDS_AT_MOST_S = 1.5


@pytest.mark.parametrize("name", registry.names())
def test_server_follows_the_contract(name):
    follows_contract(name)


def test_what_each_port_speaks_comes_from_the_registry():
    # Benchmarks and tests pick the servers they can drive by protocol, not by lists of their own.
    assert {info.protocol for info in registry.SERVERS.values()} <= set(registry.PROTOCOLS)
    http = registry.names(protocol="http")
    assert "redis_server" not in http and {"tornado_app", "celery_worker"} <= set(http)
    assert sorted(http + registry.names(protocol="redis") + registry.names(protocol="postgres")) == registry.names()
    with pytest.raises(ValueError, match="'smtp'"):
        registry.names(protocol="smtp")


def test_missing_says_which_server_is_not_in_the_lab_or_not_installed(monkeypatch):
    assert registry.missing() is None and registry.missing("tornado_app") is None
    assert registry.missing("tornado_app", "smtp_app") == "server 'smtp_app' is not in this lab's registry"
    monkeypatch.setenv(contract.TOOLS_OFF_VARIABLE, "redis-server")
    reason = registry.missing("tornado_app", "redis_server", "smtp_app")  # the first one that cannot start
    assert reason == registry.get("redis_server").missing() and "'redis-server'" in reason and "not installed" in reason
    assert "redis_server" not in servers.available() and "tornado_app" in servers.available()


@pytest.mark.parametrize(("raw", "reason"), [
    (None, "think_ms is required, e.g. ?think_ms=1000"),
    ("", "think_ms is required, e.g. ?think_ms=1000"),
    ("1.5", "think_ms must be a whole number of milliseconds, got '1.5'"),
    ("-1", f"think_ms must be between 0 and {contract.MAX_MS}, got -1"),
    (str(contract.MAX_MS + 1), f"think_ms must be between 0 and {contract.MAX_MS}, got {contract.MAX_MS + 1}"),
])
def test_a_query_value_in_milliseconds_is_refused_by_its_name(raw, reason):
    with pytest.raises(contract.BadParameter) as refused:
        contract.parse_ms(raw, "think_ms")
    assert str(refused.value) == reason
    assert contract.parse_ms("0") == 0 and contract.parse_ms(str(contract.MAX_MS), "think_ms") == contract.MAX_MS


@pytest.mark.parametrize(("url", "words"), [
    ("http://127.0.0.1:80/x", ["--broker must look like redis://127.0.0.1:PORT/0", "'http://127.0.0.1:80/x'"]),
    ("redis://127.0.0.1/0", ["--broker must look like"]),
    ("redis://127.0.0.1:99999/0", ["--broker must look like"]),
    ("redis://10.0.0.1:6379/0", ["--broker 'redis://10.0.0.1:6379/0': host must be a loopback address", "'10.0.0.1'"]),
])
def test_a_url_must_name_a_loopback_address(url, words):
    with pytest.raises(ValueError) as refused:
        contract.check_loopback_url(url, "--broker", "redis", "/0")
    assert all(word in str(refused.value) for word in words), str(refused.value)
    for good in ("redis://127.0.0.1:6379/0", "redis://localhost:1/0", "redis://[::1]:6379/0"):
        assert contract.check_loopback_url(good, "--broker", "redis", "/0") == good


def follows_contract(name, *args):
    """Start `name` by hand with `args` and check every promise of the contract (other test files call this for options)."""
    info = registry.get(name)
    if info.missing():
        pytest.skip(info.missing())
    process, line = start_by_hand(name, *args)
    try:
        assert line.startswith("LISTENING 127.0.0.1:"), f"{name} printed {line!r}"
        port = int(line.rsplit(":", 1)[1])
        if info.protocol == "redis":  # lesson 10's broker speaks Redis's protocol, not HTTP
            with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
                connection.sendall(b"PING\r\n")
                assert connection.recv(64) == b"+PONG\r\n", f"{name} did not answer PING"
            return
        if info.protocol == "postgres":  # lesson 13's database and pgbouncer: a driver's query gets its answer
            import psycopg

            from iolab import postgres
            with psycopg.connect(postgres.dsn(port), connect_timeout=10) as connection:
                assert connection.execute("select 1 + 1").fetchone() == (2,), f"{name} did not answer a query"
            return
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        status, length, body = get(connection, "/")
        assert status == 200 and length is not None and int(length) == len(body.encode())
        assert body == contract.HELLO_BODY, f"{name} answered / with {body!r}"
        # The same connection from here on: keep-alive. Every route the registry
        # declares must answer, and validate its query; every other one is a 404.
        for route in contract.ROUTES:
            if route == "/":
                continue
            if route not in info.routes:
                assert get(connection, f"{route}?ms=1")[0] == 404, f"{name} declares no {route}"
                continue
            assert get(connection, f"{route}?ms=1")[0] == 200, f"{name} {route}"
            status, length, body = get(connection, f"{route}?ms=banana")
            assert status == 400 and length is not None and "ms" in body and body.count("\n") == 1
            assert get(connection, f"{route}?ms=-5")[0] == 400
        assert get(connection, "/no-such-route")[0] == 404
        connection.close()
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=5)
    assert process.returncode == 0, f"{name} did not exit cleanly on SIGTERM: {process.returncode}\n{err}"
    assert out == "", f"{name} wrote to stdout after the LISTENING line: {out!r}"


def test_serve_learns_the_port_and_stops_the_server():
    with servers.serve("tornado_app") as server:
        assert server.alive() and server.port > 0
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert server in servers.running()
        pid = server.pid
    assert not server.alive()
    assert server not in servers.running()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_stop_is_idempotent_and_survives_a_dead_server():
    server = servers.start("tornado_app")
    os.kill(server.pid, signal.SIGKILL)
    server.process.wait()
    with pytest.raises(servers.ServerError, match="exited with code -9"):
        server.check()
    server.stop()
    server.stop()


def test_server_passes_extra_arguments():
    with servers.serve("threaded_app", "--threads", 2) as server:
        connection = http.client.HTTPConnection(server.host, server.port, timeout=5)
        assert get(connection, "/")[0] == 200
        connection.close()


def test_threaded_app_pool_bounds_concurrency():
    """With --threads 2, four one-connection clients of 300 ms each take two rounds."""
    with servers.serve("threaded_app", "--threads", 2) as server:
        def one_request(_):
            connection = http.client.HTTPConnection(server.host, server.port, timeout=10)
            get(connection, "/sync-sleep?ms=300")
            connection.close()

        from concurrent.futures import ThreadPoolExecutor

        began = time.perf_counter()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(one_request, range(4)))
        elapsed = time.perf_counter() - began
    assert TWO_ROUNDS_AT_LEAST_S < elapsed < TWO_ROUNDS_AT_MOST_S, f"4 x 300 ms on 2 threads took {elapsed:.2f} s"


def test_server_refuses_to_start_on_a_port_in_use():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(servers.ServerError, match=f"port {port} is already in use"):
            servers.start("tornado_app", port=port)
    assert not servers.running()


def test_tornado_counts_connections_and_the_requests_it_serves_after_their_client_gave_up():
    import json

    def stats(server):
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        try:
            status, _, body = get(connection, "/stats")
        finally:
            connection.close()
        assert status == 200
        return json.loads(body)

    with servers.serve("tornado_app") as server:
        before = stats(server)
        # Three requests on one keep-alive connection: one connection opened, three handlers finished.
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        assert [get(connection, "/")[0] for _ in range(3)] == [200, 200, 200]
        connection.close()
        # A client that gives up after 0.1 s on a 600 ms wait: the server's handler is still waiting.
        impatient = http.client.HTTPConnection("127.0.0.1", server.port, timeout=0.1)
        with pytest.raises(TimeoutError):
            get(impatient, "/async-sleep?ms=600")
        impatient.close()
        during = stats(server)
        assert during["requests_in_flight"] == 1, during
        assert during["connections_opened"] - before["connections_opened"] == 3, (before, during)  # stats, keep-alive, impatient
        deadline = time.monotonic() + 5
        while stats(server)["requests_in_flight"] and time.monotonic() < deadline:
            time.sleep(0.05)
        after = stats(server)
        assert after["requests_in_flight"] == 0 and after["requests_finished"] - before["requests_finished"] == 4, after
