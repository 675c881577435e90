"""Lesson 10's real backend.

Redis, a Celery worker pool and the three front ends, started, called in every mode, broken and stopped.
The lesson's own modules are tested in tests/lessons/backend/.
"""

import contextlib
import glob
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import pytest

from helpers import kill_the_parent, wait_until
from iolab import owned_folders, registry, servers

BACKEND_SERVERS = ("redis_server", "celery_worker", "tornado_backend", "gevent_flask", "gunicorn_flask")
MISSING = registry.missing(*BACKEND_SERVERS)
pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

WAIT_MS = 300
HOWS = {"tornado_backend": ("wait", "forget", "pool", "await"), "gevent_flask": ("wait", "forget"),
        "gunicorn_flask": ("wait", "forget")}


def get(server, path, timeout_s=15):
    """(status, body, seconds) of one GET on a fresh connection."""
    connection = http.client.HTTPConnection(server.host, server.port, timeout=timeout_s)
    began = time.perf_counter()
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read().decode().strip(), time.perf_counter() - began
    finally:
        connection.close()


def get_together(server, paths, timeout_s=15):
    """Send every path at once, each on its own connection; [(status, body, seconds)] in order, and the total time."""
    answers = [None] * len(paths)

    def one(index, path):
        answers[index] = get(server, path, timeout_s)

    threads = [threading.Thread(target=one, args=(i, path)) for i, path in enumerate(paths)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout_s + 5)
    return answers, time.perf_counter() - began


def broker_of(redis):
    return f"redis://{redis.host}:{redis.port}/0"


def redis_command(redis, *words):
    """One Redis command over a raw socket (the tests need no client library for this): its reply line."""
    import socket

    with socket.create_connection((redis.host, redis.port), timeout=5) as connection:
        parts = [f"*{len(words)}\r\n"] + [f"${len(w.encode())}\r\n{w}\r\n" for w in words]
        connection.sendall("".join(parts).encode())
        return connection.recv(4096).decode().split("\r\n")[0]


def llen(redis, key="celery"):
    return int(redis_command(redis, "LLEN", key)[1:])


@pytest.fixture(scope="module")
def redis():
    with servers.serve("redis_server") as server:
        yield server


@pytest.fixture(scope="module")
def worker(redis):
    with servers.serve("celery_worker", broker=broker_of(redis), concurrency=4) as server:
        yield server


@pytest.mark.parametrize("name", ["tornado_backend", "gevent_flask", "gunicorn_flask"])
def test_every_mode_of_every_front_end_against_a_real_worker(name, redis, worker):
    options = {"workers": 2} if name == "gunicorn_flask" else {}
    with servers.serve(name, broker=broker_of(redis), timeout_ms=5000, **options) as front:
        for how in HOWS[name]:
            for work in ("wait", "cpu"):
                status, body, took_s = get(front, f"/backend?ms={WAIT_MS}&how={how}&work={work}")
                assert status == 200, (how, work, body)
                if how == "forget":
                    assert body.startswith("queued ") and took_s < WAIT_MS / 1000, (how, body, took_s)
                else:
                    assert body.startswith(f"{work} {WAIT_MS} ms done") and took_s >= WAIT_MS / 1000, (how, body)
        for how in set(("wait", "forget", "pool", "await")) - set(HOWS[name]):
            status, body, _ = get(front, f"/backend?ms=10&how={how}")
            assert status == 400 and "how must be one of" in body
        status, body, _ = get(front, "/backend?ms=10&how=later")
        assert status == 400 and body.count("\n") == 0 and "how" in body
        status, body, _ = get(front, "/backend?ms=10&work=dig")
        assert status == 400 and "work" in body
        front.check()
    # The fire-and-forget tasks ran too: the queue drains.
    assert wait_until(lambda: llen(redis) == 0, 5)


def test_a_front_end_without_a_broker_says_so():
    with servers.serve("tornado_backend") as front:
        status, body, _ = get(front, "/backend?ms=10")
    assert status == 503 and "without --broker" in body


