"""The GIL at work, as Beazley showed it.

How long `/` takes while CPU-bound requests run in other threads of its process.
"""

import hashlib
import socket
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from iolab import environment, http1, usage

from . import cores


def _connect(url, timeout_s):
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=timeout_s)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class _Asker:
    """Sends GETs and reads the answers, on one kept-alive connection, or a new one each time the server closed it
    (gunicorn's sync workers close every connection)."""

    def __init__(self, url, timeout_s):
        self.url, self.timeout_s = url, timeout_s
        self.sock = self.reader = None

    def send(self, path):
        if self.sock is None:
            self.sock = _connect(self.url, self.timeout_s)
            self.reader = http1.AnswerReader(self.sock)
        self.sock.sendall(http1.get_request(path))

    def answer(self):
        status, headers, _ = self.reader.read()
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status

    def close(self):
        if self.sock is not None:
            self.sock.close()
        self.sock = self.reader = None


def _keep_busy(url, cpu_ms, stop, started, timeout_s):
    """One client asking for /cpu?ms=cpu_ms again and again until `stop` is set: one busy thread in the server."""
    asker = _Asker(url, timeout_s)
    try:
        asker.send(f"/cpu?ms={cpu_ms}")
        started.release()
        while True:
            asker.answer()
            if stop.is_set():
                return
            asker.send(f"/cpu?ms={cpu_ms}")
    finally:
        asker.close()


def _wait_until_burning(pid, busy_threads, timeout_s, burned_s=0.02):
    """Return once the server's processes have spent `burned_s` of CPU per busy request from now: they are at work."""
    began, deadline = usage.snapshot(pid).cpu_s, time.monotonic() + timeout_s
    while usage.snapshot(pid).cpu_s - began < burned_s * busy_threads:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the server did not start burning CPU for {busy_threads} /cpu requests")
        time.sleep(0.005)


def hello_latencies_ms(url, busy_threads, *, probes=50, cpu_ms=500, pid=None, gap_s=0.01, settle_s=0.05,
                       timeout_s=30.0):
    """Latencies (ms) of `probes` requests for `/`, one after another on one kept-alive connection, while
    `busy_threads` other clients each keep a /cpu request running. Run it on a server that gives each connection
    a thread of its own (threaded_app without a pool) to see the GIL; on one with a process per request
    (gunicorn's sync workers, more of them than busy clients) to see processes without it. With the server's
    `pid`, the timing starts only once its processes are seen burning CPU; without it, `settle_s` after sending.
    Each request leaves `gap_s` after the last answer, as an independent user's would: sent at once, it could
    catch the GIL before a busy thread, slow to wake, has taken it back."""
    stop = threading.Event()
    started = threading.Semaphore(0)
    helpers = [
        threading.Thread(target=_keep_busy, args=(url, cpu_ms, stop, started, timeout_s), daemon=True)
        for _ in range(busy_threads)
    ]
    latencies = []
    try:
        for helper in helpers:
            helper.start()
        for _ in helpers:
            if not started.acquire(timeout=timeout_s):
                raise TimeoutError("a /cpu connection did not start")
        if pid is None:
            time.sleep(settle_s)  # let the busy requests reach their handler threads
        else:
            _wait_until_burning(pid, busy_threads, timeout_s)
        asker = _Asker(url, timeout_s)
        try:
            asker.send("/")  # a first request opens the connection, which is not what we time
            asker.answer()
            for _ in range(probes):
                time.sleep(gap_s)
                if asker.sock is None:
                    asker.sock = _connect(url, timeout_s)  # connected before the clock starts
                    asker.reader = http1.AnswerReader(asker.sock)
                began = time.perf_counter()
                asker.send("/")
                status = asker.answer()
                latencies.append((time.perf_counter() - began) * 1000)
                if status != 200:
                    raise RuntimeError(f"/ answered {status}")
        finally:
            asker.close()
    finally:
        stop.set()
        for helper in helpers:
            helper.join(timeout=timeout_s)  # each finishes the /cpu request it is in: at most cpu_ms
    return latencies


BUFFER = bytes(1 << 20)  # 1 MiB: hashlib lets the GIL go while it hashes anything over 2 KiB


def hash_in_c():
    """C code that releases the GIL: SHA-256 of 1 MiB, done inside hashlib with the GIL let go."""
    hashlib.sha256(BUFFER).digest()


def count_in_python():
    """Python bytecode: the same kind of work, a loop, but every step of it needs the GIL."""
    total = 0
    for number in range(20_000):
        total += number
    return total


@dataclass(frozen=True)
class ThreadsAtWork:
    threads: int
    calls_per_s: float
    cores_busy: float  # the process's CPU seconds per second of the run: how many cores it kept busy
    others_share: float  # the share of the usable cores' time other programs took meanwhile


def threads_at_work(work, threads, seconds=0.3, retries=0, disturbed_share=0.05):
    """Call `work` again and again in `threads` threads at once for about `seconds`: the calls per second they
    made together, and the cores the process kept busy meanwhile. While other programs took more than
    `disturbed_share` of the cores, it runs again (`retries` times at most) and keeps the least disturbed run."""
    runs = [_threads_at_work(work, threads, seconds)]
    while runs[-1].others_share > disturbed_share and len(runs) <= retries:
        runs.append(_threads_at_work(work, threads, seconds))
    return min(runs, key=lambda run: run.others_share)


def _threads_at_work(work, threads, seconds):
    calls = [0] * threads
    deadline = time.perf_counter() + seconds

    def keep_calling(index):
        while time.perf_counter() < deadline:
            work()
            calls[index] += 1

    workers = [threading.Thread(target=keep_calling, args=(index,), daemon=True) for index in range(threads)]
    machine_began = cores.read()
    began, cpu_began = time.perf_counter(), time.process_time()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    wall_s, cpu_s = time.perf_counter() - began, time.process_time() - cpu_began
    use = cores.between(machine_began, cores.read(), wall_s, 0.0, environment.usable_cpus(len(cores.usable_cores())))
    return ThreadsAtWork(threads, sum(calls) / wall_s, cpu_s / wall_s, use.others_share)


def switch_interval_ms():
    """How long CPython lets a thread keep the GIL when another thread asks for it (sys.getswitchinterval)."""
    return sys.getswitchinterval() * 1000


def free_threading():
    """(True, why) when this interpreter runs Python threads without a GIL; (False, why not) otherwise."""
    built_without = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    version = ".".join(map(str, sys.version_info[:3]))
    if not built_without:
        return False, (
            f"this kernel runs CPython {version}, built with the GIL (Py_GIL_DISABLED is not set). Free-threaded "
            "CPython is a separate build, from 3.13 on (python3.13t, python3.14t)"
        )
    enabled = getattr(sys, "_is_gil_enabled", lambda: True)()
    if enabled:
        return False, (
            f"this CPython {version} is a free-threaded build, but the GIL was turned back on "
            "(PYTHON_GIL=1, -X gil=1, or an extension module that is not marked free-thread safe)"
        )
    return True, f"CPython {version}, free-threaded build, GIL disabled"
