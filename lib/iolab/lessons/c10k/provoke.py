"""Runs that each meet one limit on purpose, then again with its fix: the limit's name, its error, the way past it."""

import contextlib
import os
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field

from iolab import cgroup_limit, children, listening, servers
from iolab.http1 import AnswerReader, get_request

from . import holding, limits

# Source ports for the ephemeral-port run: above ip_local_port_range, so the kernel never hands them to anyone
# else, and bound on 127.0.0.252-254, which nothing else on the machine uses.
DEMO_PORT_LOW = 61000
DEMO_SOURCES = ("127.0.0.254", "127.0.0.253", "127.0.0.252", "127.0.0.251")
QUICK = {"fresh_requests": 0, "connect_timeout_s": 3.0, "answer_timeout_s": 2.0, "step_deadline_s": 30.0}


@dataclass
class Meeting:
    """One limit met on purpose: the run that hit it, and the same run after the fix."""

    limit: str  # the limit this run is about, one of limits' names
    what: str  # the run, in words
    met: holding.Step  # the run that hit it: its diagnosed limit, error and message
    fix: str  # the fix, in words
    fixed: holding.Step  # the run after the fix
    details: dict = field(default_factory=dict)

    @property
    def named(self):
        """True when the lab named the limit this run was built to hit."""
        return self.met.limit == self.limit

    @property
    def error(self):
        first = self.met.first_error or {}
        return f"{first.get('kind')}: {first.get('message')}" if first else "no error: every connection came in late"

    @property
    def fix_held(self):
        return self.fixed.held >= self.fixed.target and self.fixed.limit is None

    @property
    def held_when_met(self):
        """Connections held when the limit struck (a server that dies closes them all in the same instant)."""
        first = self.met.first_error
        return limits.struck_at(first) if first else self.met.held

    def row(self):
        return [self.limit, self.what, f"{self.held_when_met:,} of {self.met.target:,}", self.error, self.fix,
                f"{self.fixed.held:,} of {self.fixed.target:,}"]


ROW_HEADERS = ["limit", "run", "held", "error", "fix", "held after the fix"]


def _one_step(server, connections, **options):
    return holding.hold(server, [connections], **{**QUICK, **options}).last


def client_files(server, connections=400, soft_limit=256):
    """The client's RLIMIT_NOFILE: a soft limit below the connections asked for, then raised to the hard limit."""
    met = _one_step(server, connections, nofile=soft_limit, preflight=False)
    fixed = _one_step(server, connections)  # the client raises its soft limit to the hard one by itself
    return Meeting(limits.NOFILE_CLIENT, f"the client, soft limit {soft_limit}, opens {connections:,}", met,
                   "resource.setrlimit(RLIMIT_NOFILE, (hard, hard)) in the client", fixed,
                   {"soft_limit": soft_limit, "hard_limit": limits.file_limits()[1]})


def server_files(name="tornado_app", connections=400, soft_limit=256, **options):
    """The server's RLIMIT_NOFILE: inherited from whoever started it; lowered to `soft_limit`, then raised again."""
    with servers.serve(name, **options) as server:
        inherited = limits.file_limits(server.pid)
        limits.set_file_limit(server.pid, soft_limit)
        cpu_before, began = holding.cpu_seconds(server.pid), time.monotonic()
        met = _one_step(server, connections, preflight=False)
        # Out of descriptors, a loop that only logs accept()'s EMFILE is woken again at once: it spins, at full CPU.
        busy = {"cpu_s": holding.cpu_seconds(server.pid) - cpu_before, "wall_s": time.monotonic() - began}
        limits.set_file_limit(server.pid, inherited[0])
        time.sleep(0.2)  # let it accept and close what waited in its backlog
        fixed = _one_step(server, connections)
    return Meeting(limits.NOFILE_SERVER, f"{name}, soft limit {soft_limit}, asked to hold {connections:,}", met,
                   f"raise its soft limit again, to the {inherited[0]:,} it inherited", fixed,
                   {"inherited": inherited, "soft_limit": soft_limit, **busy})


