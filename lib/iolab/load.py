"""Bounded load runs against the lab's servers.

They run in client processes of their own; this module measures, never draws.

`kind=` names the client, one of clients.kinds: a closed loop (each user sends
when its last answer is in: "closed_async", the default, "closed_raw",
"closed_sync"), an open loop (requests leave on a schedule, whatever the
answers do: "open"), pipelined (each connection keeps requests in flight),
lesson 08's batch client, lesson 11's libraries, lesson 12's subscribers. A run
keeps one Sample per request, or for large runs (`record="aggregate"`, chosen
by itself above AGGREGATE_ABOVE requests) counts per time bin and latency
histograms; the batch client only counts, in LoadResult.reports
(`run_batches` adds them up).
"""

import json
import resource
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from typing import IO, TYPE_CHECKING, Any, NamedTuple, cast

import requests

from . import usage
from .children import python, spawn
from .clients import kinds, wire
from .clients.aggregate import Aggregate
from .clients.event_loops import EVENT_LOOPS, uvloop_installed
from .clients.kinds import CLIENTS, LoadParameterError  # noqa: F401 -- callers read them here
from .clients.shares import split
from .contract import FDS_BESIDES_CONNECTIONS, check_loopback_url
from .params import check_choice, check_range
from .usage import ContainerTrace, ContainerWindow, RunUsage

if TYPE_CHECKING:
    import numpy as np

    from .link import Link

LIMITS = {
    "requests": (1, 1_000_000_000),
    "concurrency": (1, 10_000),
    "timeout_s": (0.001, 600.0),
    "max_duration_s": (0.001, 3600.0),
    "processes": (1, 32),
}
RECORDS = ("auto", "samples", "aggregate")
SAMPLES_LIMIT = 1_000_000  # a run keeping every request as a Sample object stays below a few hundred MB
AGGREGATE_ABOVE = 100_000  # record="auto" keeps samples up to here, an Aggregate beyond
STARTUP_S = 15.0  # how long client processes may take to import and connect before the run's clock starts
STOP_GRACE_S = 5.0  # after the run's own bounds, how long before the client processes are killed
GO_MARGIN_S = 0.01  # time zero is this far after the last process is ready, so every process starts on it


class Sample(NamedTuple):
    """One request: times in seconds since the run began; status 0 and an error kind when no answer came.

    `user` is who sent it (a closed loop's user, an open loop's arrival), `connection`
    the connection that carried it (-1 when none was made), `intended` when the
    schedule meant to send it: the same as `start` in a closed loop, earlier when an
    open loop's request had to wait for a free connection.
    """

    start: float
    end: float
    status: int
    bytes: int
    error: str | None
    user: int
    connection: int = -1
    intended: float | None = None  # None in a hand-made sample: taken as sent when intended

    @property
    def latency(self) -> float:
        """From the actual send to the answer: what a client that waits for its own turn sees."""
        return self.end - self.start

    @property
    def latency_from_intended(self) -> float:
        """From the intended send to the answer: what a user arriving on schedule sees, waiting included."""
        return self.end - (self.start if self.intended is None else self.intended)

    @property
    def send_lag(self) -> float:
        """How late it left: actual send minus intended send."""
        return 0.0 if self.intended is None else self.start - self.intended


def samples_of(rows: "np.ndarray", error_names: Sequence[str | None]) -> list[Sample]:
    """Samples from a frame's rows (a numpy array of wire.row_dtype()), each field read by its name."""
    columns = {name: rows[name].tolist() for name in ("start", "end", "intended")}
    for name in ("status", "bytes", "user", "connection"):
        columns[name] = rows[name].astype(int).tolist()
    columns["error"] = [error_names[code] for code in rows["error"].astype(int).tolist()]
    return list(map(Sample, *(columns[name] for name in Sample._fields)))


