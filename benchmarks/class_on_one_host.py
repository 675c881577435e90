"""A class on one host: N students of `make hub`'s JupyterHub, each running a different quick lesson at once.

N = 1, 3, 6 students, each an ordinary user with their own server, all on the host's cores (two here). Per round:
lessons that ran to their end, claims judged (✓ and ✗), claims excused because others held the CPUs (⚠,
iolab.claims: the lesson named its neighbours), each lesson's wall time, and each student's peak memory (the RSS of
all their processes, summed, sampled every SAMPLE_S: their server, kernel and the servers the lesson started).
Root on Linux with npm; the environment is make hub's (--env, installed on first use). Accounts are made for the run
and removed with their homes afterwards. Hold the measuring lock around it:

    flock /tmp/iolab-measure.lock .venv/bin/python benchmarks/class_on_one_host.py
"""

import argparse
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import requests

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "hub"))
from class_client import Student  # noqa: E402 (hub/ is a folder of scripts, as tools/ is)

# The quick lessons, each a student's own: 00, 03 and 04 take about 13 s alone here, 01 19 s, 05 23 s, 02 34 s.
LESSONS = ("00-start-here", "03-handler-ordering", "04-io-models", "01-bank-queue", "05-event-loop-from-scratch",
           "02-sync-vs-async")
ROUNDS = (1, 3, 6)
SAMPLE_S = 0.5
START_TIMEOUT_S = 120
CELL_TIMEOUT_S = 300


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def memory_by_uid(uids):
    """{uid: bytes}: the RSS of every process each uid runs, summed."""
    found = dict.fromkeys(uids, 0)
    for process in psutil.process_iter(["uids", "memory_info"]):
        try:
            uid = process.info["uids"].real
            if uid in found and process.info["memory_info"]:
                found[uid] += process.info["memory_info"].rss
        except (psutil.Error, AttributeError):
            continue
    return found


class PeakMemory:
    """Each uid's highest summed RSS while the block runs, sampled every SAMPLE_S by a thread of its own."""

    def __init__(self, uids):
        self.uids, self.peak, self.stop = set(uids), dict.fromkeys(uids, 0), threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self):
        while not self.stop.wait(SAMPLE_S):
            for uid, rss in memory_by_uid(self.uids).items():
                self.peak[uid] = max(self.peak[uid], rss)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def host_pressure_us():
    """The host's PSI `some` total for CPUs, in µs (None where the kernel keeps none)."""
    try:
        first = Path("/proc/pressure/cpu").read_text().splitlines()[0]
    except OSError:
        return None
    return int(dict(part.split("=") for part in first.split()[1:])["total"])


def start_hub(args, names, port, state, password):
    env = {**os.environ, "IOLAB_HUB_PASSWORD": password}
    command = [sys.executable, str(REPO / "hub" / "serve.py"), "--env", str(args.env), "--port", str(port),
               "--state", str(state), "--students", " ".join(names), "--quick"]
    with open(state.parent / "hub.log", "wb") as log:  # the hub keeps its own copy of the descriptor
        hub = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT_S * 5  # a first run installs the environment (about a minute)
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/hub/api", timeout=2).ok:
                return hub
        except requests.ConnectionError:
            pass
        if hub.poll() is not None:
            sys.exit(f"the hub exited: see {state.parent / 'hub.log'}")
        time.sleep(0.5)
    sys.exit(f"the hub did not answer: see {state.parent / 'hub.log'}")