@pytest.mark.parametrize("name", ["celery_worker", "tornado_backend", "gunicorn_flask"])
@pytest.mark.parametrize(("broker", "words"), [
    ("redis://10.1.2.3:6379/0", ["--broker 'redis://10.1.2.3:6379/0': host must be a loopback address", "'10.1.2.3'"]),
    ("http://127.0.0.1:6379/0", ["--broker must look like redis://127.0.0.1:PORT/0", "'http://127.0.0.1:6379/0'"]),
])
def test_a_broker_off_the_loopback_or_not_redis_is_refused_by_name(name, broker, words):
    # The worker's wrapper and the front ends check --broker with the same rule, before anything connects.
    already = servers.running()  # the module's own Redis and worker may be running
    with pytest.raises(servers.ServerError) as raised:
        servers.start(name, broker=broker)
    assert all(word in str(raised.value) for word in words), str(raised.value)
    assert servers.running() == already


def test_tornados_ways_of_waiting_serve_as_many_at_once_as_the_law_says(redis, worker):
    """Blocking: one at a time; a pool of k = 2: two at a time; awaiting: all four of the worker's slots."""
    with servers.serve("tornado_backend", broker=broker_of(redis), threads=2) as front:
        timings = {}
        for how in ("wait", "pool", "await"):
            get_together(front, [f"/backend?ms=1&how={how}"] * 2)  # the connections to Redis, made beforehand
            answers, took_s = get_together(front, [f"/backend?ms={WAIT_MS}&how={how}"] * 4)
            assert all(status == 200 for status, _, _ in answers), answers
            timings[how] = took_s
    rounds = {"wait": 4, "pool": 2, "await": 1}  # 4 requests / min(front end's limit, worker's 4)
    for how, expected in rounds.items():
        low, high = expected * WAIT_MS / 1000, expected * WAIT_MS / 1000 + 0.25 + 0.1 * expected
        assert low * 0.98 <= timings[how] <= high, (how, timings)


@pytest.mark.parametrize("patch, rounds", [("yes", 1), ("no", 2)])
def test_gevent_patching_makes_the_wait_cooperative(redis, worker, patch, rounds):
    with servers.serve("gevent_flask", broker=broker_of(redis), patch=patch) as front:
        assert get(front, "/backend?ms=1&how=wait")[0] == 200  # connects to Redis: not part of the timing
        answers, took_s = get_together(front, [f"/backend?ms={WAIT_MS}&how=wait"] * 2)
    assert all(status == 200 for status, _, _ in answers), answers
    assert rounds * WAIT_MS / 1000 * 0.98 <= took_s <= rounds * WAIT_MS / 1000 + 0.3, (patch, took_s)


COOPERATIVE_GET = textwrap.dedent("""
    from gevent import monkey; monkey.patch_all()
    import sys, time, gevent
    sys.path.insert(0, {servers_dir!r})
    from apps import backend_tasks
    backend_tasks.configure({broker!r})
    def one():
        return backend_tasks.app.send_task(backend_tasks.WAIT_TASK, args=[{ms}]).get(timeout=10)
    one()  # the first call connects to Redis; time only the two that follow
    began = time.perf_counter()
    done = [g.get() for g in [gevent.spawn(one) for _ in range(2)]]
    print(done, time.perf_counter() - began)
""")


def test_the_pinned_celerys_get_is_cooperative_under_gevent(redis, worker):
    """Two greenlets each .get() a task of T on a worker with room for both: together they take about T, not 2T."""
    ms = 500
    script = COOPERATIVE_GET.format(servers_dir=str(servers.SERVERS_DIR), broker=broker_of(redis), ms=ms)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr[-2000:]
    results, took_s = done.stdout.rsplit("]", 1)
    assert results == f"[{ms}, {ms}", done.stdout
    assert ms / 1000 * 0.98 <= float(took_s) < 1.5 * ms / 1000, f"two gets took {took_s} s: they waited in turn"


def test_a_full_queue_gets_a_quick_503_with_the_reason():
    # No worker: nothing drains the queue, so it holds exactly what was sent.
    with servers.serve("redis_server") as redis, \
            servers.serve("tornado_backend", broker=broker_of(redis), queue_limit=3) as front:
        for _ in range(3):
            assert get(front, "/backend?ms=10&how=forget")[0] == 200
        status, body, took_s = get(front, "/backend?ms=10&how=forget")
        assert status == 503 and body == "503 queue full: 3 tasks waiting, the limit is 3"
        assert took_s < 0.5 and llen(redis) == 3


