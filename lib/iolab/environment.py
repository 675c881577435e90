"""What this machine offers the lab: versions, CPUs and memory (a container's cgroup limits too), files, optional tools."""

import importlib.metadata
import math
import os
import platform
import resource
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .contract import FDS_BESIDES_CONNECTIONS, find_program

PACKAGES = ("tornado", "aiohttp", "requests", "matplotlib", "ipywidgets", "ipykernel", "papermill", "simpy", "psutil")
OPTIONAL_TOOLS = {
    "ab": "ApacheBench (apache2-utils): lesson 02 reruns its experiment with it",
    "wrk": "wrk: the lab's client is compared with it; lessons 05-09 use it",
    "nginx": "nginx: lesson 06 puts Tornado processes behind it",
    "strace": "strace: lesson 08 counts system calls with it",
    "ss": "ss (iproute2): lessons 02 and 07 read a listener's backlog with it",
}
# The Debian package of each program a lesson may call: binder/apt.txt installs them (a test keeps the two in step).
DEBIAN_PACKAGES = {"ab": "apache2-utils", "wrk": "wrk", "nginx": "nginx", "strace": "strace", "ss": "iproute2",
                   "redis-server": "redis-server", "postgres": "postgresql", "initdb": "postgresql",
                   "pgbouncer": "pgbouncer", "ip": "iproute2", "tc": "iproute2", "ethtool": "ethtool",
                   "unshare": "util-linux", "nsenter": "util-linux",
                   "h2load": "nghttp2-client"}
MIN_FILES = 1024  # lesson 07 wants thousands; below this even lesson 02 is cramped


def where() -> str:
    """'Binder', 'JupyterHub' or 'local', from the variables each sets."""
    if "BINDER_LAUNCH_HOST" in os.environ or "BINDER_REPO_URL" in os.environ:
        return "Binder"
    if "JUPYTERHUB_API_URL" in os.environ:
        return "JupyterHub"
    return "local"


def affinity_cores() -> int:
    """The CPUs this process may be scheduled on: 1 under `taskset -c 0`; every core of the node in a container."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


# --- A container's limits, from its cgroup ---------------------------------------------------------------------
# Binder and JupyterHub limit a student's container with a CFS quota and a memory limit. Neither shows in the
# affinity or in os.cpu_count(): they are read here, from the cgroup filesystem (v1 or v2), and nowhere else.

UNLIMITED = 1 << 60  # cgroup v1 writes "no limit" as a huge number near 2**63


@dataclass(frozen=True)
class GroupCpu:
    """The container's cumulative CPU: seconds its processes ran, and the quota's throttling so far."""

    used_s: float
    periods: int  # quota periods in which the group wanted to run
    throttled: int  # periods in which it used up its quota and was stopped until the next
    throttled_s: float  # time it spent stopped so (v1 sums it over the CPUs the group waited on)


@dataclass(frozen=True)
class GroupMemory:
    """The container's memory now and at its peak, in bytes (the peak is None where the kernel keeps none)."""

    current: int
    peak: int | None


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _stat(path: str | Path) -> dict[str, int]:
    """A flat `key value` file (cpu.stat) as {key: int}."""
    found: dict[str, int] = {}
    for line in (_read(path) or "").splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            found[key] = int(value)
    return found


