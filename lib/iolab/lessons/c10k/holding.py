"""Hold N connections on a running server and measure their cost: memory, threads, files, a fresh request's latency."""

import json
import os
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field

import psutil

from iolab import listening, metrics, params
from iolab.children import python, spawn
from iolab.contract import FDS_BESIDES_CONNECTIONS, check_loopback

from . import client, limits

MAX_CONNECTIONS = 60_000  # far beyond a laptop's file limit; the lesson picks N from what fits
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


@dataclass(frozen=True)
class Footprint:
    """What a process tree holds right now: resident and virtual memory, threads, open files."""

    rss_kb: int
    vsz_kb: int
    threads: int
    fds: int
    processes: int


def footprint(pid):
    """The footprint of process `pid` and all its children (gunicorn's workers, say)."""
    root = psutil.Process(pid)
    tree = [root, *root.children(recursive=True)]
    rss = vsz = threads = fds = 0
    for process in tree:
        try:
            with process.oneshot():
                memory = process.memory_info()
                rss, vsz = rss + memory.rss, vsz + memory.vms
                threads += process.num_threads()
                fds += process.num_fds()
        except psutil.NoSuchProcess:
            continue
    return Footprint(rss // 1024, vsz // 1024, threads, fds, len(tree))


def cpu_seconds(pid):
    """CPU seconds (user + system) process `pid` has used so far; 0.0 once it is gone."""
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return times.user + times.system


def kernel_memory():
    """(TCP sockets in use, their buffers in KiB, the kernel's slab in KiB, its threads' kernel stacks in KiB), machine-wide.

    The buffers come from /proc/net/sockstat (`mem`, in pages); the socket
    structures themselves, their files and epoll entries live in the slab
    (/proc/meminfo), which every process on the machine shares: a noisy figure.
    Every thread also has a kernel stack of its own (KernelStack, 16 KiB each on
    x86-64), so a thread per connection costs the kernel that much more.
    """
    inuse = buffers_kb = slab_kb = stacks_kb = None
    try:
        with open("/proc/net/sockstat") as sockstat:
            for line in sockstat:
                if line.startswith("TCP:"):
                    fields = line.split()
                    values = dict(zip(fields[1::2], map(int, fields[2::2])))
                    inuse, buffers_kb = values.get("inuse", 0), values.get("mem", 0) * PAGE_KB
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("Slab:"):
                    slab_kb = int(line.split()[1])
                elif line.startswith("KernelStack:"):
                    stacks_kb = int(line.split()[1])
    except OSError:
        pass
    return inuse, buffers_kb, slab_kb, stacks_kb


@dataclass
class Step:
    """One step of a holding run: what the client saw, and what the server weighed while the connections were held."""

    server: str
    target: int
    held: int
    accept_s: float
    errors: dict
    first_error: dict | None
    closed_by_server: int
    shortest_idle_close_s: float | None
    connect_ms: list = field(repr=False)
    answer_ms: list = field(repr=False)
    fresh_ms: list = field(repr=False)
    fresh_error: str | None
    client_nofile: list
    client_max_rss_kb: int
    footprint: Footprint | None = None
    tcp_inuse: int | None = None
    tcp_mem_kb: int | None = None
    slab_kb: int | None = None
    kernel_stacks_kb: int | None = None  # KernelStack: one kernel stack per thread, machine-wide
    listen_overflows: int = 0
    baseline: "Step | None" = field(default=None, repr=False)
    limit: str | None = None
    message: str | None = None

    @property
    def fresh_p50_ms(self):
        return metrics.percentile(sorted(self.fresh_ms), 0.50) if self.fresh_ms else None

    @property
    def fresh_p99_ms(self):
        return metrics.percentile(sorted(self.fresh_ms), 0.99) if self.fresh_ms else None

    def _per_connection(self, now, then):
        if self.baseline is None or not self.held or now is None or then is None:
            return None
        return (now - then) / self.held

    @property
    def kb_per_connection(self):
        """The server's RSS slope: KiB it grew by for each connection held, from the baseline with none."""
        base = self.baseline.footprint if self.baseline else None
        return self._per_connection(self.footprint and self.footprint.rss_kb, base and base.rss_kb)

    @property
    def vsz_kb_per_connection(self):
        base = self.baseline.footprint if self.baseline else None
        return self._per_connection(self.footprint and self.footprint.vsz_kb, base and base.vsz_kb)

    @property
    def kernel_kb_per_connection(self):
        """Kernel memory per connection, both ends: socket buffers, slab (sockets, files) and the kernel stacks of
        any threads the connections started; machine-wide, so noisy."""
        base = self.baseline
        if base is None or None in (self.tcp_mem_kb, self.slab_kb, base.tcp_mem_kb, base.slab_kb):
            return None
        stacks, base_stacks = self.kernel_stacks_kb or 0, base.kernel_stacks_kb or 0
        return self._per_connection(self.tcp_mem_kb + self.slab_kb + stacks, base.tcp_mem_kb + base.slab_kb + base_stacks)

    @property
    def kernel_stack_kb_per_connection(self):
        """The part of the kernel's cost that is threads' kernel stacks (KernelStack in /proc/meminfo)."""
        base = self.baseline
        if base is None or None in (self.kernel_stacks_kb, base.kernel_stacks_kb):
            return None
        return self._per_connection(self.kernel_stacks_kb, base.kernel_stacks_kb)

    @property
    def threads(self):
        return self.footprint.threads if self.footprint else None

    @property
    def rss_mb(self):
        return self.footprint.rss_kb / 1024 if self.footprint else None

    def row(self):
        """The lesson's results row for this step."""
        return {
            "server": self.server,
            "connections": self.held,
            "rss_mb": _rounded(self.rss_mb, 2),
            "kb_per_connection": _rounded(self.kb_per_connection, 2),
            "threads": self.threads,
            "accept_s": _rounded(self.accept_s, 3),
            "fresh_p50_ms": _rounded(self.fresh_p50_ms, 3),
            "fresh_p99_ms": _rounded(self.fresh_p99_ms, 3),
            "limit": self.limit,
        }


def _rounded(value, digits):
    return None if value is None else round(value, digits)


@dataclass
class HoldResult:
    """A whole run against one server: the baseline with no connection, then one Step per size asked for."""

    server: str
    baseline: Step
    steps: list
    open_fds_after: int | None = None

    @property
    def last(self):
        return self.steps[-1] if self.steps else self.baseline

    @property
    def limit(self):
        return next((step.limit for step in self.steps if step.limit), None)

    @property
    def message(self):
        return next((step.message for step in self.steps if step.limit), None)

    @property
    def held_all(self):
        return all(step.held >= step.target for step in self.steps)

    def rows(self):
        return [step.row() for step in self.steps]

    def raise_for_limit(self):
        """Raise LimitReached naming the limit if any step held fewer connections than it asked for."""
        for step in self.steps:
            if step.held < step.target:
                raise limits.LimitReached(step.limit, f"{self.server}, {step.target:,} connections: {step.message}")
        return self


def check_size(steps, nofile=None, sources=None, source_ports=None, server_pid=None):
    """Refuse, before anything starts, a run the client's or the server's file limit or the source ports cannot hold."""
    if not steps or any(not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_CONNECTIONS for n in steps):
        raise params.ParameterError(f"steps must be whole numbers of connections from 1 to {MAX_CONNECTIONS:,}, got {steps!r}")
    if list(steps) != sorted(set(steps)):
        raise params.ParameterError(f"steps must grow, each larger than the last, got {steps!r}")
    largest = steps[-1]
    soft, hard = limits.file_limits()
    client_limit = hard if nofile is None else min(nofile, hard)
    if largest + FDS_BESIDES_CONNECTIONS > client_limit:
        raise limits.LimitReached(limits.NOFILE_CLIENT, (
            f"{largest:,} connections need {largest + FDS_BESIDES_CONNECTIONS:,} file descriptors in the client,"
            f" and its RLIMIT_NOFILE would be {client_limit:,} (hard limit {hard:,}). Ask for fewer connections,"
            " or raise the hard limit (ulimit -Hn, as root, or in /etc/security/limits.conf)."
        ))
    if server_pid is not None:
        server_soft, server_hard = limits.file_limits(server_pid)
        if largest + FDS_BESIDES_CONNECTIONS > server_soft:
            raise limits.LimitReached(limits.NOFILE_SERVER, (
                f"the server (pid {server_pid}) may open {server_soft:,} files (RLIMIT_NOFILE soft limit) and"
                f" {largest:,} connections need more. Raise the limit in the process that starts it, before it starts"
                f" (iolab.environment.raise_file_limit(), up to {server_hard:,}): it inherits it."
            ))
    ports = (source_ports[1] - source_ports[0] + 1) if source_ports else limits.ports_per_source()
    if sources is not None and largest > ports * len(sources):
        raise limits.LimitReached(limits.PORTS, (
            f"{largest:,} connections from {len(sources)} source address(es) need more than the {ports:,} ports each"
            " one has towards one server: spread them over more source addresses."
        ))


class Holding:
    """A holding client in its own process, driven step by step: `with Holding(server, [100, 1000]) as run: ...`."""

    def __init__(self, server, steps, *, window=100, sources=None, source_ports=None, fresh_requests=100,
                 nofile=None, path="/", connect_timeout_s=10.0, answer_timeout_s=10.0, step_deadline_s=60.0,
                 hold_s=120.0, preflight=True, label=None):
        check_loopback(server.host)
        steps = list(steps)
        if sources is None:
            sources = limits.sources_for(steps[-1] if steps else 1)
        if preflight:
            check_size(steps, nofile, sources, source_ports, server.pid)
        else:
            check_size(steps, nofile=10**9)  # the shape of `steps` only: the run is meant to meet a limit
        params.check_range("window", window, 1, MAX_CONNECTIONS)
        for name, value in (("connect_timeout_s", connect_timeout_s), ("answer_timeout_s", answer_timeout_s),
                            ("step_deadline_s", step_deadline_s), ("hold_s", hold_s)):
            params.check_range(name, value, 0, 3600, integer=False, above=True)
        params.check_range("fresh_requests", fresh_requests, 0, 100_000)
        self.server = server
        self.label = label or server.name  # what the results call this server
        self.spec = {
            "host": server.host, "port": server.port, "path": path, "steps": steps, "window": window,
            "sources": sources, "source_ports": source_ports, "fresh_requests": fresh_requests, "nofile": nofile,
            "connect_timeout_s": connect_timeout_s, "answer_timeout_s": answer_timeout_s,
            "step_deadline_s": step_deadline_s, "hold_s": hold_s,
        }
        # Bounded even if nobody reads us: every step ends by its deadline, every wait by hold_s.
        self.deadline_s = (step_deadline_s + hold_s + 10 + fresh_requests * answer_timeout_s) * (len(steps) + 1)
        self._stderr = tempfile.TemporaryFile()
        self._mark()
        self.process = spawn(python("-m", client.__name__, json.dumps(self.spec)),
                             stdin=subprocess.PIPE, stderr=self._stderr)
        self._killer = threading.Timer(self.deadline_s, self.process.kill)
        self._killer.daemon = True
        self._killer.start()
        self.baseline = None
        self.steps = []
        self.closed = None

    def _message(self):
        line = self.process.stdout.readline()
        if not line:
            self.process.wait(timeout=10)
            self._stderr.seek(0)
            tail = self._stderr.read().decode(errors="replace")[-1500:]
            raise RuntimeError(f"the holding client exited with code {self.process.returncode}:\n{tail}")
        return json.loads(line)

    def next_step(self):
        """Wait for the client's next step, weigh the server while it holds it, and return the Step (None when done)."""
        if self.closed is not None:
            return None
        message = self._message()
        if message["kind"] == client.CLOSED:
            self.closed = message
            return None
        step = Step(self.label, **{k: message[k] for k in (
            "target", "held", "accept_s", "errors", "first_error", "closed_by_server", "shortest_idle_close_s",
            "connect_ms", "answer_ms",
            "fresh_ms", "fresh_error", "client_nofile", "client_max_rss_kb")})
        time.sleep(0.05)  # let the last thread or buffer settle before weighing
        if self.server.alive():
            try:
                step.footprint = footprint(self.server.pid)
            except psutil.NoSuchProcess:
                step.footprint = None
        step.tcp_inuse, step.tcp_mem_kb, step.slab_kb, step.kernel_stacks_kb = kernel_memory()
        overflows_after = listening.listen_overflows()
        if self._overflows_mark is not None and overflows_after is not None:
            step.listen_overflows = overflows_after - self._overflows_mark
        if self.baseline is None:
            self.baseline = step
        else:
            step.baseline = self.baseline
            stderr = self._server_stderr()[self._stderr_mark:]
            step.limit, step.message = limits.diagnose(step, self.server, step.listen_overflows, stderr)
            self.steps.append(step)
        return step

    def _server_stderr(self):
        return self.server.stderr_tail(lines=10**9)

    def _mark(self):
        """Where the server's stderr and the kernel's overflow count stand before a step begins."""
        self._stderr_mark = len(self._server_stderr())
        self._overflows_mark = listening.listen_overflows()

    def proceed(self, go_on=True):
        """Tell the client to open the next step (or to close everything)."""
        self._mark()
        if self.process.poll() is None:
            try:
                self.process.stdin.write(b"next\n" if go_on else b"stop\n")
                self.process.stdin.flush()
            except BrokenPipeError:
                pass

    def run(self, on_step=None):
        """Every step to the end (or to the first that falls short), then close; returns the HoldResult."""
        try:
            while (step := self.next_step()) is not None:
                if on_step is not None and step is not self.baseline:
                    on_step(step)
                self.proceed(step.held >= step.target)
            return self.result()
        finally:
            self.close()

    def result(self):
        return HoldResult(self.label, self.baseline, self.steps,
                          (self.closed or {}).get("open_fds"))

    def close(self):
        """Close every connection (the client does, on end of file) and reap the client."""
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
            except BrokenPipeError:
                pass
            try:
                # Drain its last lines so it never blocks writing them.
                for line in self.process.stdout:
                    message = json.loads(line)
                    if message.get("kind") == client.CLOSED:
                        self.closed = message
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._killer.cancel()
        self.process.stdout.close()
        self._stderr.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def hold(server, steps, on_step=None, **options):
    """Hold `steps` connections (e.g. [100, 1000, 10000]) against `server`, one after the other; the HoldResult.

    `on_step(step)` is called as each step is weighed, while its connections are still held.
    """
    return Holding(server, steps, **options).run(on_step)


def summary(result):
    """The figures a notebook prints for one run, as a dict."""
    footprint = asdict(result.last.footprint) if result.last.footprint else {}
    return {**footprint, **result.last.row()}
