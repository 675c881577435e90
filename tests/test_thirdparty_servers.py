"""gunicorn and nginx under the lab's contract.

Their options take effect, the proxy passes every route, nothing outlives them.
"""

import dataclasses
import http.client
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import psutil
import pytest

from helpers import GONE_WITHIN_S, get, gone, kill_the_parent, left_listening, wait_until, wait_until_gone
from iolab import contract, hostile, registry, servers

SLEEP_MS = 400
# Two rounds of SLEEP_MS, told apart from one and from three: the margins leave room for a loaded machine.
ROUND_LOW, ROUND_HIGH = 0.9, 1.5


def needs(name):
    """Skip, with the reason, where this machine cannot start the server."""
    reason = registry.get(name).missing()
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def tree(server):
    """Every process of a running server: the wrapper first, then everything it started, recursively."""
    wrapper = psutil.Process(server.pid)
    return [wrapper, *wrapper.children(recursive=True)]


def nginx_master(server):
    return next(child for child in psutil.Process(server.pid).children() if child.name() == "nginx")


def upstreams(server, script):
    return [child for child in psutil.Process(server.pid).children() if str(servers.SERVERS_DIR / script) in child.cmdline()]


def listening_port(process):
    (port,) = {c.laddr.port for c in process.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}
    return port




def requests_at_once(server, path, count):
    """Send `count` requests at once, each on its own connection; returns how long the last took to answer."""

    def one(_):
        connection = http.client.HTTPConnection(server.host, server.port, timeout=10)
        try:
            return get(connection, path)[0]
        finally:
            connection.close()

    began = time.perf_counter()
    with ThreadPoolExecutor(count) as pool:
        statuses = list(pool.map(one, range(count)))
    assert statuses == [200] * count, statuses
    return time.perf_counter() - began


def assert_serves_at_once(server, at_once):
    """Twice as many blocking requests as the registry says it serves at once take two rounds: not one, not more."""
    elapsed = requests_at_once(server, f"/sync-sleep?ms={SLEEP_MS}", 2 * at_once)
    rounds = elapsed / (SLEEP_MS / 1000)
    assert ROUND_LOW * 2 <= rounds < ROUND_HIGH * 2, (
        f"{2 * at_once} requests of {SLEEP_MS} ms on {server.name} serving {at_once} at once took"
        f" {elapsed:.2f} s, {rounds:.1f} rounds; expected 2"
    )


# --- gunicorn ----------------------------------------------------------------------------------------


@needs("gunicorn_app")
def test_gunicorn_forks_the_workers_asked_for_and_they_are_ready_at_once():
    with servers.serve("gunicorn_app", workers=3) as server:
        # LISTENING waits for every worker, so they are all there the moment start() returns.
        (arbiter,) = psutil.Process(server.pid).children()
        workers = arbiter.children()
        assert len(workers) == 3, [w.cmdline() for w in workers]
        assert all("gunicorn" in " ".join(w.cmdline()) for w in workers)


@needs("gunicorn_app")
@pytest.mark.parametrize("options", [{"workers": 2}, {"threads": 3}, {"workers": 2, "threads": 2}])
def test_gunicorn_serves_workers_times_threads_at_once(options):
    info = registry.get("gunicorn_app")
    at_once = info.at_once(**options)
    assert at_once == options.get("workers", 1) * options.get("threads", 1)
    if options.get("workers", 1) > 1 and options.get("threads", 1) > 1:
        # Each gthread worker accepts whatever it can, not what it can run: one may hold three
        # connections while the other holds one, so workers x threads is a bound here, not a rate.
        with servers.serve("gunicorn_app", **options) as server:
            elapsed = requests_at_once(server, f"/sync-sleep?ms={SLEEP_MS}", 2 * at_once)
        assert elapsed >= ROUND_LOW * 2 * SLEEP_MS / 1000, f"{elapsed:.2f} s: more than {at_once} at once"
        return
    with servers.serve("gunicorn_app", **options) as server:
        assert_serves_at_once(server, at_once)


