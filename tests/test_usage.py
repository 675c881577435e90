"""CPU measured on real processes: a server's known CPU per request, children that come and go, a server that dies."""

import math
import socket
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from iolab import listening, load, metrics, servers, usage

# A process that starts children which burn a known amount of CPU: three that exit (and are reaped) during the
# window, and one still running at its end. Its own start-up happens before it prints "ready".
SPAWNER = textwrap.dedent(
    """
    import os, sys, time
    def burn(seconds):
        deadline = time.thread_time() + seconds
        while time.thread_time() < deadline:
            pass
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            burn(0.15)
            os._exit(0)
        os.waitpid(pid, 0)
    if os.fork() == 0:
        burn(0.1)
        time.sleep(30)
        os._exit(0)
    print("spawned", flush=True)
    sys.stdin.readline()
    """
)


def test_children_that_exit_during_the_window_are_counted():
    with subprocess.Popen([sys.executable, "-c", SPAWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                          process_group=0) as process:
        try:
            assert process.stdout.readline().strip() == "ready"
            meter = usage.CpuMeter(process.pid).start()
            process.stdin.write("go\n")
            process.stdin.flush()
            assert process.stdout.readline().strip() == "spawned"
            time.sleep(0.3)  # the last child finishes its 0.1 s of CPU and sleeps
            measured = meter.stop()
        finally:
            for child in psutil.Process(process.pid).children(recursive=True):
                child.kill()
            process.kill()
    # 3 x 0.15 s reaped + 0.1 s alive; fork and exit add a little on top.
    assert 0.53 <= measured.cpu_s <= 0.75, measured
    assert measured.processes == 2 and measured.wall_s > 0.3


def test_a_servers_cpu_per_request_is_what_its_handler_burns():
    # /cpu?ms=5 spins for 5 ms of CPU time, so D is 5 ms plus the request's own handling, whatever the machine's load.
    with servers.serve("tornado_app") as server:
        plain = metrics.summarize(load.run_load(f"{server.url}/", server=server, requests=60, concurrency=2))
        burning = metrics.summarize(load.run_load(f"{server.url}/cpu?ms=5", server=server, requests=60, concurrency=2))
    assert plain.errors == 0 and burning.errors == 0
    assert 0 < plain.demand_ms < 5, plain
    # The utilization law read the other way round: D from the OS's counters against the 5 ms the handler burned.
    assert 5 + 0.5 * plain.demand_ms <= burning.demand_ms <= 5 + 2 * plain.demand_ms + 0.5, (plain, burning)
    assert burning.utilization == pytest.approx(burning.rps * burning.demand_ms / 1000)
    assert burning.utilization <= burning.cores + 0.05
    assert burning.client_demand_ms > 0 and burning.lab_demand_ms >= 0


def test_in_flight_is_littles_law_on_the_same_samples():
    with servers.serve("tornado_app") as server:
        summary = metrics.summarize(load.run_load(f"{server.url}/async-sleep?ms=50", requests=40, concurrency=10))
    assert summary.in_flight == pytest.approx(summary.rps * summary.mean_ms / 1000)
    assert summary.in_flight <= summary.concurrency
    assert math.isnan(summary.demand_ms)  # no server given: nothing measured, and the summary says so
    assert summary.client_demand_ms > 0


def test_a_dead_server_gives_nan_not_an_exception():
    server = servers.start("tornado_app")
    meter = usage.measure(server)
    server.stop()
    measured = meter.stop()
    assert math.isnan(measured.cpu_s)
    with pytest.raises(psutil.NoSuchProcess):
        usage.snapshot(server.pid)


def test_use_table_has_a_row_per_run():
    with servers.serve("tornado_app") as server:
        summary = metrics.summarize(load.run_load(f"{server.url}/", server=server, requests=20, concurrency=2))
    headers, rows = usage.use_table({"hello": summary})
    assert len(rows) == 1 and len(rows[0]) == len(headers)
    assert rows[0][0] == "hello" and rows[0][1] == summary.utilization and rows[0][5] == 0


def test_listen_drops_counts_connects_a_full_accept_queue_turned_away():
    before = listening.listen_drops()
    if before is None:
        pytest.skip("this system has no /proc/net/netstat to count dropped connection attempts")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)  # nobody accepts: the queue holds one, the others' SYNs are dropped
        clients = [socket.socket() for _ in range(4)]
        try:
            for client in clients:
                client.setblocking(False)
                client.connect_ex(listener.getsockname())
            time.sleep(0.2)
        finally:
            for client in clients:
                client.close()
    assert listening.listen_drops() > before
