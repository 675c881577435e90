"""The limits that stop a machine holding ten thousand connections, and a name and a sentence for the one a run hit."""

import contextlib
import math
import os
import resource
import subprocess
from pathlib import Path

import psutil

from iolab import environment
from iolab.listening import somaxconn

# The names the lesson's table uses, one per limit.
FD_SETSIZE = 1024  # glibc's, on Linux: select()'s bitmaps hold descriptors 0 to 1023
NOFILE_CLIENT = "RLIMIT_NOFILE (client)"
NOFILE_SERVER = "RLIMIT_NOFILE (server)"
FILE_MAX = "fs.file-max"
BACKLOG = "listen backlog"
PORTS = "ephemeral ports"
THREADS = "thread stacks"
MEMORY = "memory"
IDLE_TIMEOUT = "idle timeout"
SERVER_CAP = "the server's own cap"
DIED = "server died"
TIME = "time"


class LimitReached(RuntimeError):
    """A run met a limit: `limit` is its name (one of the constants above), the text says what happened and the fix."""

    def __init__(self, limit, message):
        super().__init__(message)
        self.limit = limit


# --- What this machine allows -----------------------------------------------------------------------

def _read(path, default=None):
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


def file_limits(pid=None):
    """(soft, hard) RLIMIT_NOFILE of process `pid` (this one by default)."""
    if pid is None:
        return resource.getrlimit(resource.RLIMIT_NOFILE)
    return resource.prlimit(pid, resource.RLIMIT_NOFILE)


# The core's, named here too: lesson 07 raises its soft limit through this module, as its text says.
raise_file_limit = environment.raise_file_limit


def set_file_limit(pid, soft):
    """Set process `pid`'s soft RLIMIT_NOFILE (prlimit(2)), keeping its hard limit; returns the old (soft, hard)."""
    old_soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (min(soft, hard), hard))
    return old_soft, hard


def cap_address_space(pid, extra_kb):
    """Let process `pid` grow its address space (RLIMIT_AS) by only `extra_kb` more; returns the cap in KiB.

    The nearest thing to a container's memory limit that needs no privilege. Every
    thread's stack and every allocation counts, resident or not.
    """
    cap_kb = psutil.Process(pid).memory_info().vms // 1024 + int(extra_kb)
    _, hard = resource.prlimit(pid, resource.RLIMIT_AS)
    resource.prlimit(pid, resource.RLIMIT_AS, (cap_kb * 1024, hard))
    return cap_kb


def port_range():
    """(low, high) of net.ipv4.ip_local_port_range: the source ports connect() picks from."""
    low, high = _read("/proc/sys/net/ipv4/ip_local_port_range", "32768 60999").split()
    return int(low), int(high)


def ports_per_source():
    """How many connections one source address can open to one server address and port (the range is inclusive)."""
    low, high = port_range()
    return high - low + 1


def sources_for(connections, share=0.5):
    """Source addresses 127.0.0.2, .3, ... enough to open `connections` using at most `share` of each one's ports.

    127.0.0.1 is left alone, so everything else on the machine keeps its ports.
    """
    per_source = max(1, int(ports_per_source() * share))
    count = max(1, math.ceil(connections / per_source))
    if count > 250:
        raise ValueError(f"{connections} connections would need {count} source addresses; 127.0.0.2-251 is the most")
    return [f"127.0.0.{2 + index}" for index in range(count)]


def stack_size_kb():
    """The stack a new thread reserves (virtual), in KiB: RLIMIT_STACK's soft limit, what glibc uses by default."""
    soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    return 8192 if soft == resource.RLIM_INFINITY else soft // 1024


def max_map_count():
    """vm.max_map_count: memory mappings per process; every thread's stack and guard page take two."""
    return int(_read("/proc/sys/vm/max_map_count", "65530"))


def threads_max():
    """kernel.threads-max: threads on the whole machine."""
    return int(_read("/proc/sys/kernel/threads-max", "0")) or None