@needs("gunicorn_app")
def test_gunicorn_threads_are_a_pool_of_the_size_asked_for():
    """A gthread worker with k threads grows exactly k-1 more threads under load than one with 1 thread."""

    def threads_under_load(threads):
        with servers.serve("gunicorn_app", threads=threads, worker_class="gthread") as server:
            (arbiter,) = psutil.Process(server.pid).children()
            (worker,) = arbiter.children()
            requests_at_once(server, "/sync-sleep?ms=200", 2 * threads)  # more than the pool: it grows to its size
            return worker.num_threads()

    assert threads_under_load(4) - threads_under_load(1) == 3


@needs("gunicorn_app")
def test_gunicorn_sync_workers_close_each_connection_and_gthread_keeps_it():
    for worker_class, closes in [("sync", True), ("gthread", False)]:
        with servers.serve("gunicorn_app", worker_class=worker_class) as server:
            connection = http.client.HTTPConnection(server.host, server.port, timeout=5)
            connection.request("GET", "/")
            response = connection.getresponse()
            assert response.read().decode() == contract.HELLO_BODY
            assert response.will_close == closes, f"{worker_class}: Connection: {response.getheader('Connection')}"
            connection.close()


# --- nginx -------------------------------------------------------------------------------------------


@needs("nginx_hello")
def test_nginx_starts_the_workers_asked_for():
    with servers.serve("nginx_hello", workers=3) as server:
        master = nginx_master(server)
        assert len(master.children()) == 3
        assert listening_port(master) == server.port, "nginx serves on the socket the wrapper bound and announced"


@needs("nginx_hello")
def test_nginx_hello_runs_from_a_temporary_prefix_it_removes():
    with servers.serve("nginx_hello") as server:
        command = nginx_master(server).cmdline()
        prefix = command[command.index("-p") + 1].rstrip("/")
        # Everything nginx writes is in there: the pid file and the temporary paths it would otherwise want in /var/lib.
        expected = {"nginx.conf", "nginx.pid", "client_body", "proxy", "fastcgi", "uwsgi", "scgi"}
        assert expected <= set(os.listdir(prefix)), os.listdir(prefix)
    assert not os.path.exists(prefix)


@needs("nginx_hello")
def test_a_prefix_left_by_a_killed_wrapper_goes_at_the_next_start():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    abandoned, owned = (tempfile.mkdtemp(prefix="iolab-nginx-") for _ in range(2))
    try:
        for prefix, owner in [(abandoned, dead.pid), (owned, os.getpid())]:
            with open(os.path.join(prefix, "wrapper.pid"), "w") as file:
                file.write(str(owner))
        with servers.serve("nginx_hello"):
            pass
        assert not os.path.exists(abandoned), "the prefix of a wrapper that is gone was left behind"
        assert os.path.exists(owned), "the prefix of a running wrapper was removed"
    finally:
        shutil.rmtree(abandoned, ignore_errors=True)
        shutil.rmtree(owned, ignore_errors=True)


@needs("nginx_proxy")
def test_nginx_proxy_starts_its_upstreams_and_workers():
    with servers.serve("nginx_proxy", upstreams=3, workers=2) as server:
        assert len(upstreams(server, "tornado_app.py")) == 3
        assert len(nginx_master(server).children()) == 2


@needs("nginx_proxy")
@pytest.mark.parametrize("upstream", ["tornado_app", "threaded_app"])
def test_every_route_answers_through_the_proxy_as_the_upstream_answers_it(upstream):
    paths = [
        f"{route}?ms=1" if contract.ROUTES[route].takes_ms else route for route in contract.ROUTES
    ] + ["/sync-sleep?ms=banana", "/cpu?ms=-5", "/cpu", "/no-such-route"]
    with servers.serve("nginx_proxy", upstreams=1, upstream=upstream) as server:
        (process,) = upstreams(server, registry.get(upstream).script)
        direct = http.client.HTTPConnection(contract.LOOPBACK, listening_port(process), timeout=5)
        proxied = http.client.HTTPConnection(server.host, server.port, timeout=5)
        for path in paths:
            status, length, body = get(proxied, path)
            assert (status, body) == get(direct, path)[::2], path
            assert int(length) == len(body.encode())
            expected = 200 if path.split("?")[0] in registry.get(upstream).routes else 404
            if "banana" in path or "-5" in path or path == "/cpu":
                expected = 400
            assert status == expected, (path, status, body)
        direct.close()
        proxied.close()


