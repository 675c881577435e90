"""Lesson 13's servers measured against the bottleneck law.

The cluster's start, each front end's X against the bottleneck law, CPU per row, RSS.

Each run is a closed loop of N users on /query?ms=T. The prediction is the bottleneck law with the pool as a tier,
X = min(N, slots, max_connections) / T, and the front end's CPU bound 1 / D, D its CPU per request measured in the
same run (its own /stats cpu_s). Run under the shared lock: flock /tmp/iolab-measure.lock python benchmarks/db_servers.py
"""

import argparse
import contextlib
import json
import os
import statistics
import time
import urllib.request

import psutil

from iolab import load, postgres, servers


def stats(server):
    with urllib.request.urlopen(f"{server.url}/stats", timeout=10) as answer:
        return json.loads(answer.read())


def rss_mb(pids):
    """(RSS, PSS) in MB summed over the processes: RSS counts shared pages once per process, PSS shares them out."""
    rss = pss = 0
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            info = psutil.Process(pid).memory_full_info()
            rss, pss = rss + info.rss, pss + info.pss
    return rss / 2**20, pss / 2**20


def tree(pid):
    process = psutil.Process(pid)
    return [pid, *(child.pid for child in process.children(recursive=True))]


def cluster_start(times):
    took = []
    for _ in range(times):
        began = time.perf_counter()
        with servers.serve("postgres"):
            took.append(time.perf_counter() - began)
    return took


def closed_run(server, path, users, requests):
    """X and D of one closed-loop run: (requests per second, the front end's CPU seconds per request, errors)."""
    before = stats(server)
    result = load.run_load(f"{server.url}{path}", requests=requests, concurrency=users, timeout_s=30)
    after = stats(server)
    x = result.completed / result.duration_s
    d = (after["cpu_s"] - before["cpu_s"]) / max(1, result.completed)
    return x, d, result.errors, before, after


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--t-ms", type=int, default=50)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=3.0, help="about how long each run lasts at its prediction")
    args = parser.parse_args()
    t = args.t_ms / 1000
    report = {"cpu_count": os.cpu_count(), "affinity": len(os.sched_getaffinity(0))}
    took = cluster_start(3)
    report["cluster_start_s"] = [round(s, 3) for s in took]
    print(f"cluster start (initdb + postmaster ready + LISTENING): {', '.join(f'{s:.2f}' for s in took)} s", flush=True)
    executor = min(32, (os.cpu_count() or 1) + 4)
    cases = [  # (front end, its options, how, path, slots)
        ("tornado_db", {}, "blocking", "/query?how=blocking&ms=", 1),
        ("tornado_db", {}, "executor", "/query?how=executor&ms=", executor),
        ("tornado_db", {"pool": 4}, "pool P=4", "/query?how=pool&ms=", 4),
        ("tornado_db", {"pool": 10}, "pool P=10", "/query?how=pool&ms=", 10),
        ("tornado_db", {"pool": 10}, "asyncpg P=10", "/query?how=asyncpg&ms=", 10),
        ("fastapi_db", {"pool": 10}, "def, 40 threads", "/sync-query?ms=", 40),
        ("fastapi_db", {"pool": 10}, "async psycopg P=10", "/async-query?driver=psycopg&ms=", 10),
        ("fastapi_db", {"pool": 10}, "async asyncpg P=10", "/async-query?driver=asyncpg&ms=", 10),
        ("fastapi_db", {"pool": 10}, "blocking in async def", "/blocking-query?ms=", 1),
    ]
    report["runs"] = []
    with servers.serve("postgres") as database:
        postgres.make_table(database.port, 10_000)
        for name, options, how, path, slots in cases:
            with servers.serve(name, db_port=database.port, **options) as front:
                predicted = min(args.users, slots, 100) / t
                requests = max(40, int(predicted * args.seconds))
                closed_run(front, path + str(args.t_ms), args.users, min(requests, 2 * args.users))  # warm-up
                x, d, errors, _, after = closed_run(front, path + str(args.t_ms), args.users, requests)
                bound = 1 / d if d > 0 else float("inf")
                law = min(predicted, bound)
                rss, pss = rss_mb(tree(database.pid) + [front.pid])
                row = {"front_end": name, "how": how, "users": args.users, "t_ms": args.t_ms, "rps": round(x, 1),
                       "predicted_rps": round(law, 1), "cpu_ms_per_request": round(1000 * d, 3), "errors": errors,
                       "rss_mb": round(rss), "pss_mb": round(pss), "backends": len(psutil.Process(
                           [c for c in psutil.Process(database.pid).children() if "-D" in c.cmdline()][0].pid).children())}
                report["runs"].append(row)
                print(f"{name:10} {how:22} N={args.users} T={args.t_ms} ms  X {x:7.1f}/s  predicted {law:7.1f}/s"
                      f" ({x / law - 1:+.1%})  D {1000 * d:.2f} ms  errors {errors}  RSS {rss:.0f} MB"
                      f" (PSS {pss:.0f} MB) of postgres + front end", flush=True)
        # CPU per row: /rows?n=R against n=0, the same front end, one run each.
        rows = []
        with servers.serve("tornado_db", db_port=database.port, pool=4) as front:
            for driver in ("psycopg", "asyncpg"):
                per = {}
                for n in (0, 1000):
                    path = f"/rows?driver={driver}&n={n}"
                    closed_run(front, path, 4, 20)
                    _, d, errors, _, _ = closed_run(front, path, 4, 200)
                    per[n] = d
                us = (per[1000] - per[0]) / 1000 * 1e6
                rows.append({"driver": driver, "cpu_us_per_row": round(us, 3)})
                print(f"rows: {driver:8} {us:.2f} us of the loop's CPU per row (4 columns)", flush=True)
        report["rows"] = rows
        report["rows_ratio_psycopg_over_asyncpg"] = round(rows[0]["cpu_us_per_row"] / rows[1]["cpu_us_per_row"], 2)
    report["cluster_start_median_s"] = round(statistics.median(took), 3)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