def memory_available_bytes():
    """Memory this process's container may still use (its cgroup's limit less its use: Binder, Docker, JupyterHub), or
    MemAvailable from /proc/meminfo, whichever is less."""
    available = None
    for line in (_read("/proc/meminfo", "") or "").splitlines():
        if line.startswith("MemAvailable:"):
            available = int(line.split()[1]) * 1024
    limit, use = environment.memory_limit_bytes(), environment.memory_use()
    if limit is not None and use is not None:
        headroom = max(0, limit - use.current)
        available = headroom if available is None else min(available, headroom)
    return available


def report():
    """Every limit of this section, as {name: value} for a table."""
    soft, hard = file_limits()
    low, high = port_range()
    return {
        "RLIMIT_NOFILE (soft, hard)": f"{soft}, {hard}",
        "net.core.somaxconn": somaxconn(),
        "net.ipv4.ip_local_port_range": f"{low}-{high} ({ports_per_source():,} ports per source address)",
        "thread stack (RLIMIT_STACK)": f"{stack_size_kb()} KiB",
        "vm.max_map_count": max_map_count(),
        "kernel.threads-max": threads_max(),
        "memory available": f"{(memory_available_bytes() or 0) / 2**20:,.0f} MiB",
    }


# --- Which limit a run hit ----------------------------------------------------------------------------

DYING_S = 2.0  # how long a server that closed our connections is given to be seen exiting: CFS periods are 0.1 s

def struck_at(first_error):
    """How many connections there were when a limit struck: open ones for this machine's own errors
    (no file, no port: the server never saw the last ones), held ones when the server gave up."""
    local = first_error["kind"] in ("EMFILE", "ENFILE", "EADDRNOTAVAIL", "EADDRINUSE")
    return first_error["open"] if local else first_error["held"]


def diagnose(step, server, overflows=0, stderr=""):
    """(limit, sentence) for a step that did not hold what it asked for, or came in late; (None, None) if all went well.

    `step` is a holding.Step; `server` the running lab server (it may have died);
    `overflows` how often the kernel found an accept queue full meanwhile;
    `stderr` what the server wrote during the step.
    """
    first = step.first_error or {}
    who = server.name if server is not None else "the server"
    late = [ms for ms in step.connect_ms if ms >= 900]
    if not (step.held < step.target or step.errors or late or step.closed_by_server):
        return None, None
    at = f"at {struck_at(first) if first else step.held:,} connections"
    return (_client_limit(step, first, at) or _server_death(step, server, who, at, stderr)
            or _server_limit(server, who, at, stderr) or _what_the_client_saw(step, who, at, late, overflows)
            or (None, None))


def _client_limit(step, first, at):
    """The limits the client meets itself: its files, the machine's, its source ports; or None."""
    errors = step.errors
    if errors.get("EMFILE"):
        soft, hard = step.client_nofile
        return NOFILE_CLIENT, (
            f"the client ran out of file descriptors {at} (EMFILE, 'Too many open files'): its RLIMIT_NOFILE soft"
            f" limit is {soft:,} and every connection is a file. Fix: raise the soft limit up to the hard limit"
            f" ({hard:,}) with resource.setrlimit, as the client does unless told not to."
        )
    if errors.get("ENFILE"):
        return FILE_MAX, f"the whole machine ran out of file descriptors {at} (ENFILE): fs.file-max is reached."
    if errors.get("EADDRNOTAVAIL") or errors.get("EADDRINUSE"):
        return PORTS, (
            f"no source port left {at} ({first.get('kind')}, '{first.get('message')}'): every port the client may use"
            f" from its source address already has a connection to this server. The kernel gives each source address"
            f" {ports_per_source():,} ports (ip_local_port_range {port_range()[0]}-{port_range()[1]}) per server"
            " address and port. Fix: spread the connections over more source addresses (127.0.0.2, .3, ...)."
        )
    return None


def _server_death(step, server, who, at, stderr):
    """The server died during the step: of memory, or of something it said; or None."""
    if server is not None and step.closed_by_server and server.alive():
        # A server that dies has its connections closed by the kernel as it exits, a moment before its parent can see
        # the exit; under a CPU quota that moment can outlast the step. Wait for it, so a death is not read as an idle
        # timeout (a server that really timed its connections out costs this wait once, and lives on).
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.process.wait(timeout=DYING_S)
    if server is not None and not server.alive():
        code = server.process.returncode
        if "MemoryError" in stderr or code == -9:
            return MEMORY, (
                f"{who} died {at} (exit code {code}) out of memory"
                + (" (MemoryError)" if "MemoryError" in stderr else " (SIGKILL: the kernel's out-of-memory killer)")
                + ". Fix: choose N from the memory each connection costs and the memory you have."
            )
        return DIED, f"{who} died {at} with exit code {code}; its last words:\n{server.stderr_tail(lines=5)}"
    return None


