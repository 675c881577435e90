"""Every lesson under a Binder-like limit (a cgroup with a CFS quota and a memory limit): its time and peak memory.

Binder and JupyterHub limit a student's container with a CPU quota (1 CPU on
mybinder.org) and a memory limit (1 to 2 GB), not with an affinity mask; this
runs each lesson under papermill in a fresh cgroup set up the same way, and
reports how long it took, its peak memory, how often the quota throttled it,
and whether it ran to its end. It needs root on Linux with cgroup v1 or v2;
elsewhere it says why it cannot and exits 2. The cgroups it makes are removed
at the end, whatever happens. `--lock` takes the shared measuring lock for
each lesson in turn, so other runs can take it between two lessons. Executed copies and logs go
to build/binder-like/<cpus>cpu-<quick or full>/, one folder a setting.

    make binder-like QUICK=1 CPUS=1 MEMORY=2G
    python benchmarks/binder_like.py --cpus 0.5 --quick 02 06
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from iolab import measuring_lock
from iolab.cgroup_limit import ROOT, LimitedGroup, why_not

REPO = Path(__file__).resolve().parents[1]
KERNEL_PORT_RACE = "zmq.error.ZMQError: Address already in use"


def parse_size(text):
    """'2G', '512M' or a number of bytes -> bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)



def out_dir_for(args):
    """Where one setting's executed copies and logs go: a quick run at 0.5 CPU keeps the full 1-CPU run's files."""
    return REPO / "build" / "binder-like" / f"{args.cpus:g}cpu-{'quick' if args.quick else 'full'}"


def run_lesson(notebook, args):
    """Run one lesson under papermill in a fresh limited group; its figures as a dict."""
    stem = notebook.stem
    out_dir = out_dir_for(args)
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
    notebooks = sorted((REPO / "notebooks").glob("[0-9][0-9]-*.ipynb"))  # the lessons: the glossary runs nothing
    if args.lessons:
        notebooks = [nb for nb in notebooks if any(nb.stem.startswith(want) for want in args.lessons)]
    rows = []
    for notebook in notebooks:
        with measuring_lock.held(args.lock):
            row = run_lesson(notebook, args)
            if not row["passed"] and KERNEL_PORT_RACE in (out_dir_for(args) / f"{notebook.stem}.log").read_text():
                # Jupyter picks the kernel's ports, then the kernel binds them: another program took one between.
                row = run_lesson(notebook, args) | {"again": "the kernel's port was taken before it started"}
        rows.append(row)
        print(f"{row['lesson']}: {'passed' if row['passed'] else 'FAILED'} in {row.get('wall_s', '?')} s,"
              f" peak {row.get('peak_memory_mb', '?')} MiB, CPU {row.get('cpu_s', '?')} s, throttled"
              f" {row.get('throttled', '?')} times ({row.get('throttled_s', '?')} s)"
              + (f"; {row['error']}" if row.get("error") else ""), flush=True)
    print(json.dumps({"cpus": args.cpus, "memory_bytes": args.memory, "quick": args.quick, "out": str(out_dir_for(args)),
                      "cgroup": 2 if (ROOT / "cgroup.controllers").is_file() else 1, "lessons": rows}))
    sys.exit(0 if all(row["passed"] for row in rows) else 1)


if __name__ == "__main__":
    main()