@needs("nginx_proxy")
def test_nginx_proxy_serves_upstreams_times_theirs_at_once():
    assert registry.get("nginx_proxy").at_once(upstreams=3) == 3
    assert registry.get("nginx_proxy").at_once(upstreams=2, upstream="threaded_app") is None
    with servers.serve("nginx_proxy", upstreams=3) as server:
        assert_serves_at_once(server, 3)


@needs("nginx_proxy")
def test_nginx_proxy_keeps_its_connections_alive_both_ways():
    with servers.serve("nginx_proxy", upstreams=1) as server:
        (process,) = upstreams(server, "tornado_app.py")
        connection = http.client.HTTPConnection(server.host, server.port, timeout=5)
        for _ in range(20):
            assert get(connection, "/")[0] == 200
        # One connection to the proxy, and the proxy reuses one connection to its upstream.
        upstream_connections = [c for c in process.net_connections(kind="inet") if c.status == psutil.CONN_ESTABLISHED]
        assert len(upstream_connections) == 1, upstream_connections
        connection.close()


@needs("nginx_proxy")
@pytest.mark.parametrize(
    "options, words",
    [
        ({"upstream": "no_such_server"}, ["server must be one of", "'no_such_server'"]),
        ({"upstream": "nginx_proxy"}, ["other than the proxy itself"]),
        ({"upstreams": 0}, ["--upstreams", "must be between 1 and"]),
        ({"workers": 500}, ["--workers", "must be between 1 and", "500"]),
    ],
)
def test_bad_proxy_options_are_refused_by_name(options, words):
    with pytest.raises(servers.ServerError) as raised:
        servers.start("nginx_proxy", **options)
    for word in words:
        assert word in str(raised.value)
    assert not servers.running()


@needs("nginx_balancer")
def test_nginx_balancer_reloads_its_list_on_sighup_and_keeps_it_when_the_list_is_wrong(tmp_path):
    listed = tmp_path / "upstreams.txt"
    with servers.serve("tornado_app") as first, servers.serve("tornado_app") as second:
        listed.write_text(f"{first.host}:{first.port}\n{second.host}:{second.port} down\n")
        with servers.serve("nginx_balancer", upstreams_file=listed) as balancer:
            connection = http.client.HTTPConnection(balancer.host, balancer.port, timeout=5)
            assert get(connection, "/")[0] == 200
            connection.close()  # an old worker holding a kept-alive connection lives on, with the old list
            listed.write_text(f"{first.host}:{first.port} down\n{second.host}:{second.port}\n")
            old = {worker.pid for worker in nginx_master(balancer).children()}
            os.kill(balancer.pid, signal.SIGHUP)
            # Reloaded once the old workers are gone: until then one of them may still take a request to `first`.
            assert wait_until(lambda: not old & {worker.pid for worker in nginx_master(balancer).children()}, 5)
            listed.write_text("192.0.2.1:80\n")  # not loopback: logged, and the running list stays
            os.kill(balancer.pid, signal.SIGHUP)
            assert wait_until(lambda: "not reloaded" in balancer.stderr_tail(), 5)
            assert "'192.0.2.1'" in balancer.stderr_tail() and balancer.alive()
            second.stop()  # the one nginx sends to now; proxy_next_upstream off: the client sees it
            assert get(http.client.HTTPConnection(balancer.host, balancer.port, timeout=5), "/")[0] == 502


@needs("nginx_balancer")
def test_nginx_balancer_refuses_a_list_that_leaves_the_machine(tmp_path):
    listed = tmp_path / "upstreams.txt"
    listed.write_text("10.0.0.1:80\n")
    with pytest.raises(servers.ServerError, match="--upstreams-file.*'10.0.0.1'"):
        servers.start("nginx_balancer", upstreams_file=listed)
    assert not servers.running()


# --- When nginx or gunicorn is not installed ----------------------------------------------------------