class Cgroups:
    """This process's cgroups, under `root` (/sys/fs/cgroup) as /proc/self/cgroup names them; a fake tree in tests."""

    def __init__(self, root: str | Path = "/sys/fs/cgroup", self_cgroup: str | Path = "/proc/self/cgroup") -> None:
        self.root = Path(root)
        self.own: dict[str, str] = {}  # controller -> this process's group path; "" for the v2 hierarchy
        for line in (_read(self_cgroup) or "").splitlines():
            if line.count(":") < 2:
                continue  # not a cgroup line
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                self.own[controller] = path

    @property
    def version(self) -> int | None:
        """2 on a unified hierarchy, 1 where v1 controllers are mounted, None where no cgroup filesystem is readable."""
        if (self.root / "cgroup.controllers").is_file():
            return 2
        if any(self._v1_mount(c) for c in ("cpu", "memory")):
            return 1
        return None

    def _v1_mount(self, controller: str) -> Path | None:
        if not self.root.is_dir():
            return None
        for mount in sorted(self.root.iterdir()):  # "cpu", or a shared mount such as "cpu,cpuacct"
            if mount.is_dir() and controller in mount.name.split(","):
                return mount
        return None

    def groups(self, controller: str) -> list[Path]:
        """This process's group of `controller` and its ancestors, innermost first (limits apply all the way up)."""
        mount: Path | None
        if self.version == 2:
            mount, path = self.root, self.own.get("", "/")
        else:
            mount, path = self._v1_mount(controller), self.own.get(controller, "/")
            if mount is None:
                return []
        group = mount / path.lstrip("/")
        # In a container with a cgroup namespace (or its own mount) /proc names a path the mount does not show:
        # the mount's root is then the container's own group.
        if not group.is_dir():
            group = mount
        chain = [group]
        while chain[-1] != mount and mount in chain[-1].parents:
            chain.append(chain[-1].parent)
        return chain

    def _quota_of(self, group: Path) -> float | None:
        """CPUs a group's CFS quota allows (quota / period), or None if it sets none."""
        quota: str | None
        period: str | None
        if self.version == 2:
            quota, _, period = (_read(group / "cpu.max") or "max").partition(" ")
            if quota == "max" or not quota.isdigit() or not period.strip().isdigit():
                return None
            return int(quota) / int(period)
        quota, period = _read(group / "cpu.cfs_quota_us"), _read(group / "cpu.cfs_period_us")
        if not quota or not period or not quota.isdigit() or not period.isdigit() or int(period) == 0:
            return None  # -1: no quota
        return int(quota) / int(period)

    def quota_group(self) -> tuple[float, Path] | tuple[None, None]:
        """(CPUs, group) of the tightest CFS quota on this process's groups, or (None, None) if none is set."""
        quotas = [(q, g) for g in self.groups("cpu") if (q := self._quota_of(g)) is not None]
        return min(quotas, key=lambda found: found[0]) if quotas else (None, None)

    def quota_period_s(self) -> float | None:
        """The period, in seconds, of the tightest CFS quota (the quota is given afresh every period), or None."""
        _, group = self.quota_group()
        if group is None:
            return None
        if self.version == 2:
            period = (_read(group / "cpu.max") or "").partition(" ")[2].strip()
        else:
            period = _read(group / "cpu.cfs_period_us") or ""
        return int(period) / 1e6 if period.isdigit() else None

    def cpu_quota(self) -> float | None:
        """CPUs the container's CFS quota allows, as a float (1.5 for a quota of 1.5 CPUs), or None without one."""
        return self.quota_group()[0]

    def memory_limit_bytes(self) -> int | None:
        """The tightest memory limit on this process's groups (memory.max, memory.limit_in_bytes), or None."""
        name = "memory.max" if self.version == 2 else "memory.limit_in_bytes"
        limits = [int(v) for g in self.groups("memory") if (v := _read(g / name)) and v.isdigit() and int(v) < UNLIMITED]
        return min(limits) if limits else None

    def container(self) -> Path | None:
        """The group that stands for 'this container': the one with the quota, else this process's own."""
        _, group = self.quota_group()
        if group is not None:
            return group
        own = self.groups("cpu")
        return own[0] if own else None

    def cpu_files(self) -> tuple[Path, float, Path] | None:
        """(usage file, its unit in seconds, cpu.stat file) of the container's CPU, or None where no cgroup tells it.

        Found once, so a reader that samples them many times a second reads two small files and nothing else.
        """
        group = self.container()
        if group is None:
            return None
        if self.version == 2:
            return group / "cpu.stat", 1e-6, group / "cpu.stat"
        # v1 keeps the usage in the cpuacct controller: the same group's path under its mount.
        accounting = self._v1_mount("cpuacct")
        cpu_mount = self._v1_mount("cpu")
        if accounting is None or cpu_mount is None:
            return None
        usage = accounting / group.relative_to(cpu_mount) / "cpuacct.usage"
        if not _read(usage) and self.groups("cpuacct"):  # no accounting group of that name: this process's own
            usage = self.groups("cpuacct")[0] / "cpuacct.usage"
        return usage, 1e-9, group / "cpu.stat"

    def cpu(self) -> GroupCpu | None:
        """The container's GroupCpu now, or None where no cgroup tells it."""
        files = self.cpu_files()
        return read_group_cpu(files, self.version) if files else None

    def memory(self) -> GroupMemory | None:
        """This process's memory group's GroupMemory now, or None where no cgroup tells it."""
        own = self.groups("memory")
        if not own:
            return None
        names = ("memory.current", "memory.peak") if self.version == 2 else (
            "memory.usage_in_bytes", "memory.max_usage_in_bytes")
        current, peak = (_read(own[0] / name) for name in names)
        if not current or not current.isdigit():
            return None
        return GroupMemory(int(current), int(peak) if peak and peak.isdigit() else None)


