"""Bounded load runs against the lab's servers, recorded as one sample per request; this module measures, never draws."""

import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import NamedTuple
from urllib.parse import urlsplit

import requests

from .contract import check_loopback

LIMITS = {
    "requests": (1, 1_000_000),
    "concurrency": (1, 10_000),
    "timeout_s": (0.001, 600.0),
    "max_duration_s": (0.001, 3600.0),
}
CLIENTS = ("async", "raw", "sync")  # aiohttp, raw asyncio protocol, requests in threads
SYNC_CLIENT_MAX_THREADS = 1000
FDS_BESIDES_CONNECTIONS = 64  # the client process's own files, pipes and sockets
STOP_GRACE_S = 5.0  # after the run's own bounds, how long before the client process is killed


class LoadParameterError(ValueError):
    """A load run asked for something outside its allowed range; the text names parameter, value and range."""


class Sample(NamedTuple):
    """One request: times in seconds since the run began; status 0 and an error kind when no answer came."""

    start: float
    end: float
    status: int
    bytes: int
    error: str | None
    connection: int

    @property
    def latency(self):
        return self.end - self.start


@dataclass(frozen=True)
class LoadSpec:
    """What a run may do: every run is bounded in requests, concurrency, duration and per-request time."""

    url: str
    requests: int = 200
    concurrency: int = 40
    client: str = "async"
    keep_alive: bool = True
    timeout_s: float = 60.0
    max_duration_s: float = 300.0

    def validate(self):
        parts = urlsplit(self.url)
        if parts.scheme != "http" or not parts.hostname:
            raise LoadParameterError(f"url must look like http://127.0.0.1:PORT/path, got {self.url!r}")
        try:
            check_loopback(parts.hostname)
        except ValueError as error:
            raise LoadParameterError(f"url {self.url!r}: {error}") from None
        if self.client not in CLIENTS:
            raise LoadParameterError(f"client must be one of {CLIENTS}, got {self.client!r}")
        for name, (low, high) in LIMITS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
                raise LoadParameterError(f"{name} must be between {low} and {high}, got {value!r}")
        if self.requests < self.concurrency:
            raise LoadParameterError(
                f"requests must be at least concurrency ({self.concurrency}) so every user sends one,"
                f" got {self.requests}"
            )
        if self.client == "sync" and self.concurrency > SYNC_CLIENT_MAX_THREADS:
            raise LoadParameterError(
                f"concurrency must be at most {SYNC_CLIENT_MAX_THREADS} with the sync client"
                f" (one thread per user), got {self.concurrency}"
            )
        soft_limit, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        needed = self.concurrency + FDS_BESIDES_CONNECTIONS
        if soft_limit != resource.RLIM_INFINITY and needed > soft_limit:
            raise LoadParameterError(
                f"concurrency must be at most {soft_limit - FDS_BESIDES_CONNECTIONS} here: {self.concurrency}"
                f" connections need about {needed} file descriptors and RLIMIT_NOFILE is {soft_limit}"
                " (raise it with `ulimit -n`)"
            )
        return self

    @property
    def hard_deadline_s(self):
        """No run lasts longer than this, even if the client process misbehaves."""
        return self.max_duration_s + self.timeout_s + STOP_GRACE_S


@dataclass
class LoadResult:
    """A finished run: its spec, its samples, and how long it took from first send to last answer."""

    spec: LoadSpec
    samples: list
    duration_s: float
    stop_reason: str
    client_stderr: str = ""

    @property
    def errors(self):
        return sum(1 for sample in self.samples if sample.error)


