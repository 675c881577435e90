"""Lesson 10's backend as the lab starts it: Redis and a Celery worker pool, and what Redis says about its queue and memory."""

import contextlib
import json
import os
import signal
import threading
import time
import urllib.request

import numpy as np
import psutil

from iolab import registry, servers, usage

PARTS = ("redis_server", "celery_worker", "tornado_backend", "gevent_flask", "gunicorn_flask")
QUEUE = "celery"  # Celery's default queue: a Redis list
UNACKED = "unacked"  # kombu's hash of tasks a worker took and has not acknowledged yet
RESULT_PREFIX = "celery-task-meta-"  # Celery's Redis result store: one key per finished task
PROBE_TIMEOUT_S = 0.5
KILL_WAIT_S = 2.0  # how long a kill waits for every slot to hold a task: many tasks' lengths
IDLE_WAIT_S = 2.0  # how long a kept worker pool may take to finish its running tasks: past the longest T, 1 s


def missing():
    """Why the backend cannot run here (redis-server, celery, gevent or flask not installed), or None."""
    return registry.missing(*PARTS)


MAXMEMORY_MB = 64  # the main Redis's memory cap: far above what any of the lesson's runs queue


class Backend:
    """Redis and one Celery worker pool of `concurrency`, started by the lab and stopped with it."""

    def __init__(self, concurrency, pool="threads", maxmemory_mb=None):
        import redis  # the lesson's only use of redis-py: here, once the backend is known to be installed

        self.maxmemory_mb = MAXMEMORY_MB if maxmemory_mb is None else maxmemory_mb
        self.redis_server = servers.start("redis_server", maxmemory_mb=self.maxmemory_mb)
        self.broker = f"redis://{self.redis_server.host}:{self.redis_server.port}/0"
        self.client = redis.Redis.from_url(
            self.broker, socket_timeout=PROBE_TIMEOUT_S, socket_connect_timeout=PROBE_TIMEOUT_S
        )
        self.worker = None
        self.pool = pool
        self.start_worker(concurrency)

    def start_worker(self, concurrency):
        """(Re)start the worker pool with `concurrency` slots; the queue is emptied first, so runs do not mix.

        A pool of as many slots still running is kept once it is idle (idle()): a start costs about 0.8 s and
        measures nothing, and the next run meets the same empty queue and no task in flight.
        """
        if self.worker is not None and self.concurrency == concurrency and self.worker.alive() and self.idle():
            self.client.flushall()
            return self.worker
        if self.worker is not None:
            self.worker.stop()
        self.client.flushall()
        self.concurrency = concurrency
        self.worker = servers.start("celery_worker", broker=self.broker, concurrency=concurrency, pool=self.pool)
        return self.worker

    def idle(self, within_s=IDLE_WAIT_S):
        """Empty the queue, then wait until no task is unacked (each running one has stored its result and
        acknowledged it): True once that holds within `within_s`, False if it does not or Redis cannot tell."""
        deadline = time.monotonic() + within_s
        try:
            self.client.delete(QUEUE)
            while self.unacked():
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.005)
        except Exception:  # Redis gone or slow: a fresh pool after a fresh flush is the safe way on
            return False
        return True

    def front(self, name, **options):
        """Start a front end on this backend."""
        return servers.start(name, broker=self.broker, **options)

    def worker_pid(self):
        """The Celery worker's own pid (the status page's), not its wrapper's."""
        with urllib.request.urlopen(self.worker.url + "/status", timeout=2) as answer:
            return json.load(answer)["worker_pid"]

    def kill_worker(self, busy=0, within_s=KILL_WAIT_S):
        """SIGKILL the Celery worker, as a crash would: no warm shutdown, nothing acknowledged.

        With `busy`, at a moment it holds that many tasks. Between two tasks a slot holds none for a moment, so the
        worker is frozen (SIGSTOP: its threads neither take nor acknowledge a task) and Redis asked; if a slot is
        empty, it goes on (SIGCONT) and is asked again, for at most `within_s`.
        """
        pid = self.worker_pid()
        deadline = time.monotonic() + within_s
        while busy:
            os.kill(pid, signal.SIGSTOP)
            if self.running() >= busy or time.monotonic() > deadline:
                break
            os.kill(pid, signal.SIGCONT)
            time.sleep(0.002)
        os.kill(pid, signal.SIGKILL)

    def kill_redis(self):
        """SIGKILL Redis (its wrapper's whole group): the broker and the result store are gone at once."""
        os.killpg(self.redis_server.pid, signal.SIGKILL)

    def queue_length(self):
        """LLEN of Celery's queue: tasks sent and not yet taken by a worker (None once Redis is gone)."""
        try:
            return self.client.llen(QUEUE)
        except Exception:
            return None

    def unacked(self):
        """Tasks a worker took and never acknowledged: with acks_late, the ones running when it died."""
        return self.client.hlen(UNACKED)

    def running(self):
        """Unacked tasks whose result is not stored yet. With acks_late a slot stores its result, and its front end
        answers 200, before it acknowledges: a task frozen in between is unacked, but its request was answered."""
        running = 0
        for entry in self.client.hvals(UNACKED):
            try:
                task_id = json.loads(entry)[0]["headers"]["id"]
            except (ValueError, LookupError, TypeError):
                running += 1  # a shape we cannot read: count it as running, as unacked() does
                continue
            running += not self.client.exists(f"{RESULT_PREFIX}{task_id}")
        return running

    def used_memory(self):
        """Bytes Redis uses now (INFO memory's used_memory)."""
        return self.client.info("memory")["used_memory"]

    def flush(self):
        self.client.flushall()

    def rss_mb(self, *others):
        """Resident memory of Redis, the worker pool and `others` (front ends), whole process trees, in MB."""
        roots = [self.redis_server, self.worker, *others]
        return {server.name: tree_rss_mb(server.pid) for server in roots}

    def stop(self):
        for server in (self.worker, self.redis_server):
            if server is not None:
                server.stop()