def read_group_cpu(files: tuple[Path, float, Path], version: int | None) -> GroupCpu | None:
    """The GroupCpu that Cgroups.cpu_files() point at, read now; None where they say nothing."""
    usage, unit, stat_file = files
    stat = _stat(stat_file)
    if version == 2:
        if "usage_usec" not in stat:
            return None
        return GroupCpu(stat["usage_usec"] * unit, stat.get("nr_periods", 0), stat.get("nr_throttled", 0),
                        stat.get("throttled_usec", 0) / 1e6)
    used = _read(usage)
    if not used or not used.isdigit():
        return None
    return GroupCpu(int(used) * unit, stat.get("nr_periods", 0), stat.get("nr_throttled", 0),
                    stat.get("throttled_time", 0) / 1e9)


def cgroups() -> Cgroups:
    return Cgroups()


def usable_cpus(cpus: float | None = None) -> float:
    """The CPUs this kernel may use, as a float: min(affinity, CFS quota / period). 1.0 under a 1-CPU quota, 0.5
    under half of one, however many cores the node has. `cpus`: a CPU count to use instead of the affinity."""
    affinity = affinity_cores() if cpus is None else cpus
    quota = cgroups().cpu_quota()
    return float(min(affinity, quota)) if quota is not None else float(affinity)


def cpus_within(seconds: float, cpus: float | None = None) -> float:
    """The most CPU seconds per second a window of `seconds` can get: usable_cpus(), but a CFS quota is handed out
    per period, so a short window may also catch the unused rest of the period before it (up to one period's
    quota more), at most the affinity's cores. The ceiling of a short run under a quota; its prediction stays
    usable_cpus()."""
    affinity = affinity_cores() if cpus is None else cpus
    limits = cgroups()
    quota, period = limits.cpu_quota(), limits.quota_period_s()
    if quota is None or not period or seconds <= 0:
        return usable_cpus(cpus)
    return float(min(affinity, quota * (1 + period / seconds)))


def usable_cores() -> int:
    """Whole CPUs worth a process of their own: usable_cpus() rounded up, at least 1 (how many client processes)."""
    return max(1, math.ceil(usable_cpus() - 1e-9))


def memory_limit_bytes() -> int | None:
    """The container's memory limit (cgroup v1 or v2), or None where none is set."""
    return cgroups().memory_limit_bytes()


def cpu_use() -> GroupCpu | None:
    """The container's GroupCpu (its CPU seconds and throttling so far), or None where no cgroup tells it."""
    return cgroups().cpu()


def memory_use() -> GroupMemory | None:
    """The container's GroupMemory (bytes now, and at its peak), or None where no cgroup tells it."""
    return cgroups().memory()


def throttled_between(before: GroupCpu | None, after: GroupCpu | None) -> tuple[int, float]:
    """(times throttled, seconds throttled) between two cpu_use() readings; (0, 0.0) where either is None."""
    if before is None or after is None:
        return 0, 0.0
    return after.throttled - before.throttled, after.throttled_s - before.throttled_s


# --- Open files ------------------------------------------------------------------------------------------------
# A laptop or Binder's jovyan usually starts with a soft RLIMIT_NOFILE of 1024 under a hard limit in the tens of
# thousands. Any process may raise its own soft limit up to the hard one without privilege.


def raise_file_limit(needed: int | None = None, pid: int | None = None) -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE of this process (or of process `pid`, one of ours) to its hard limit; returns
    (soft, hard).

    No privilege is needed. With `needed`, only when the soft limit is below it. Every process started afterwards
    (a server, a client) inherits the raised limit: a child gets its parent's limits at fork.
    """
    def limits() -> tuple[int, int]:
        return resource.getrlimit(resource.RLIMIT_NOFILE) if pid is None else resource.prlimit(pid, resource.RLIMIT_NOFILE)

    soft, hard = limits()
    if needed is None or soft < needed:
        # An unlimited hard limit (macOS) cannot be the soft one: ask for what is needed, or keep what is there.
        wanted = hard if hard != resource.RLIM_INFINITY else max(soft, needed or soft)
        if wanted != soft:
            try:
                if pid is None:
                    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
                else:
                    resource.prlimit(pid, resource.RLIMIT_NOFILE, (wanted, hard))
            except (ValueError, PermissionError):  # capped lower (macOS's kern.maxfilesperproc), or not ours: kept
                pass
    return limits()


def file_limit_reason(connections: int, what: str = "subscribers") -> str | None:
    """Raise the soft RLIMIT_NOFILE for `connections` connections in this process (raise_file_limit); the reason,
    naming what would fit, when even the hard limit cannot hold them, else None."""
    needed = connections + FDS_BESIDES_CONNECTIONS
    _, hard = raise_file_limit(needed)
    if hard != resource.RLIM_INFINITY and needed > hard:
        return (f"{connections} {what} need about {needed} file descriptors in one process, and this machine's"
                f" hard RLIMIT_NOFILE is {hard}: ask for at most {hard - FDS_BESIDES_CONNECTIONS}")
    return None


def files_open() -> int:
    """How many descriptors this process has open now."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except FileNotFoundError:  # not Linux: the three standard streams at least
        return 3


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    return found