def _server_limit(server, who, at, stderr):
    """A limit the living server met and said so (files, threads, memory); or None."""
    if "Too many open files" in stderr or (server is not None and _near_file_limit(server)):
        soft, hard = file_limits(server.pid)
        return NOFILE_SERVER, (
            f"{who} stopped accepting {at}: it ran out of file descriptors ('Too many open files'); its RLIMIT_NOFILE"
            f" soft limit is {soft:,} and each connection is a file. The connections beyond it wait in the listen"
            f" backlog, unanswered. Fix: raise the limit (up to the hard limit, {hard:,}) in the process that starts"
            " the server, before it starts: a child inherits its parent's limits."
        )
    if "can't start new thread" in stderr:
        soft, _ = resource.prlimit(server.pid, resource.RLIMIT_AS)
        budget = "unlimited" if soft == resource.RLIM_INFINITY else f"{soft / 2**20:,.0f} MiB"
        return THREADS, (
            f"{who} could not start another thread {at} ('can't start new thread'): each thread reserves its stack,"
            f" {stack_size_kb():,} KiB of address space unless threading.stack_size says otherwise, and the process"
            f" may use {budget} (RLIMIT_AS; vm.max_map_count {max_map_count():,} maps and kernel.threads-max bound it"
            " too). Fix: smaller stacks (threading.stack_size), or no thread per connection."
        )
    if "MemoryError" in stderr:
        return MEMORY, f"{who} ran out of memory {at} (MemoryError). Fix: choose N from the memory each connection costs."
    return None


def _what_the_client_saw(step, who, at, late, overflows):
    """A limit told from what the client saw alone: late connects, closes, no answers, time; or None."""
    errors, short = step.errors, step.held < step.target
    if errors.get("connect timeout") or (late and overflows):
        queue = f" (the kernel counted {overflows:,} overflows of a full accept queue)" if overflows else ""
        return BACKLOG, (
            f"{len(late) + errors.get('connect timeout', 0):,} connects took a second or more{queue}: the listen"
            " backlog was full, so the kernel dropped their SYNs and TCP resent them after 1 s, 3 s, 7 s."
            " Fix: a larger backlog (listen(n), capped by net.core.somaxconn), or open connections in smaller bursts."
            + ("" if short else " Every connection got in, late.")
        )
    if errors.get("Connection: close"):
        return SERVER_CAP, (
            f"{who} answered with 'Connection: close' {at}: it keeps no more idle connections alive than that"
            " and closes every new one after its answer (gunicorn's gthread workers keep at most"
            " worker_connections - threads). Fix: the server's own setting, or more workers."
        )
    if step.closed_by_server:
        after = f", the first after {step.shortest_idle_close_s:.1f} s idle" if step.shortest_idle_close_s else ""
        return IDLE_TIMEOUT, (
            f"{who} closed {step.closed_by_server:,} idle connections we were holding{after}: it times out idle"
            " keep-alive connections. Fix: a longer keep-alive timeout, if the server has the option."
        )
    if errors.get("no answer") or errors.get("closed before answering") or errors.get("ECONNRESET"):
        return SERVER_CAP, (
            f"{who} accepted no more than {step.held:,} connections and left the rest unanswered or closed them"
            f" ({', '.join(f'{k}: {v}' for k, v in errors.items())}), with no kernel limit in sight: a cap of its own."
        )
    if short or errors.get("step deadline"):
        return TIME, f"{step.held:,} of {step.target:,} connections were held when the step's time ran out."
    return None


def _near_file_limit(server):
    try:
        soft, _ = file_limits(server.pid)
        return len(os.listdir(f"/proc/{server.pid}/fd")) >= soft - 1
    except (OSError, ProcessLookupError):
        return False