def tree_rss_mb(pid):
    """The resident memory of a process and all its descendants, in MB."""
    total = 0
    try:
        tree = usage.process_tree(psutil.Process(pid))
    except psutil.Error:
        return 0.0
    for process in tree:
        try:
            total += process.memory_info().rss
        except psutil.Error:
            pass
    return total / 2**20


@contextlib.contextmanager
def capped_broker(maxmemory_mb):
    """A Redis of its own, capped at `maxmemory_mb` and with no worker: yields (broker URL, client); stopped after."""
    import redis

    with servers.serve("redis_server", maxmemory_mb=maxmemory_mb) as server:
        url = f"redis://{server.host}:{server.port}/0"
        client = redis.Redis.from_url(url, socket_timeout=PROBE_TIMEOUT_S, socket_connect_timeout=PROBE_TIMEOUT_S)
        try:
            yield url, client
        finally:
            client.close()


class QueueWatch:
    """Reads LLEN every `period_s` on a thread of its own until stopped: [(seconds since start, length)].

    The thread only records; it never prints or draws (a notebook draws from
    `points` on its own thread).
    """

    def __init__(self, backend, period_s=0.05):
        self.backend = backend
        self.period_s = period_s
        self.points = []
        self.memory = []  # (LLEN, used_memory) pairs
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="queue-watch", daemon=True)

    def start(self):
        self.began = time.monotonic()
        self._thread.start()
        return self

    def _watch(self):
        while not self._stop.is_set():
            length = self.backend.queue_length()
            if length is not None:
                self.points.append((time.monotonic() - self.began, length))
                with contextlib.suppress(Exception):
                    self.memory.append((length, self.backend.used_memory()))
            self._stop.wait(self.period_s)

    def bytes_per_task(self):
        """Redis's memory per waiting task: the slope of used_memory against LLEN over the run."""
        if len({length for length, _ in self.memory}) < 3:
            return float("nan")
        lengths, used = np.array(self.memory, dtype=float).T
        return float(np.polyfit(lengths, used, 1)[0])

    def stop(self):
        self._stop.set()
        self._thread.join(2)
        return self.points

    def stop_after(self, readings=2, within_s=1.0):
        """Stop once `readings` more readings are taken (a run just ended: its last tasks are in them), or after
        `within_s` at most; the points."""
        target, deadline = len(self.points) + readings, time.monotonic() + within_s
        while len(self.points) < target and time.monotonic() < deadline and self._thread.is_alive():
            time.sleep(self.period_s / 5)
        return self.stop()