def test_redis_at_its_memory_cap_refuses_with_a_503():
    with servers.serve("redis_server", maxmemory_mb=2) as redis, \
            servers.serve("tornado_backend", broker=broker_of(redis)) as front:
        sent = 0
        while (answer := get(front, "/backend?ms=10&how=forget"))[0] == 200 and sent < 20_000:
            sent += 1
        status, body, _ = answer
        assert status == 503 and body.startswith("503 broker full"), (sent, body)
        assert 10 < sent < 20_000


@pytest.mark.parametrize("name", ["tornado_backend", "gevent_flask", "gunicorn_flask"])
def test_redis_killed_mid_run_gets_quick_503s(name):
    with servers.serve("redis_server") as redis:
        broker = broker_of(redis)
        with servers.serve("celery_worker", broker=broker, concurrency=2) as worker, \
                servers.serve(name, broker=broker, timeout_ms=3000) as front:
            assert get(front, "/backend?ms=10&how=wait")[0] == 200
            answers = []
            waiting = threading.Thread(target=lambda: answers.append(get(front, "/backend?ms=2000&how=wait")))
            waiting.start()
            time.sleep(0.3)
            redis.stop()
            for how in HOWS[name]:
                status, body, took_s = get(front, f"/backend?ms=10&how={how}")
                assert status == 503 and "broker unreachable" in body and took_s < 1.5, (how, body, took_s)
            waiting.join(10)
            assert answers and answers[0][0] in (503, 504) and answers[0][2] < 4, answers
            front.check()
            del worker


def test_the_worker_killed_mid_run_ends_waits_at_the_timeout_and_leaves_its_tasks_unacked():
    # A Redis of its own: the module's worker must not take these tasks.
    with servers.serve("redis_server") as redis, \
            servers.serve("celery_worker", broker=broker_of(redis), concurrency=2) as worker, \
            servers.serve("tornado_backend", broker=broker_of(redis), timeout_ms=1500, threads=4) as front:
        worker_pid = json.loads(get(worker, "/status")[1])["worker_pid"]
        answers = []
        threads = [threading.Thread(target=lambda: answers.append(get(front, "/backend?ms=5000&how=pool")))
                   for _ in range(3)]
        for thread in threads:
            thread.start()
        # Two running, one queued. LLEN is 1 for a moment while the tasks are still being sent and taken, too:
        # wait for both counts, or the kill may land before the worker holds its second task.
        assert wait_until(lambda: llen(redis) == 1 and int(redis_command(redis, "HLEN", "unacked")[1:]) == 2, 5)
        os.kill(worker_pid, signal.SIGKILL)
        for thread in threads:
            thread.join(10)
        assert [status for status, _, _ in answers] == [504] * 3, answers
        assert all(took_s < 3 for _, _, took_s in answers), answers
        assert wait_until(lambda: not worker.alive(), 3), "the wrapper did not notice its worker died"
        # acks_late: the two running tasks stay in kombu's `unacked` hash, the queued one in the list.
        assert int(redis_command(redis, "HLEN", "unacked")[1:]) == 2
        assert llen(redis) == 1


STARTER = """
    import json, psutil
    from iolab import servers
    redis = servers.start("redis_server")
    broker = f"redis://{redis.host}:{redis.port}/0"
    worker = servers.start("celery_worker", broker=broker, concurrency=2, pool="prefork")
    front = servers.start("gevent_flask", broker=broker)
    tree = [psutil.Process(server.pid) for server in (redis, worker, front)]
    tree += [child for leader in list(tree) for child in leader.children(recursive=True)]
    names = " ".join(" ".join(process.cmdline()) for process in tree)
    print(json.dumps({"pids": [process.pid for process in tree], "names": names}), flush=True)
"""


def redis_folders():
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "iolab-redis-*")))


def test_nothing_outlives_a_starter_killed_with_sigkill():
    before = redis_folders()
    report, survivors = kill_the_parent(STARTER, within_s=5)
    assert "redis-server" in report["names"] and "celery" in report["names"], report["names"]
    assert len(report["pids"]) >= 7  # 3 leaders, redis-server, the celery worker and its 2 prefork children
    assert not survivors, survivors
    # The redis wrapper's folder goes with it (a new folder of a wrapper still running is another test's).
    left = [folder for folder in redis_folders() - before if owner_of(folder) in {None, *report["pids"]}]
    assert not left, f"the killed redis wrapper left its folder: {left}"


def owner_of(folder):
    with contextlib.suppress(OSError, ValueError), open(os.path.join(folder, owned_folders.OWNER_FILE)) as file:
        return int(file.read())
    return None