@dataclass(frozen=True, init=False)
class LoadSpec:
    """What a run may do: every run is bounded in requests, concurrency, duration and per-request time.

    Only what every kind of client shares is here; `kind` names the client
    (clients.kinds) and `options` holds its own fields, checked when made.
    `concurrency` means what the kind's options say (users in a closed loop, the
    most outstanding requests in an open loop, connections in a pipelined run).
    `processes` splits the connections between that many client processes.

    `LoadSpec(url, kind="open", rate_rps=100)` names the kind and gives its
    options as keywords; an option the kind does not take is refused with the
    kinds that take it.
    """

    url: str
    requests: int = 200
    concurrency: int = 40
    timeout_s: float = 60.0
    max_duration_s: float = 300.0
    processes: int = 1
    record: str = "auto"  # "samples", "aggregate", or "auto": samples up to AGGREGATE_ABOVE requests
    event_loop: str = "auto"  # "uvloop" where installed ("auto"), or "asyncio"
    kind: str = "closed_async"  # a name in clients.kinds.KINDS that iolab.load runs
    # That kind's options (an instance of its options class): __init__ always sets them, so no spec holds None.
    options: kinds.Options = None  # type: ignore[assignment]

    def __init__(self, url: str, *, requests: int = 200, concurrency: int = 40, timeout_s: float = 60.0,
                 max_duration_s: float = 300.0, processes: int = 1, record: str = "auto", event_loop: str = "auto",
                 kind: str = "closed_async", options: kinds.Options | None = None, **kind_options: Any) -> None:
        kinds.refuse_old_keywords(kind_options)
        info = kinds.get(kind)
        if options is None:
            options = kinds.options_for(kind, **kind_options)
        elif kind_options:
            raise LoadParameterError(f"options= is given, so {sorted(kind_options)} must go into it")
        elif not isinstance(options, info.options):
            raise LoadParameterError(f"options for kind {kind!r} must be a {info.options.__name__}, got {options!r}")
        values = dict(url=url, requests=requests, concurrency=concurrency, timeout_s=timeout_s,
                      max_duration_s=max_duration_s, processes=processes, record=record, event_loop=event_loop,
                      kind=kind, options=options)
        for name, value in values.items():
            object.__setattr__(self, name, value)  # frozen: set this way

    @property
    def info(self) -> kinds.KindInfo:
        """The kind's entry in clients.kinds."""
        return kinds.get(self.kind)

    @property
    def loop(self) -> str:
        return self.info.loop

    @property
    def client(self) -> str:
        return self.info.client

    def to_process(self, process: int) -> dict[str, Any]:
        """What client process `process` is told, as JSON: the shared fields, the kind and its options, flat."""
        shared = {field.name: getattr(self, field.name) for field in fields(self) if field.name != "options"}
        return shared | self.options.as_dict() | {"process": process, "processes": self.processes}

    @property
    def aggregated(self) -> bool:
        """True when the run keeps counts and histograms instead of one sample per request."""
        if self.record == "auto":
            return isinstance(self.requests, int) and self.requests > AGGREGATE_ABOVE
        return self.record == "aggregate"

    def validate(self, lab: bool = False) -> "LoadSpec":
        """The spec, checked; `lab` when its clients run inside a namespace iolab.link built (198.18.0.0/15)."""
        try:
            check_loopback_url(self.url, "url", "http", "/path", lab)  # the one loopback rule, as the servers' wrappers read it
        except ValueError as error:
            raise LoadParameterError(str(error)) from None
        for name, (low, high) in LIMITS.items():
            check_range(name, getattr(self, name), low, high, integer=False, error=LoadParameterError)
        for name in ("requests", "concurrency", "processes"):
            if not isinstance(getattr(self, name), int):
                raise LoadParameterError(f"{name} must be a whole number, got {getattr(self, name)!r}")
        check_choice("record", self.record, RECORDS, error=LoadParameterError)
        check_choice("event_loop", self.event_loop, EVENT_LOOPS, error=LoadParameterError)
        if self.event_loop == "uvloop" and not uvloop_installed():
            raise LoadParameterError("event_loop 'uvloop' was asked for, but uvloop is not installed here")
        if not self.aggregated and self.requests > SAMPLES_LIMIT:
            raise LoadParameterError(
                f"requests must be at most {SAMPLES_LIMIT} when every request is kept as a sample,"
                f" got {self.requests}: use record='aggregate' (or 'auto')"
            )
        if self.processes > self.concurrency:
            raise LoadParameterError(
                f"processes must be at most concurrency ({self.concurrency}): each process needs a connection,"
                f" got {self.processes}"
            )
        self.options.check_spec(self)
        self._validate_file_limit()
        return self

    def _validate_file_limit(self) -> None:
        # The server holds every connection of the run; each client process holds its share.
        soft_limit, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft_limit == resource.RLIM_INFINITY:
            return
        needed = self.concurrency + FDS_BESIDES_CONNECTIONS
        busiest_process = split(self.concurrency, self.processes, 0) + FDS_BESIDES_CONNECTIONS
        if max(needed, busiest_process) > soft_limit:
            raise LoadParameterError(
                f"concurrency must be at most {soft_limit - FDS_BESIDES_CONNECTIONS} here: {self.concurrency}"
                f" connections need about {needed} file descriptors in the server (and up to {busiest_process}"
                f" in each of {self.processes} client processes), and RLIMIT_NOFILE is {soft_limit}"
                " (raise it with `ulimit -n`)"
            )

    @property
    def hard_deadline_s(self) -> float:
        """No run lasts longer than this, even if a client process misbehaves."""
        return STARTUP_S + self.max_duration_s + self.timeout_s + STOP_GRACE_S