def run_round(students, n):
    """The first n students start their servers, then each runs their lesson at the same moment."""
    taking_part = students[:n]
    with ThreadPoolExecutor(n) as pool:
        list(pool.map(lambda student: student.start_server(START_TIMEOUT_S), taking_part))
    uids = {pwd.getpwnam(s.name).pw_uid: s.name for s in taking_part}
    idle = memory_by_uid(uids)
    barrier = threading.Barrier(n)

    def lesson(index):
        barrier.wait()
        return taking_part[index].run_lesson(f"iolab/{LESSONS[index]}.ipynb",
                                             {"quick": True, "solutions": False, "results_path": None},
                                             CELL_TIMEOUT_S)

    pressure_before, started = host_pressure_us(), time.monotonic()
    with PeakMemory(uids) as memory, ThreadPoolExecutor(n) as pool:
        runs = list(pool.map(lesson, range(n)))
    wall_s = time.monotonic() - started
    pressure_after = host_pressure_us()
    with ThreadPoolExecutor(n) as pool:
        list(pool.map(lambda student: student.stop_server(), taking_part))
    return {
        "students": n, "wall_s": round(wall_s, 1),
        "cpu_pressure": round((pressure_after - pressure_before) / 1e6 / wall_s, 3)
        if pressure_before is not None else None,
        "lessons": [{
            "lesson": LESSONS[i], "passed": run.passed, "error": run.error, "seconds": round(run.seconds, 1),
            "judged": run.claims["✓"] + run.claims["✗"], "held": run.claims["✓"], "failed": run.claims["✗"],
            "excused": run.claims["⚠"], "skipped": run.claims["–"],
            "excused_lines": [line for line in run.text.splitlines() if line.startswith("⚠ ")],
            "idle_server_mb": round(idle[pwd.getpwnam(taking_part[i].name).pw_uid] / 2**20),
            "peak_mb": round(memory.peak[pwd.getpwnam(taking_part[i].name).pw_uid] / 2**20),
        } for i, run in enumerate(runs)],
    }


def print_round(found):
    print(f"\nN = {found['students']}: {found['wall_s']} s from the common start to the last lesson's end,"
          f" host CPU pressure {found['cpu_pressure']:.0%}" if found["cpu_pressure"] is not None else "")
    print(f"{'lesson':30} {'ran':>4} {'s':>6} {'judged':>6} {'held':>5} {'⚠':>3} {'idle MB':>8} {'peak MB':>8}")
    for row in found["lessons"]:
        print(f"{row['lesson']:30} {'yes' if row['passed'] else 'NO':>4} {row['seconds']:6.1f} {row['judged']:6d}"
              f" {row['held']:5d} {row['excused']:3d} {row['idle_server_mb']:8d} {row['peak_mb']:8d}")
        if row["error"]:
            print(f"    {row['error'][:300]}")
        for line in row["excused_lines"]:
            print(f"    {line[:300]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", type=Path, default=Path("/opt/iolab-hub"), help="make hub's environment (HUB_ENV)")
    parser.add_argument("--rounds", default=",".join(map(str, ROUNDS)), help="students per round, e.g. 1,3,6")
    args = parser.parse_args()
    rounds = [int(n) for n in args.rounds.split(",")]
    if os.geteuid() != 0 or not shutil.which("npm") or max(rounds) > len(LESSONS):
        reason = (f"at most {len(LESSONS)} students (one lesson each)" if max(rounds) > len(LESSONS)
                  else "needs root (the hub runs each student as their own user) and npm (the hub's proxy)")
        print(json.dumps({"skipped": reason}))
        sys.exit(2)
    stem = f"iolab{secrets.token_hex(2)}"
    names = [f"{stem}s{i}" for i in range(max(rounds))]
    password, port = secrets.token_hex(8), free_port()
    folder = Path(f"/tmp/{stem}-class")
    (folder / "state").mkdir(parents=True)
    hub, results = start_hub(args, names, port, folder / "state", password), []
    try:
        students = [Student(f"http://127.0.0.1:{port}", name, password) for name in names]
        # First logins make every student's copy: timed here, once, and not inside a round.
        first = time.monotonic()
        with ThreadPoolExecutor(len(students)) as pool:
            list(pool.map(lambda student: student.start_server(START_TIMEOUT_S), students))
        first_logins_s = time.monotonic() - first
        with ThreadPoolExecutor(len(students)) as pool:
            list(pool.map(lambda student: student.stop_server(), students))
        print(f"{len(students)} first logins at once (copies made, servers started): {first_logins_s:.1f} s")
        for n in rounds:
            results.append(run_round(students, n))
            print_round(results[-1])
    finally:
        hub.send_signal(signal.SIGTERM)
        hub.wait(60)
        time.sleep(2)
        left = [p.pid for p in psutil.process_iter(["uids"])
                if p.info["uids"] and p.info["uids"].real in {pwd.getpwnam(n).pw_uid for n in names}]
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for name in names:
            subprocess.run(["userdel", "--remove", name], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)
    print(f"\nprocesses of the students' left after the hub stopped: {len(left)}")
    print(json.dumps({"cpus": len(os.sched_getaffinity(0)), "first_logins_s": round(first_logins_s, 1),
                      "left_after_stop": len(left), "rounds": results}))


if __name__ == "__main__":
    main()