def test_a_missing_nginx_makes_its_servers_unavailable_with_the_reason(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty PATH: no nginx ...
    monkeypatch.setattr(contract, "SBIN_DIRS", (str(tmp_path),))  # ... and no sbin to find it in either
    for name in ["nginx_hello", "nginx_proxy"]:
        assert name not in servers.available()
        with pytest.raises(servers.ServerUnavailable, match=f"server '{name}' needs the program 'nginx'"):
            servers.start(name)
    assert "tornado_app" in servers.available()
    assert not servers.running()


def test_a_missing_gunicorn_makes_its_server_unavailable_with_the_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "gunicorn", None)  # what Python does for a package that cannot import
    assert "gunicorn_app" not in servers.available()
    with pytest.raises(servers.ServerUnavailable, match="needs the Python package 'gunicorn', which is not installed"):
        servers.start("gunicorn_app")


def test_a_server_needing_an_unknown_program_is_unavailable(monkeypatch):
    info = dataclasses.replace(registry.get("nginx_hello"), name="nginx_elsewhere", needs_programs=("nginx-9000",))
    monkeypatch.setitem(registry.SERVERS, info.name, info)
    assert info.name not in servers.available()
    with pytest.raises(servers.ServerUnavailable, match="needs the program 'nginx-9000'"):
        servers.start(info.name)


# --- FastAPI ---------------------------------------------------------------------------------------------


@needs("fastapi_app")
@pytest.mark.parametrize("threads", [None, 3], ids=["default-40", "threads-3"])
def test_fastapi_runs_def_endpoints_threads_at_once(threads):
    """anyio's limiter (40, or --threads) is what a `def` endpoint's concurrency is: 2 x limit requests take 2 rounds."""
    options = {} if threads is None else {"threads": threads}
    at_once = registry.get("fastapi_app").at_once(**options)
    assert at_once == (threads or 40)
    with servers.serve("fastapi_app", **options) as server:
        assert_serves_at_once(server, at_once)


@needs("fastapi_app")
def test_fastapi_async_endpoint_that_calls_time_sleep_serves_one_at_a_time():
    count = 3
    with servers.serve("fastapi_app") as server:
        elapsed = requests_at_once(server, f"/blocking-sleep?ms={SLEEP_MS}", count)
        connection = http.client.HTTPConnection(server.host, server.port, timeout=5)
        assert get(connection, "/blocking-sleep?ms=banana")[0] == 400  # validated like every route
        connection.close()
    rounds = elapsed / (SLEEP_MS / 1000)
    assert ROUND_LOW * count <= rounds < ROUND_HIGH * count, f"{count} blocking calls took {rounds:.1f} rounds, not {count}"


@needs("fastapi_app")
def test_fastapi_refuses_a_thread_count_out_of_range(python):
    completed = subprocess.run(
        [python, str(servers.SERVERS_DIR / "fastapi_app.py"), "--threads", "0"], capture_output=True, text=True, timeout=20
    )
    assert completed.returncode != 0 and "--threads" in completed.stderr and completed.stdout == ""


# --- Nothing outlives them ----------------------------------------------------------------------------

THIRD_PARTY = [
    pytest.param("gunicorn_app", {"workers": 2, "threads": 2}, marks=needs("gunicorn_app")),
    pytest.param("nginx_hello", {"workers": 2}, marks=needs("nginx_hello")),
    pytest.param("nginx_proxy", {"upstreams": 2, "workers": 2}, marks=needs("nginx_proxy")),
]


@pytest.mark.parametrize("name, options", THIRD_PARTY)
def test_stop_leaves_no_process_and_no_listening_socket(name, options):
    server = servers.start(name, **options)
    processes = tree(server)
    ports = [server.port] + [listening_port(process) for process in upstreams(server, "tornado_app.py")]
    assert len(processes) >= 4, [p.cmdline() for p in processes]
    server.stop()
    assert not wait_until_gone([p.pid for p in processes]), f"{name} left processes behind"
    left = [port for port in ports if left_listening(port)]
    assert not left, f"{name} left ports listening: {left} of {ports}"


@pytest.mark.parametrize("name, options", THIRD_PARTY)
def test_a_program_that_dies_takes_its_server_down_with_a_reason(name, options):
    server = servers.start(name, **options)
    processes = tree(server)
    # gunicorn's arbiter, nginx's master: what the wrapper started and waits on.
    program = psutil.Process(server.pid).children()[0] if name == "gunicorn_app" else nginx_master(server)
    try:
        program.kill()
        assert wait_until(lambda: not server.alive(), GONE_WITHIN_S), f"{name} kept running without its program"
        assert not wait_until_gone([p.pid for p in processes]), "the dead program's workers outlived it"
    finally:
        server.stop()
    assert f"(pid {program.pid}) exited with code -9" in server.stderr_tail()


