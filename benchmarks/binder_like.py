"""Every lesson under a Binder-like limit (a cgroup with a CFS quota and a memory limit): its time and peak memory.

Binder and JupyterHub limit a student's container with a CPU quota (1 CPU on
mybinder.org) and a memory limit (1 to 2 GB), not with an affinity mask; this
runs each lesson under papermill in a fresh cgroup set up the same way, and
reports how long it took, its peak memory, how often the quota throttled it,
and whether it ran to its end. It needs root on Linux with cgroup v1 or v2;
elsewhere it says why it cannot and exits 2. The cgroups it makes are removed
at the end, whatever happens. `--lock` takes the shared measuring lock for
each lesson in turn, so other runs can take it between two lessons.

    make binder-like QUICK=1 CPUS=1 MEMORY=2G
    python benchmarks/binder_like.py --cpus 0.5 --quick 02 06
"""

import argparse
import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 100_000  # the kernel's default CFS period, which Kubernetes (and so Binder) uses too
SETTLE_S = 5.0
KERNEL_PORT_RACE = "zmq.error.ZMQError: Address already in use"


def parse_size(text):
    """'2G', '512M' or a number of bytes -> bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def own_group(controller):
    """This process's group path of a v1 controller, or of the v2 hierarchy ('' as the controller)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in (controllers.split(",") if controllers else [""]):
            return path
    return "/"


def why_not():
    """None if this process can make a limited cgroup here, else the reason."""
    if not sys.platform.startswith("linux"):
        return f"cgroups are Linux's; this is {sys.platform}"
    if os.geteuid() != 0:
        return "making a cgroup needs root (run it as root, or in a container started with a CPU and memory limit)"
    if (ROOT / "cgroup.controllers").is_file():
        controllers = (ROOT / "cgroup.controllers").read_text().split()
        missing = {"cpu", "memory"} - set(controllers)
        return f"cgroup v2 without the {', '.join(sorted(missing))} controller" if missing else None
    missing = [c for c in ("cpu", "cpuacct", "memory") if not (ROOT / c).is_dir()]
    if missing:
        return f"no cgroup filesystem with the {', '.join(missing)} controller(s) at {ROOT}"
    return None


class LimitedGroup:
    """A cgroup with a CPU quota and a memory limit, made beside this process's own (v1: one per controller)."""

    def __init__(self, name, cpus, memory_bytes):
        self.version = 2 if (ROOT / "cgroup.controllers").is_file() else 1
        if self.version == 2:
            own = ROOT / own_group("").lstrip("/")
            # v2 lets a group with processes in it have no children that use controllers; a sibling of ours works.
            self.dirs = {"all": (own if own == ROOT else own.parent) / name}
        else:
            self.dirs = {c: ROOT / c / own_group(c).lstrip("/") / name for c in ("cpu", "cpuacct", "memory")}
        self.cpus, self.memory_bytes = cpus, memory_bytes

    def create(self):
        made = []
        try:
            for directory in self.dirs.values():
                directory.mkdir()
                made.append(directory)
            if self.version == 2:
                group = self.dirs["all"]
                subtree = group.parent / "cgroup.subtree_control"
                enabled = subtree.read_text().split()
                for controller in ("cpu", "memory"):
                    if controller not in enabled:
                        subtree.write_text(f"+{controller}")
                (group / "cpu.max").write_text(f"{round(self.cpus * PERIOD_US)} {PERIOD_US}")
                (group / "memory.max").write_text(str(self.memory_bytes))
                if (group / "memory.swap.max").exists():
                    (group / "memory.swap.max").write_text("0")
            else:
                (self.dirs["cpu"] / "cpu.cfs_period_us").write_text(str(PERIOD_US))
                (self.dirs["cpu"] / "cpu.cfs_quota_us").write_text(str(round(self.cpus * PERIOD_US)))
                (self.dirs["memory"] / "memory.limit_in_bytes").write_text(str(self.memory_bytes))
        except OSError:
            self.dirs = {c: d for c, d in self.dirs.items() if d in made}
            self.remove()
            raise
        return self

    def enter(self):
        """Move the calling process into the group (called in the child, before it runs the lesson)."""
        for directory in self.dirs.values():
            (directory / "cgroup.procs").write_text(str(os.getpid()))

    def pids(self):
        found = set()
        for directory in self.dirs.values():
            with contextlib.suppress(OSError):
                found |= {int(p) for p in (directory / "cgroup.procs").read_text().split()}
        return found

    def figures(self):
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

    def remove(self):
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