@dataclass
class LoadResult:
    """A finished run: its spec, what was recorded, and how long it took from time zero to the last answer.

    `samples` is a list of Sample, or for an aggregated run an Aggregate; both
    have len(), and metrics and live take either.
    """

    spec: LoadSpec
    samples: Aggregate | Sequence[Sample]
    duration_s: float
    stop_reason: str
    client_stderr: str = ""
    usage: RunUsage | None = None  # the CPU the server, the clients and this process spent
    time_zero: float | None = None  # the run's time zero, in time.perf_counter()
    # Each client process's totals, from its done frame, for a kind that counts (the batch client).
    reports: Sequence[dict[str, Any]] = ()

    @property
    def aggregated(self) -> bool:
        return isinstance(self.samples, Aggregate)

    def container(self) -> ContainerWindow | None:
        """The container's CPU and throttling from the first send to the last answer (usage.ContainerWindow).

        None where no CPU quota applies, or the run sent nothing. Exactly the load's window: the clients' start-up
        before it and their exit after it are left out, as they are from the throughput.
        """
        trace: ContainerTrace | None = getattr(self.usage, "container", None)
        if trace is None or self.time_zero is None or self.aggregated or not self.samples:
            return None
        first = min(sample.start for sample in self.samples)
        last = max(sample.end for sample in self.samples)
        return trace.window(self.time_zero + first, self.time_zero + last)

    @property
    def completed(self) -> int:
        """Requests finished, answered or failed."""
        return len(self.samples)

    @property
    def errors(self) -> int:
        """Requests that got no answer (transport errors, timeouts, answers out of order)."""
        if isinstance(self.samples, Aggregate):  # self.aggregated, in a form the type checker follows
            return self.samples.errors
        return sum(1 for sample in self.samples if sample.error)