def tools() -> dict[str, str | None]:
    """{tool: path or None} for the optional command-line tools."""
    return {tool: find_program(tool) for tool in OPTIONAL_TOOLS}


def report() -> dict[str, Any]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return {
        "where": where(),
        "platform": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "cores": usable_cores(),
        "cpus": usable_cpus(),
        "affinity": affinity_cores(),
        "cpu_quota": cgroups().cpu_quota(),
        "memory_limit_bytes": memory_limit_bytes(),
        "rlimit_nofile": {"soft": soft, "hard": hard},
        "versions": versions(),
        "tools": tools(),
        **declared_limits(),
    }


def problems(found: dict[str, Any]) -> list[str]:
    """What would stop the lessons from running, as sentences; an empty list means all is well."""
    issues: list[str] = []
    if sys.version_info < (3, 11):  # noqa: UP036 (a kernel from another Python can still import lib/)
        issues.append(f"Python {found['versions']['python']} is too old: the lab needs 3.11 or newer")
    issues += [f"{name} is not installed: run `make lab` again" for name, v in found["versions"].items() if v is None]
    if found["rlimit_nofile"]["soft"] < MIN_FILES:
        issues.append(f"RLIMIT_NOFILE is {found['rlimit_nofile']['soft']}: raise it to at least {MIN_FILES} (ulimit -n)")
    return issues


# Every program and Python package a lesson needs beyond the core packages above, with the lessons that use it and
# what for: lesson 00 checks them all, so a student on their own machine learns at the start what lesson 13 needs.
LESSON_PROGRAMS = {
    "ab": ("02, 09", "ApacheBench (apache2-utils): reruns the first experiment; its report is decoded"),
    "ss": ("02, 07", "ss (iproute2): reads a listener's backlog"),
    "wrk": ("06-10", "wrk: the load generator the lab's client is compared with"),
    "nginx": ("06, 08, 12", "nginx: in front of Tornado processes, and as a WebSocket proxy"),
    "strace": ("08", "strace: counts a server's system calls"),
    "redis-server": ("10", "Redis: the broker and result store of the slow backend"),
    "postgres": ("13", "PostgreSQL's server (postgresql)"),
    "initdb": ("13", "PostgreSQL's initdb (postgresql): makes the lab's own database"),
    "pgbouncer": ("13", "pgbouncer: transaction pooling in front of PostgreSQL"),
    "h2load": ("14", "h2load (nghttp2-client): a page of small answers over HTTP/1.1 and HTTP/2"),
}
LESSON_PACKAGES = {
    "gunicorn": ("06, 07, 08, 10, 12", "pre-forking workers"),
    "flask": ("06, 08, 10", "WSGI apps behind gunicorn and gevent"),
    "numpy": ("06, 10", "curve fits"),
    "django": ("08", "a framework on the ladder"), "falcon": ("08", "a framework on the ladder"),
    "sanic": ("08", "a framework on the ladder"), "cherrypy": ("08", "a framework on the ladder"),
    "twisted": ("08", "a framework on the ladder"), "uvloop": ("08", "a faster asyncio loop"),
    "httptools": ("08", "a faster HTTP parser"),
    "gevent": ("08, 09, 10", "greenlet servers"), "bottle": ("08, 09", "the write-up's gevent + Bottle server"),
    "hdrhistogram": ("09", "corrected latency histograms"),
    "celery": ("10", "the worker pool"), "kombu": ("10", "Celery's broker transport"),
    "redis": ("10", "the Redis client"),
    "uvicorn": ("08, 11, 13", "the ASGI server FastAPI runs on"), "fastapi": ("11, 13", "def and async def endpoints"),
    "httpx": ("11", "an HTTP client and its connection pool"),
    "websockets": ("12", "WebSocket subscribers"),
    "jupyter-server-proxy": ("12", "your browser's way to the lesson's server (section 7)"),
    "asyncpg": ("13", "an async PostgreSQL driver"), "psycopg": ("13", "a sync and async PostgreSQL driver"),
    "psycopg-pool": ("13", "psycopg's connection pools"),
    "hypercorn": ("14", "an ASGI server that speaks HTTP/2"),
}
# Not a program any lesson starts: lesson 12's browser step uses your own browser, and only the lab's own browser
# tests (tests/test_browser.py) drive chromium.
BROWSER = ("12", "a web browser: yours, for lesson 12's browser step; the lab's browser tests drive chromium")