@dataclass
class LoadRun:
    """A run in progress in its own process, so neither the GIL nor the kernel's loop slows the client."""

    spec: LoadSpec
    process: subprocess.Popen = field(repr=False)
    stderr_file: object = field(repr=False)
    started: float = field(default_factory=time.monotonic)
    in_flight: int = 0
    client_time_s: float = 0.0

    def __post_init__(self):
        self._samples = []
        self._lock = threading.Lock()
        self._finished = threading.Event()
        self._stop_reason = "completed"
        self._reader = threading.Thread(target=self._read, name="load-reader", daemon=True)
        self._reader.start()
        # Bounded even if nobody ever calls wait(): the run ends at its hard deadline.
        self._deadline = threading.Timer(
            self.spec.hard_deadline_s, self.stop, args=(f"killed at the hard deadline of {self.spec.hard_deadline_s:.0f} s",)
        )
        self._deadline.daemon = True
        self._deadline.start()

    def _read(self):
        # Only this thread touches stdout; the cell asks for snapshots.
        for line in self.process.stdout:
            message = json.loads(line)
            with self._lock:
                self._samples.extend(Sample(*row) for row in message.get("samples", ()))
                self.in_flight = message.get("in_flight", 0)
                self.client_time_s = message["t"]
        self.process.wait()
        self._deadline.cancel()
        self._finished.set()

    def samples(self):
        """A snapshot of the samples finished so far."""
        with self._lock:
            return list(self._samples)

    def elapsed_s(self):
        return time.monotonic() - self.started

    def done(self):
        return self._finished.is_set()

    def stop(self, reason="stopped"):
        """End the run now; what was recorded so far is kept."""
        if not self.done():
            self._stop_reason = reason
            self.process.kill()
        self._finished.wait()

    def wait(self, timeout=None):
        """Block until the run ends (or its hard deadline passes) and return its LoadResult."""
        remaining = self.spec.hard_deadline_s - self.elapsed_s()
        limit = remaining if timeout is None else min(timeout, remaining)
        if not self._finished.wait(max(limit, 0)):
            if timeout is not None and timeout < remaining:
                raise TimeoutError(f"load run still going after {timeout} s")
            self._finished.wait()  # the deadline timer is stopping it
        return self.result()

    def result(self):
        samples = sorted(self.samples(), key=lambda sample: sample.start)
        duration = max((sample.end for sample in samples), default=0.0)
        reason = self._stop_reason
        if reason == "completed" and self.process.returncode != 0:
            reason = f"client process exited with code {self.process.returncode}"
        elif reason == "completed" and len(samples) < self.spec.requests:
            reason = f"duration limit of {self.spec.max_duration_s} s reached"
        return LoadResult(self.spec, samples, duration, reason, self._stderr())

    def _stderr(self):
        self.stderr_file.seek(0)
        return self.stderr_file.read().decode(errors="replace")[-2000:]


def start_load(url, **spec):
    """Validate the run's bounds, then start the client process and return a LoadRun at once."""
    load_spec = LoadSpec(url, **spec).validate()
    stderr_file = tempfile.TemporaryFile()
    process = subprocess.Popen(
        [sys.executable, "-m", "iolab.load_clients", json.dumps(asdict(load_spec))],
        stdin=subprocess.PIPE,  # our end stays open; the client exits when it closes
        stdout=subprocess.PIPE,
        stderr=stderr_file,
        text=True,
    )
    run = LoadRun(load_spec, process, stderr_file)
    _register(run)
    return run


def run_load(url, **spec):
    """Run a bounded closed-loop load to the end and return its LoadResult."""
    run = start_load(url, **spec)
    try:
        return run.wait()
    finally:
        run.stop()


def fire_staggered(urls, gap_s=0.1, timeout_s=30.0):
    """Send one request per URL, each `gap_s` after the one before, and time them from the first send."""
    for url in urls:
        LoadSpec(url, requests=1, concurrency=1, timeout_s=timeout_s).validate()
    t0 = time.perf_counter()

    def fetch(index, url):
        time.sleep(max(0.0, index * gap_s - (time.perf_counter() - t0)))
        start = time.perf_counter() - t0
        try:
            response = requests.get(url, timeout=timeout_s, headers={"Connection": "close"})
            return Sample(start, time.perf_counter() - t0, response.status_code, len(response.content), None, index)
        except requests.RequestException as error:
            return Sample(start, time.perf_counter() - t0, 0, 0, type(error).__name__, index)

    with ThreadPoolExecutor(max_workers=len(urls)) as pool:
        return list(pool.map(fetch, range(len(urls)), urls))


_runs = []


def _register(run):
    # Closing the client's stdin at interpreter exit is what stops it; keeping
    # a reference here stops the garbage collector from doing it too early.
    _runs[:] = [r for r in _runs if not r.done()] + [run]