class LoadRun:
    """A run in progress in client processes of its own, so neither the notebook's GIL nor its drawing slows them."""

    def __init__(self, spec: LoadSpec, processes: "list[subprocess.Popen[bytes]]", stderr_files: list[IO[bytes]],
                 server_pid: int | None = None, before_go: Callable[[], object] | None = None) -> None:
        self.spec = spec
        self.before_go = before_go
        self.processes = processes
        self.process = processes[0]
        self.stderr_files = stderr_files
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._chunks: list[tuple[np.ndarray, Sequence[str | None]]] = []  # (rows, error names) not yet turned into samples
        self._samples: list[Sample] = []
        self._aggregate = Aggregate() if spec.aggregated else None
        self._in_flight = [0] * len(processes)
        self._client_time = [0.0] * len(processes)
        self._reports: list[dict[str, Any] | None] = [None] * len(processes)
        self._ready = 0
        self._started_all = False
        self.time_zero: float | None = None  # the run's time zero in time.perf_counter(), once the go is sent
        self._finished = threading.Event()
        self._stderr_text = ""  # what the client processes said on stderr, kept when their files close
        self._stop_reason = "completed"
        self.meter = usage.RunMeter(server_pid)
        self._readers = [
            threading.Thread(target=self._read, args=(index,), name=f"load-reader-{index}", daemon=True)
            for index in range(len(processes))
        ]
        for reader in self._readers:
            reader.start()
        # Bounded even if nobody ever calls wait(): the run ends at its hard deadline.
        self._deadline = threading.Timer(
            spec.hard_deadline_s, self.stop, args=(f"killed at the hard deadline of {spec.hard_deadline_s:.0f} s",)
        )
        self._deadline.daemon = True
        self._deadline.start()
        self._watcher = threading.Thread(target=self._watch, name="load-watcher", daemon=True)
        self._watcher.start()

    @property
    def in_flight(self) -> int:
        return sum(self._in_flight)

    @property
    def client_time_s(self) -> float:
        """Seconds since time zero, as the client processes last reported."""
        return max(self._client_time)

    def _read(self, index: int) -> None:
        # Only this thread reads this process's stdout; the notebook asks for snapshots.
        process = self.processes[index]
        stdout = _pipes(process)[1]
        while (frame := wire.read_frame(stdout)) is not None:
            header, rows = frame
            self.meter.client_frame(process.pid, ready=header["kind"] == wire.READY)
            if header["kind"] == wire.READY:
                self._one_ready()
            elif header["kind"] == wire.ROWS:
                with self._lock:
                    if self._aggregate is not None:
                        self._aggregate.add(rows, header["error_names"])
                    elif len(rows):
                        self._chunks.append((rows, header["error_names"]))
                    self._in_flight[index] = header["in_flight"]
                    self._client_time[index] = header["t"]
            elif header["kind"] == wire.DONE and "report" in header:
                self._reports[index] = header["report"]
        process.wait()
        if process.returncode != 0 and not self._started_all:
            self.stop(f"client process {index} exited with code {process.returncode} before the run began", wait=False)

    def _one_ready(self) -> None:
        with self._lock:
            self._ready += 1
            if self._ready < len(self.processes):
                return
            self._started_all = True
        if self.before_go is not None:
            # Outside the measured window: the CPU counters and the clock start after it.
            try:
                self.before_go()
            except Exception as error:  # noqa: BLE001 -- whatever it was, the run must not hang waiting for its go
                self.stop(f"before the go: {type(error).__name__}: {error}", wait=False)
                return
        self.meter.start()  # the CPU counters open at the go, after every client has started up
        self.time_zero = time.perf_counter() + GO_MARGIN_S
        go = wire.go_line(self.time_zero)
        for process in self.processes:
            try:
                stdin = _pipes(process)[0]
                stdin.write(go)
                stdin.flush()
            except (BrokenPipeError, ValueError):
                pass  # that process has died; its reader reports it

    def _watch(self) -> None:
        for reader in self._readers:
            reader.join()
        self.meter.stop()
        self._deadline.cancel()
        # Three descriptors a process (its stdin, stdout and stderr file): closed now, not when the run is collected.
        self._stderr_text = self._stderr()
        for process in self.processes:
            for pipe in _pipes(process):
                try:
                    pipe.close()
                except (BrokenPipeError, OSError):
                    pass  # a go never flushed to a dead process
        for stderr_file in self.stderr_files:
            stderr_file.close()
        self._finished.set()

    def samples(self) -> Aggregate | list[Sample]:
        """A snapshot of what has finished so far: a list of Sample, or a copy of the Aggregate."""
        with self._lock:
            if self._aggregate is not None:
                return self._aggregate.copy()
            chunks, self._chunks = self._chunks, []
            for rows, names in chunks:
                self._samples.extend(samples_of(rows, names))
            return list(self._samples)

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def done(self) -> bool:
        return self._finished.is_set()

    def stop(self, reason: str = "stopped", wait: bool = True) -> None:
        """End the run now; what was recorded so far is kept."""
        if not self.done():
            if self._stop_reason == "completed":
                self._stop_reason = reason
            for process in self.processes:
                if process.poll() is None:
                    process.kill()
        if wait:
            self._finished.wait()

    def sleep_until(self, seconds: float) -> float:
        """Sleep until `seconds` after the run's time zero (the go first), in small steps so the caller acts on
        time; returns the run's clock then."""
        while self.time_zero is None or time.perf_counter() - self.time_zero < seconds:
            time.sleep(0.002)
        return time.perf_counter() - self.time_zero

    def wait(self, timeout: float | None = None) -> LoadResult:
        """Block until the run ends (or its hard deadline passes) and return its LoadResult."""
        remaining = self.spec.hard_deadline_s - self.elapsed_s()
        limit = remaining if timeout is None else min(timeout, remaining)
        if not self._finished.wait(max(limit, 0)):
            if timeout is not None and timeout < remaining:
                raise TimeoutError(f"load run still going after {timeout} s")
            self._finished.wait()  # the deadline timer is stopping it
        return self.result()

    def result(self) -> LoadResult:
        recorded: Aggregate | list[Sample]
        if self._aggregate is not None:
            with self._lock:
                recorded = self._aggregate.copy()
            duration, finished = recorded.last_end, len(recorded)
        else:
            recorded = sorted(self.samples(), key=lambda sample: sample.start)
            duration, finished = max((sample.end for sample in recorded), default=0.0), len(recorded)
        reports = [report for report in self._reports if report is not None]
        if reports:  # a kind that counts: its processes' totals say how far it went
            duration = max(report["seconds"] for report in reports)
            finished = sum(report["requests"] for report in reports)
        reason = self._stop_reason
        failed = [process.returncode for process in self.processes if process.returncode]
        if reason == "completed" and failed:
            reason = f"client process exited with code {failed[0]}"
        elif reason == "completed" and finished < self.spec.requests:
            reason = f"duration limit of {self.spec.max_duration_s} s reached"
        stderr = self._stderr_text if self.done() else self._stderr()
        return LoadResult(self.spec, recorded, duration, reason, stderr, self.meter.usage, self.time_zero, reports)

    def _stderr(self) -> str:
        texts = []
        for stderr_file in self.stderr_files:
            stderr_file.seek(0)
            texts.append(stderr_file.read().decode(errors="replace")[-2000:])
        return "\n".join(text for text in texts if text)