def package_version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def lesson_needs() -> list[dict[str, Any]]:
    """Every program and package a lesson needs beyond the core: its name, kind, lessons, use and what was found
    (a path or a version; None when it is missing), programs first."""
    needs = [{"name": name, "kind": "program", "lessons": lessons, "for": use, "found": find_program(name),
              "install": f"the Debian package {DEBIAN_PACKAGES[name]}"}
             for name, (lessons, use) in LESSON_PROGRAMS.items()]
    needs += [{"name": name, "kind": "Python package", "lessons": lessons, "for": use, "found": package_version(name),
               "install": "`make lab` (binder/requirements.txt)"}
              for name, (lessons, use) in LESSON_PACKAGES.items()]
    # The browser is the one showing this page: the lab never runs one, so it looks for none.
    needs.append({"name": "browser", "kind": "program", "lessons": BROWSER[0], "for": BROWSER[1],
                  "found": "yours", "install": "any browser"})
    return needs


def missing_needs(needs: list[dict[str, Any]]) -> list[str]:
    """A sentence for each missing need: what is missing, which lessons it stops, and how to install it."""
    return [f"{need['name']} ({need['kind']}) is missing: lessons {need['lessons']} need it for {need['for']};"
            f" install {need['install']}" for need in needs if need["found"] is None]


# --- Limits a hub declares but may not enforce ------------------------------------------------------------------
# JupyterHub hands a student's server the limits it was configured with, as MEM_LIMIT (bytes) and CPU_LIMIT (CPUs).
# Its default, local spawner enforces neither: only a cgroup does (SystemdSpawner on The Littlest JupyterHub, a pod on
# Kubernetes). The lab plans with what a cgroup enforces (usable_cpus, memory_limit_bytes), and says so.


def declared_limits(environ: dict[str, str] | None = None) -> dict[str, float | int | None]:
    """{"declared_cpus": CPU_LIMIT, "declared_memory_bytes": MEM_LIMIT} from the environment a hub set; None where a
    variable is unset, or not a positive number."""
    variables = os.environ if environ is None else environ
    cpus = _positive(variables.get("CPU_LIMIT", ""), float)
    memory = _positive(variables.get("MEM_LIMIT", ""), int)
    return {"declared_cpus": cpus, "declared_memory_bytes": int(memory) if memory is not None else None}


def _positive(text: str, kind: type[float] | type[int]) -> float | int | None:
    try:
        value = kind(text.strip())
    except ValueError:
        return None
    return value if value > 0 and math.isfinite(value) else None


def unenforced_limits(found: dict[str, Any]) -> list[str]:
    """A sentence for each limit the hub declared (report()'s declared_*) that no cgroup enforces as declared, saying
    what the lab plans with instead; an empty list where every declared limit is enforced, or none is declared."""
    said: list[str] = []
    cpus, quota = found.get("declared_cpus"), found.get("cpu_quota")
    if cpus is not None and (quota is None or not math.isclose(quota, cpus, rel_tol=0.01)):
        enforced = "nothing enforces it" if quota is None else f"your cgroup's quota is {quota:g}"
        said.append(f"Your hub asked for {cpus:g} CPU per student (CPU_LIMIT) but {enforced}: the lab plans with"
                    f" the {found['cpus']:g} CPUs this notebook may use, and your neighbours may take some of them")
    memory, limit = found.get("declared_memory_bytes"), found.get("memory_limit_bytes")
    if memory is not None and limit != memory:
        enforced = "nothing enforces it" if limit is None else f"your cgroup's limit is {limit / 2**30:.2f} GiB"
        plan = "the machine's memory" if limit is None else "that limit"
        said.append(f"Your hub asked for at most {memory / 2**30:.2f} GiB per student (MEM_LIMIT) but {enforced}:"
                    f" the lab plans with {plan}")
    return said