@needs("gunicorn_app")
def test_gunicorn_replaces_a_worker_that_dies():
    with servers.serve("gunicorn_app", workers=2) as server:
        (arbiter,) = psutil.Process(server.pid).children()
        first = arbiter.children()
        first[0].kill()
        assert wait_until(lambda: len(arbiter.children()) == 2 and first[0] not in arbiter.children(), 5)
        connection = http.client.HTTPConnection(server.host, server.port, timeout=5)
        assert get(connection, "/")[0] == 200
        connection.close()
        server.check()


PARENT = """
    import json, psutil
    from iolab import servers
    started = [servers.start(name, **options) for name, options in {started!r}]
    pids = [p.pid for s in started for p in [psutil.Process(s.pid), *psutil.Process(s.pid).children(recursive=True)]]
    print(json.dumps({{"pids": pids, "ports": [s.port for s in started]}}), flush=True)
"""


def test_parent_killed_with_sigkill_takes_every_process_of_theirs_along():
    """nginx's master and workers, gunicorn's arbiter and workers, the proxy's upstreams: all gone within 2 s."""
    started = [(p.values[0], p.values[1]) for p in THIRD_PARTY if registry.get(p.values[0]).missing() is None]
    if not started:
        pytest.skip("neither nginx nor gunicorn is installed here")
    report, survivors = kill_the_parent(PARENT.format(started=started))
    pids, ports = report["pids"], report["ports"]
    # Two processes each at least (a wrapper and what it wraps), four for the proxy.
    assert len(pids) >= 2 * len(started) and len(ports) == len(started), (pids, ports)
    names = {pid: psutil.Process(pid).cmdline()[:3] for pid in survivors if not gone(pid)}
    assert not survivors, f"still running {GONE_WITHIN_S} s after their parent was SIGKILLed: {names}"
    assert not any(left_listening(port) for port in ports)


# Lesson 08's servers that run someone else's framework: workers, threads and loops of theirs, none may linger.
FRAMEWORKS = [name for name, info in registry.SERVERS.items()
              if info.lesson == "08-pipelining" and name not in hostile.OWN_HTTP and info.missing() is None]


@pytest.mark.skipif(not FRAMEWORKS, reason="none of lesson 08's framework servers can start here")
def test_parent_killed_with_sigkill_takes_every_framework_server_along():
    """One parent starts each framework server; once it is SIGKILLed, every process of theirs is gone within 2 s."""
    report, survivors = kill_the_parent(PARENT.format(started=[(name, {}) for name in FRAMEWORKS]))
    assert len(report["ports"]) == len(FRAMEWORKS), report
    names = {pid: psutil.Process(pid).cmdline()[:3] for pid in survivors if not gone(pid)}
    assert not survivors, f"still running {GONE_WITHIN_S} s after their parent was SIGKILLed: {names}"
    assert not any(left_listening(port) for port in report["ports"])


# Linux delays an ACK by at least 40 ms (TCP_DELACK_MIN). A server that writes a head and a body in two sends with
# Nagle on waits that long for every answer after a connection's first: gevent's pywsgi did, 43 ms a request.
DELAYED_ACK_MS = 40
# Every third-party server whose answers leave in more than one write: the frameworks, and lesson 10's gevent + Flask.
KEEP_ALIVE_WRITERS = FRAMEWORKS + [name for name in ("gevent_flask",) if registry.get(name).missing() is None]


@pytest.mark.skipif(not KEEP_ALIVE_WRITERS, reason="none of the framework servers can start here")
@pytest.mark.parametrize("name", KEEP_ALIVE_WRITERS)
def test_keep_alive_answers_do_not_wait_for_a_delayed_ack(name):
    with servers.serve(name) as server:
        connection = http.client.HTTPConnection(server.host, server.port, timeout=5)
        took_ms = []
        for _ in range(5):
            began = time.perf_counter()
            assert get(connection, "/")[0] == 200
            took_ms.append((time.perf_counter() - began) * 1000)
        connection.close()
    assert sorted(took_ms)[2] < DELAYED_ACK_MS, took_ms