def start_load(url: str, server: Any = None, before_go: Callable[[], object] | None = None,
               link: "Link | None" = None, **spec: Any) -> LoadRun:
    """Validate the run's bounds, then start its client processes and return a LoadRun at once.

    With `server` (a servers.Server, or a pid) the run also measures the CPU that
    server's processes spend from the go to the end: the LoadResult's `usage`,
    which metrics.summarize turns into utilization and service demand.
    `before_go` is called (in a reader thread) once every client process is
    ready, and with `connect_first` connected, before the go: a look at the
    server before the measured window opens. With `link` (an iolab.link.Link) the client processes run in
    that link's client namespace, and `url` may name link.server_host.
    """
    load_spec = LoadSpec(url, **spec).validate(lab=link is not None)
    processes: list[subprocess.Popen[bytes]] = []
    stderr_files: list[IO[bytes]] = []
    for index in range(load_spec.processes):
        stderr_file = tempfile.TemporaryFile()
        arguments = load_spec.to_process(index)
        # stdin carries the go; stdout the client's frames.
        command = python("-m", "iolab.clients.process", json.dumps(arguments))
        if link is None:
            processes.append(spawn(command, stdin=subprocess.PIPE, stderr=stderr_file))
        else:
            processes.append(link.spawn("client", command, stdin=subprocess.PIPE, stderr=stderr_file))
        stderr_files.append(stderr_file)
    run = LoadRun(load_spec, processes, stderr_files, server_pid=getattr(server, "pid", server), before_go=before_go)
    _register(run)
    return run


def run_load(url: str, **spec: Any) -> LoadResult:
    """Run a bounded load (closed_async unless `kind=` says otherwise) to the end and return its LoadResult."""
    run = start_load(url, **spec)
    try:
        return run.wait()
    finally:
        run.stop()