def _block_loop(server, block_ms):
    """Ask for /sync-sleep on another thread, so the server's only thread is busy; returns the thread."""

    def ask():
        with socket.create_connection((server.host, server.port), timeout=block_ms / 1000 + 10) as sock:
            sock.sendall(get_request(f"/sync-sleep?ms={block_ms}", keep_alive=False))
            AnswerReader(sock).body()

    blocker = threading.Thread(target=ask, name="block-the-loop", daemon=True)
    blocker.start()
    _wait_until_asleep(server.pid)
    return blocker


def _wait_until_asleep(pid, timeout_s=5.0):
    """Wait until the server's main thread sleeps in the handler (nanosleep), not in its selector."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/wchan") as wchan:
                where = wchan.read()
        except OSError:
            where = ""
        if "nanosleep" in where:
            return
        if where in ("", "0"):  # the kernel will not say: give the request time to arrive instead
            time.sleep(0.1)
            return
        time.sleep(0.002)
    raise TimeoutError(f"server pid {pid} did not start its /sync-sleep within {timeout_s} s")


def burst_while_blocked(server, burst, block_ms):
    """Open `burst` connections at once while the server's loop sleeps `block_ms`: the Step, connect times included."""
    with holding.Holding(server, [burst], window=burst, fresh_requests=0, connect_timeout_s=10.0,
                         answer_timeout_s=10.0, step_deadline_s=30.0) as run:
        run.next_step()  # the client is up and waiting: now block the loop and let it go
        blocker = _block_loop(server, block_ms)
        run.proceed()
        step = run.next_step()
        run.proceed(False)
        blocker.join(timeout=block_ms / 1000 + 10)
        run.result()
    return step


def listen_backlog(name="tornado_app", burst=600, block_ms=500, fixed_name="step4_event_loop"):
    """A burst of connects while the loop is busy: beyond the backlog the SYNs are dropped and resent 1 s, 3 s later."""
    with servers.serve(name) as server:
        backlog = listening.listen_backlog(server.port)
        met = burst_while_blocked(server, burst, block_ms)
    with servers.serve(fixed_name, idle_timeout=600) as server:
        fixed_backlog = listening.listen_backlog(server.port)
        fixed = burst_while_blocked(server, burst, block_ms)
    return Meeting(limits.BACKLOG, f"{name} (backlog {backlog}), {burst:,} connects while its loop sleeps {block_ms} ms",
                   met, f"a backlog larger than the burst: {fixed_name} listens with {fixed_backlog}", fixed,
                   {"backlog": backlog, "fixed_backlog": fixed_backlog, "somaxconn": listening.somaxconn(),
                    "block_ms": block_ms, "burst": burst})


def ephemeral_ports(server, ports=100, sources=3):
    """Source ports: every port of a narrow range in use towards the server, then the same range on more addresses."""
    if not 1 <= sources <= len(DEMO_SOURCES):
        raise ValueError(f"sources must be from 1 to {len(DEMO_SOURCES)}, got {sources}")
    port_range = [DEMO_PORT_LOW, DEMO_PORT_LOW + ports - 1]
    connections = ports * sources
    met = _one_step(server, connections, sources=list(DEMO_SOURCES[:1]), source_ports=port_range, preflight=False)
    fixed = _one_step(server, connections, sources=list(DEMO_SOURCES[:sources]), source_ports=port_range)
    return Meeting(limits.PORTS, f"{connections:,} connections from one address and {ports} source ports", met,
                   f"the same {ports} ports on {sources} source addresses", fixed,
                   {"ports": ports, "sources": sources, "ports_per_source": limits.ports_per_source()})


def _capped_hold(name, connections, extra_kb, **options):
    # glibc gives threads malloc arenas of their own, each reserving 64 MiB of address space: one arena
    # keeps the address space about stacks and connections, which is what these runs are about.
    with children.environment(MALLOC_ARENA_MAX=1), servers.serve(name, **options) as server:
        limits.cap_address_space(server.pid, extra_kb)
        return _one_step(server, connections, preflight=False)