@contextlib.contextmanager
def measuring_lock(path):
    if not path:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_lesson(notebook, args):
    """Run one lesson under papermill in a fresh limited group; its figures as a dict."""
    stem = notebook.stem
    out_dir = REPO / "build" / "binder-like"
    out_dir.mkdir(parents=True, exist_ok=True)
    results = out_dir / f"{stem}.json"
    results.unlink(missing_ok=True)
    command = [
        sys.executable, "-m", "papermill", "--cwd", str(REPO / "notebooks"), "-k", "python3", "--no-progress-bar",
        "--execution-timeout", str(args.cell_timeout), "-p", "quick", str(args.quick), "-p", "solutions", "True",
        "-p", "results_path", str(results), str(notebook), str(out_dir / f"{stem}.ipynb"),
    ]
    group = LimitedGroup(f"iolab-binder-like-{os.getpid()}-{stem}", args.cpus, args.memory).create()
    try:
        began = time.monotonic()
        with open(out_dir / f"{stem}.log", "w") as log:
            done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, preexec_fn=group.enter,
                                  timeout=args.lesson_timeout, check=False)
        wall = time.monotonic() - began
        figures = group.figures()
    except subprocess.TimeoutExpired:
        return {"lesson": stem, "passed": False, "error": f"took longer than {args.lesson_timeout} s"}
    finally:
        group.remove()
    row = {"lesson": stem, "passed": done.returncode == 0 and results.exists(), "wall_s": round(wall, 1),
           "cpu_s": round(figures["cpu_s"], 1), "peak_memory_mb": round((figures["peak_memory_bytes"] or 0) / 2**20),
           "throttled": figures["throttled"], "throttled_s": round(figures["throttled_s"], 1)}
    if not row["passed"]:
        tail = (out_dir / f"{stem}.log").read_text().strip().splitlines()[-3:]
        row["error"] = " | ".join(tail)[-400:]
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="lesson numbers or stems (default: every notebook)")
    parser.add_argument("--cpus", type=float, default=1.0, help="the CPU quota, in CPUs (default 1, as on Binder)")
    parser.add_argument("--memory", type=parse_size, default="2G", help="the memory limit (default 2G)")
    parser.add_argument("--quick", action="store_true", help="the lessons' small CI sizes")
    parser.add_argument("--lock", default=None, help="a lock file taken around each lesson (/tmp/iolab-measure.lock)")
    parser.add_argument("--cell-timeout", type=int, default=900)
    parser.add_argument("--lesson-timeout", type=int, default=1800)
    args = parser.parse_args()
    if not 0.01 <= args.cpus <= os.cpu_count():
        parser.error(f"--cpus must be between 0.01 and {os.cpu_count()}, got {args.cpus}")
    if args.memory < 256 << 20:
        parser.error(f"--memory must be at least 256M, got {args.memory} bytes")
    reason = why_not()
    if reason:
        print(f"binder_like: cannot make a limited cgroup here: {reason}", file=sys.stderr)
        print(json.dumps({"skipped": reason}))
        sys.exit(2)
    notebooks = sorted((REPO / "notebooks").glob("*.ipynb"))
    if args.lessons:
        notebooks = [nb for nb in notebooks if any(nb.stem.startswith(want) for want in args.lessons)]
    rows = []
    for notebook in notebooks:
        with measuring_lock(args.lock):
            row = run_lesson(notebook, args)
            if not row["passed"] and KERNEL_PORT_RACE in (REPO / "build" / "binder-like" / f"{notebook.stem}.log").read_text():
                # Jupyter picks the kernel's ports, then the kernel binds them: another program took one between.
                row = run_lesson(notebook, args) | {"again": "the kernel's port was taken before it started"}
        rows.append(row)
        print(f"{row['lesson']}: {'passed' if row['passed'] else 'FAILED'} in {row.get('wall_s', '?')} s,"
              f" peak {row.get('peak_memory_mb', '?')} MiB, CPU {row.get('cpu_s', '?')} s, throttled"
              f" {row.get('throttled', '?')} times ({row.get('throttled_s', '?')} s)"
              + (f"; {row['error']}" if row.get("error") else ""), flush=True)
    print(json.dumps({"cpus": args.cpus, "memory_bytes": args.memory, "quick": args.quick,
                      "cgroup": 2 if (ROOT / "cgroup.controllers").is_file() else 1, "lessons": rows}))
    sys.exit(0 if all(row["passed"] for row in rows) else 1)


if __name__ == "__main__":
    main()