@dataclass(frozen=True)
class BatchResult:
    """What one run of the batch client did: requests answered and checked, errors by kind, its wall time and CPU."""

    depth: int
    connections: int
    requests: int  # answers received, every one with the right number in its place
    errors: dict[str, int]  # kind -> requests lost to it ("wrong answer", "timeout", "closed", "refused")
    seconds: float  # from the first batch written to the last answer read
    client_cpu_s: float  # this client's CPU (user + system) over those seconds

    @classmethod
    def of_reports(cls, depth: int, connections: int, reports: Sequence[dict[str, Any]]) -> "BatchResult":
        """The run's totals from each client process's report (what clients.batch.run returns, in its done frame)."""
        errors: dict[str, int] = {}
        for report in reports:
            for kind, count in report["errors"].items():
                errors[kind] = errors.get(kind, 0) + count
        return cls(depth=depth, connections=connections, errors=errors,
                   requests=sum(report["requests"] for report in reports),
                   seconds=max(report["seconds"] for report in reports),
                   client_cpu_s=sum(report["client_cpu_s"] for report in reports))

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0

    @property
    def client_us(self) -> float:
        """The client's CPU per request, in microseconds."""
        return self.client_cpu_s / self.requests * 1e6 if self.requests else float("nan")

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


def run_batches(url: str, depth: int = 16, connections: int = 64, duration_s: float = 3.0, *, timeout_s: float = 10.0,
                max_requests: int = 1_000_000_000, processes: int = 1) -> BatchResult:
    """Drive the server at `url` with the batch client (clients/batch.py): batches of `depth` on `connections`
    connections for `duration_s`, in client processes of their own; the totals they report, added up.

    Only pipeline_batch_app and pipeline_app answer the numbered requests it sends. A bad argument is refused with
    a LoadParameterError naming it (the shared fields by these names: kinds.BATCH_SHARED_LIMITS).
    """
    result = run_load(url, kind="batch", depth=depth, concurrency=connections, max_duration_s=duration_s,
                      timeout_s=timeout_s, requests=max_requests, processes=processes, record="aggregate")
    if result.stop_reason not in ("completed", f"duration limit of {result.spec.max_duration_s} s reached") or len(
            result.reports) != processes:
        said = result.client_stderr.strip()[-800:]
        raise RuntimeError(f"the batch client failed ({result.stop_reason}): {said}")
    return BatchResult.of_reports(depth, connections, result.reports)


def fire_staggered(urls: Sequence[str], gap_s: float = 0.1, timeout_s: float = 30.0) -> list[Sample]:
    """Send one request per URL, each `gap_s` after the one before, and time them from the first send."""
    for url in urls:
        LoadSpec(url, requests=1, concurrency=1, timeout_s=timeout_s).validate()
    t0 = time.perf_counter()

    def fetch(index: int, url: str) -> Sample:
        time.sleep(max(0.0, index * gap_s - (time.perf_counter() - t0)))
        start = time.perf_counter() - t0
        answer: dict[str, Any] = {"status": 0, "bytes": 0, "error": None}
        try:
            response = requests.get(url, timeout=timeout_s, headers={"Connection": "close"})
            answer.update(status=response.status_code, bytes=len(response.content))
        except requests.RequestException as error:
            answer.update(error=type(error).__name__)
        end = time.perf_counter() - t0
        return Sample(start=start, end=end, user=index, connection=index, intended=index * gap_s, **answer)

    with ThreadPoolExecutor(max_workers=len(urls)) as pool:
        return list(pool.map(fetch, range(len(urls)), urls))


def _pipes(process: "subprocess.Popen[bytes]") -> tuple[IO[bytes], IO[bytes]]:
    """A client process's stdin (the go goes in) and stdout (its frames come out): start_load opens both."""
    return cast(IO[bytes], process.stdin), cast(IO[bytes], process.stdout)


_runs: list[LoadRun] = []


def _register(run: LoadRun) -> None:
    # A run's reader threads and deadline timer belong to it; keeping a reference here stops the garbage
    # collector from closing its pipes while it still goes.
    _runs[:] = [r for r in _runs if not r.done()] + [run]
