"""A cgroup of the lab's own with a memory limit (and a CPU quota), as a container is limited; root on Linux only."""

import contextlib
import os
import signal
import sys
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 100_000  # the kernel's default CFS period, which Kubernetes (and so Binder) uses too
SETTLE_S = 5.0


def version() -> int:
    """2 for the unified hierarchy (cgroup v2), else 1."""
    return 2 if (ROOT / "cgroup.controllers").is_file() else 1


def own_group(controller: str) -> str:
    """This process's group path of a v1 controller, or of the v2 hierarchy ('' as the controller)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in (controllers.split(",") if controllers else [""]):
            return path
    return "/"


def why_not(controllers: Collection[str] = ("cpu", "memory")) -> str | None:
    """None if this process can make a cgroup limited by `controllers` here, else the reason."""
    if not sys.platform.startswith("linux"):
        return f"cgroups are Linux's; this is {sys.platform}"
    if os.geteuid() != 0:
        return "making a cgroup needs root (run it as root, or in a container started with a CPU and memory limit)"
    if version() == 2:
        available = (ROOT / "cgroup.controllers").read_text().split()
        missing: Collection[str] = set(controllers) - set(available)
        return f"cgroup v2 without the {', '.join(sorted(missing))} controller" if missing else None
    wanted = [*controllers, "cpuacct"] if "cpu" in controllers else list(controllers)
    missing = [c for c in wanted if not (ROOT / c).is_dir()]
    if missing:
        return f"no cgroup filesystem with the {', '.join(missing)} controller(s) at {ROOT}"
    return None


class LimitedGroup:
    """A cgroup with a memory limit and, unless `cpus` is None, a CPU quota; made beside this process's own.

    Its memory limit is what a container's is: memory.max (v2) or memory.limit_in_bytes (v1), charged for the
    pages its processes touch, with no swap to spill into. Crossing it wakes the kernel's OOM killer inside the
    group, which kills the process with the highest oom_score there, not necessarily the one that crossed.
    """

    def __init__(self, name: str, cpus: float | None, memory_bytes: int) -> None:
        self.version = version()
        if self.version == 2:
            own = ROOT / own_group("").lstrip("/")
            # v2 lets a group with processes in it have no children that use controllers; a sibling of ours works.
            self.dirs = {"all": (own if own == ROOT else own.parent) / name}
        else:
            controllers = ("memory",) if cpus is None else ("cpu", "cpuacct", "memory")
            self.dirs = {c: ROOT / c / own_group(c).lstrip("/") / name for c in controllers}
        self.cpus, self.memory_bytes = cpus, memory_bytes

    def create(self) -> "LimitedGroup":
        made: list[Path] = []
        try:
            for directory in self.dirs.values():
                directory.mkdir()
                made.append(directory)
            if self.version == 2:
                group = self.dirs["all"]
                subtree = group.parent / "cgroup.subtree_control"
                enabled = subtree.read_text().split()
                for controller in ("memory",) if self.cpus is None else ("cpu", "memory"):
                    if controller not in enabled:
                        subtree.write_text(f"+{controller}")
                if self.cpus is not None:
                    (group / "cpu.max").write_text(f"{round(self.cpus * PERIOD_US)} {PERIOD_US}")
                (group / "memory.max").write_text(str(self.memory_bytes))
                if (group / "memory.swap.max").exists():
                    (group / "memory.swap.max").write_text("0")
            else:
                if self.cpus is not None:
                    (self.dirs["cpu"] / "cpu.cfs_period_us").write_text(str(PERIOD_US))
                    (self.dirs["cpu"] / "cpu.cfs_quota_us").write_text(str(round(self.cpus * PERIOD_US)))
                (self.dirs["memory"] / "memory.limit_in_bytes").write_text(str(self.memory_bytes))
                swap = self.dirs["memory"] / "memory.memsw.limit_in_bytes"
                if swap.exists():  # memory + swap: the same figure, so nothing may spill into swap
                    swap.write_text(str(self.memory_bytes))
        except OSError:
            self.dirs = {c: d for c, d in self.dirs.items() if d in made}
            self.remove()
            raise
        return self

    def __enter__(self) -> "LimitedGroup":
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def enter(self) -> None:
        """Move the calling process into the group (called in the child, before it runs the lesson)."""
        self.add(os.getpid())

    def add(self, pid: int) -> None:
        """Move process `pid` into the group; what it touches from now on is charged here."""
        for directory in self.dirs.values():
            (directory / "cgroup.procs").write_text(str(pid))

    def pids(self) -> set[int]:
        found: set[int] = set()
        for directory in self.dirs.values():
            with contextlib.suppress(OSError):
                found |= {int(p) for p in (directory / "cgroup.procs").read_text().split()}
        return found

    def _memory_dir(self) -> Path:
        return self.dirs["all" if self.version == 2 else "memory"]

    def memory_bytes_used(self) -> int:
        """Bytes charged to the group now."""
        name = "memory.current" if self.version == 2 else "memory.usage_in_bytes"
        return int((self._memory_dir() / name).read_text())

    def oom_kills(self) -> int | None:
        """How many processes the OOM killer has killed in this group (None where the kernel does not say)."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        with contextlib.suppress(OSError):
            for line in (self._memory_dir() / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        return None

    def figures(self) -> dict[str, Any]:
        """Peak memory, CPU seconds used, times and seconds throttled, so far."""
        if self.version == 2:
            group = self.dirs["all"]
            stat = dict(line.split() for line in (group / "cpu.stat").read_text().splitlines())
            peak_file = group / "memory.peak"
            peak = int(peak_file.read_text()) if peak_file.exists() else None
            return {"peak_memory_bytes": peak, "cpu_s": int(stat["usage_usec"]) / 1e6,
                    "throttled": int(stat.get("nr_throttled", 0)), "throttled_s": int(stat.get("throttled_usec", 0)) / 1e6}
        stat = dict(line.split() for line in (self.dirs["cpu"] / "cpu.stat").read_text().splitlines())
        return {"peak_memory_bytes": int((self.dirs["memory"] / "memory.max_usage_in_bytes").read_text()),
                "cpu_s": int((self.dirs["cpuacct"] / "cpuacct.usage").read_text()) / 1e9,
                "throttled": int(stat.get("nr_throttled", 0)), "throttled_s": int(stat.get("throttled_time", 0)) / 1e9}

    def remove(self) -> None:
        """Stop anything left in the group (only what this run started can be in it), then remove the group."""
        deadline = time.monotonic() + SETTLE_S
        while (left := self.pids()) and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        for directory in self.dirs.values():
            for _ in range(50):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)  # a killed process takes a moment to leave
            else:
                print(f"could not remove {directory}: remove it with rmdir", file=sys.stderr)