def thread_stacks(budget_mb=256, connections=300, small_stack_kb=256):
    """A thread per connection, each reserving its stack, within `budget_mb` of address space; then smaller stacks."""
    stack_kb = limits.stack_size_kb()
    met = _capped_hold("threaded_app", connections, budget_mb * 1024, idle_timeout=600)
    fixed = _capped_hold("threaded_app", connections, budget_mb * 1024, idle_timeout=600, stack_size=small_stack_kb)
    return Meeting(limits.THREADS, f"threaded_app, {stack_kb:,} KiB stacks, {budget_mb} MiB of address space to grow,"
                   f" asked to hold {connections:,}", met,
                   f"threading.stack_size({small_stack_kb} KiB)", fixed,
                   {"budget_mb": budget_mb, "stack_kb": stack_kb, "small_stack_kb": small_stack_kb,
                    "predicted_threads": budget_mb * 1024 // stack_kb,
                    "predicted_threads_small": budget_mb * 1024 // small_stack_kb})


def address_space(slope_kb, name="tornado_app", budget_mb=16, over=1.5, under=0.6, **options):
    """Address space (RLIMIT_AS), not memory: a server allowed `budget_mb` more reserved, asked for `over` times what
    fits at `slope_kb` of address space a connection, then `under`. A container limits touched pages instead
    (memory_cgroup); this is the stand-in where no cgroup can be made."""
    if slope_kb <= 0:
        raise ValueError(f"slope_kb must be the memory one connection costs, more than 0, got {slope_kb}")
    fits = budget_mb * 1024 / slope_kb
    too_many, few_enough = round(fits * over), max(1, round(fits * under))
    met = _capped_hold(name, too_many, budget_mb * 1024, **options)
    fixed = _capped_hold(name, few_enough, budget_mb * 1024, **options)
    return Meeting(limits.MEMORY, f"{name}, {budget_mb} MiB more address space (RLIMIT_AS), asked to hold {too_many:,}", met,
                   f"N from the slope: {under:.0%} of the {fits:,.0f} that fit", fixed,
                   {"budget_mb": budget_mb, "slope_kb": slope_kb, "fits": fits})


# --- Memory as a container limits it: a cgroup ------------------------------------------------------------

def memory_cgroup_unavailable():
    """Why this machine cannot run memory_cgroup (it needs root and a cgroup memory controller), or None."""
    return cgroup_limit.why_not(("memory",))


def oom_score(pid):
    """The kernel's /proc/PID/oom_score (None once the process is gone): the OOM killer kills the highest."""
    try:
        with open(f"/proc/{pid}/oom_score") as score:
            return int(score.read())
    except (OSError, ValueError):
        return None


class KernelLog:
    """The kernel's log from now on (/dev/kmsg, readable by root): to read whom the OOM killer killed, in order."""

    def __init__(self):
        try:
            self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self.fd, 0, os.SEEK_END)
        except OSError:
            self.fd = None

    def oom_victims(self):
        """Pids the OOM killer killed since, in order ("Killed process PID"), or None where the log cannot be read."""
        if self.fd is None:
            return None
        victims = []
        while True:
            try:
                record = os.read(self.fd, 8192).decode(errors="replace")
            except BlockingIOError:
                break
            except OSError:  # EPIPE: records were overwritten while we read; what is left still counts
                continue
            if "Killed process " in record:
                victims.append(int(record.split("Killed process ", 1)[1].split()[0]))
        os.close(self.fd)
        self.fd = None
        return victims


def _in_group(name, budget_mb, connections, bystander_mb=0, **options):
    """Hold `connections` on server `name` moved into a fresh cgroup of `budget_mb`, beside a bystander process that
    has touched `bystander_mb` there first (none if 0): (the Step, what became of each process, the OOM kills)."""
    group = cgroup_limit.LimitedGroup(f"iolab-c10k-{os.getpid()}-{time.monotonic_ns()}", None, budget_mb << 20)
    with group, servers.serve(name, **options) as server:
        bystander = None
        if bystander_mb:
            bystander = children.spawn(children.python("-m", "iolab.lessons.c10k.bystander", bystander_mb),
                                       stdin=subprocess.PIPE)
            group.add(bystander.pid)  # before it touches anything: its pages are charged to the group
            bystander.stdin.write(b"touch\n")
            bystander.stdin.flush()
            children.read_until(bystander.stdout, b"ready", 30.0)
        group.add(server.pid)  # from now on what the server touches is charged here (what it had stays outside)
        before = {"server": (server.pid, oom_score(server.pid), holding.footprint(server.pid).rss_kb)}
        if bystander is not None:
            before["bystander"] = (bystander.pid, oom_score(bystander.pid), holding.footprint(bystander.pid).rss_kb)
        log = KernelLog()
        step = _one_step(server, connections, preflight=False)
        time.sleep(0.2)  # a process the OOM killer chose takes a moment to be reaped
        victims = log.oom_victims()
        fates = {}
        for who, (pid, score, rss_kb) in before.items():
            process = server.process if who == "server" else bystander
            code = process.poll()
            fates[who] = {"pid": pid, "oom_score": score, "rss_mb": round(rss_kb / 1024, 1),
                          "killed": code == -9, "exit_code": code,
                          # 1 for the OOM killer's first victim, 2 for its second...; None if the log cannot say
                          "killed_order": victims.index(pid) + 1 if victims and pid in victims else None}
        kills = group.oom_kills()
        if bystander is not None and bystander.poll() is None:
            bystander.stdin.close()  # end of file: it exits
            with contextlib.suppress(subprocess.TimeoutExpired):
                bystander.wait(timeout=5)
    return step, fates, kills


def memory_cgroup(slope_kb, name="tornado_app", budget_mb=16, over=2.0, under=0.5, **options):
    """Memory as a container limits it: `name` in a cgroup with `budget_mb` for what it touches from now on.

    Three runs, each in a fresh group: beside an idle bystander that holds more memory than the server, the server
    is asked for `over` times what fits at `slope_kb` a connection (the OOM killer kills the bystander: the highest
    oom_score, not the process that crossed the line); then alone (it kills the server, and every connection goes
    with it); then `under` times what fits (the fix: N from the slope).
    """
    if slope_kb <= 0:
        raise ValueError(f"slope_kb must be the memory one connection costs, more than 0, got {slope_kb}")
    reason = memory_cgroup_unavailable()
    if reason:
        raise limits.LimitReached(limits.MEMORY, f"no memory cgroup here: {reason}")
    fits = budget_mb * 1024 / slope_kb
    too_many, few_enough = round(fits * over), max(1, round(fits * under))
    # Larger than the whole server will be at its largest, so its oom_score is the higher one.
    with servers.serve(name, **options) as server:
        server_mb = holding.footprint(server.pid).rss_kb / 1024
    bystander_mb = round(2 * (server_mb + budget_mb * over))
    beside, fates, kills = _in_group(name, bystander_mb + budget_mb, too_many, bystander_mb=bystander_mb, **options)
    met, alone, alone_kills = _in_group(name, budget_mb, too_many, **options)
    fixed, _, _ = _in_group(name, budget_mb, few_enough, **options)
    version = cgroup_limit.version()
    setting = "memory.max" if version == 2 else "memory.limit_in_bytes"
    return Meeting(limits.MEMORY, f"{name} in a cgroup ({setting}), {budget_mb} MiB to grow, asked to hold {too_many:,}",
                   met, f"N from the slope: {under:.0%} of the {fits:,.0f} that fit", fixed,
                   {"budget_mb": budget_mb, "slope_kb": slope_kb, "fits": fits, "cgroup_version": version,
                    "setting": setting, "beside": {"step": beside, "fates": fates, "oom_kills": kills,
                                                   "bystander_mb": bystander_mb},
                    "alone": {"fates": alone, "oom_kills": alone_kills}})
