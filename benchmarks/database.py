"""Lesson 13's runs, measured outside the notebook.

Lesson 13 at full size (or --quick): every way to call PostgreSQL predicted by the bottleneck law against its run,
the pools' own L against X · T, asyncpg's CPU per row against psycopg's, and the memory of PostgreSQL, a pool and
a front end together.

It runs the lesson's own parts (iolab.lessons.database.lab) `--repeat` times and checks the lesson's claims on each.
Run it under the shared lock (flock /tmp/iolab-measure.lock ...), on two cores, under `taskset -c 0` for one CPU,
or beside a hog (`--hog`). The last line is JSON.
"""

import argparse
import asyncio
import json
import subprocess
import sys
import time

import psutil

from iolab import children, load, postgres, servers
from iolab.claims import ClaimsFailed
from iolab.lessons.database import claims, lab, parameters

HOG = "while True: pass"


def tree_memory_mb(pid):
    """(RSS, PSS) of a process and its descendants, in MB: PSS counts shared buffers once, shared among them."""
    rss = pss = 0
    root = psutil.Process(pid)
    for process in [root, *root.children(recursive=True)]:
        try:
            info = process.memory_full_info()
        except psutil.Error:
            continue
        rss += info.rss
        pss += info.pss
    return rss / 2**20, pss / 2**20


def memory(plan):
    """PostgreSQL, tornado_db with both pools of P full, and the executor's connections: their memory together."""
    with servers.serve("postgres", max_connections=plan.max_connections) as db:
        postgres.make_table(db.port, plan.rows)
        with servers.serve("tornado_db", db_port=db.port, pool=plan.pool) as front:
            for how in ("pool", "asyncpg", "executor"):
                load.run_load(f"{front.url}/query?ms=20&how={how}", requests=4 * plan.users,
                              concurrency=plan.users, timeout_s=30, max_duration_s=60)
            load.run_load(f"{front.url}/rows?n={plan.rows}&driver=asyncpg", requests=20, concurrency=plan.pool,
                          timeout_s=30, max_duration_s=60)
            parts = {"postgres": tree_memory_mb(db.pid), "tornado_db": tree_memory_mb(front.pid)}
    return {name: {"rss_mb": rss, "pss_mb": pss} for name, (rss, pss) in parts.items()} | {
        "total_pss_mb": sum(pss for _, pss in parts.values()), "total_rss_mb": sum(rss for rss, _ in parts.values())}


async def one_run(plan):
    db = lab.Lab(plan)
    if db.reason:
        raise SystemExit(f"lesson 13 cannot run here: {db.reason}")
    try:
        db.drivers()
        await db.acquire()
        db.held_across()
        db.backends()
        await db.bouncer()
        await db.rows()
        db.rows_on_the_loop()
        await db.round_trips()
        await db.timeout()
        await db.killed()
    finally:
        db.stop()
    return db.results({})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the notebook's quick sizes")
    parser.add_argument("--repeat", type=int, default=1, help="how many times to run it all (default 1)")
    parser.add_argument("--hog", action="store_true", help="a CPU hog beside the runs")
    args = parser.parse_args()
    plan = parameters.Plan.from_cell(parameters.DEFAULTS | {"quick": args.quick})
    hog = children.spawn([sys.executable, "-c", HOG], stdout=subprocess.DEVNULL) if args.hog else None
    runs = []
    try:
        for repeat in range(args.repeat):
            began = time.monotonic()
            found = asyncio.run(one_run(plan))
            seconds = time.monotonic() - began
            try:
                held, failed = len(claims.check_claims(found).rows), []
            except ClaimsFailed as error:
                held, failed = None, str(error).splitlines()[1:]
            runs.append(summary(found, repeat, seconds, held, failed))
        used = memory(plan)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    print(f"PostgreSQL, its pools and tornado_db: {used['total_pss_mb']:.0f} MB PSS ({used['total_rss_mb']:.0f} MB RSS)")
    print(json.dumps({"quick": args.quick, "hog": args.hog, "runs": runs, "memory": used}))
    return 0 if all(not run["claims_failed"] for run in runs) else 1


def summary(found, repeat, seconds, held, failed):
    drivers = [{key: row[key] for key in ("front_end", "driver", "how", "pool", "rps", "predicted_rps", "bottleneck",
                                          "ceiling_rps")} for row in found.get("drivers", [])]
    rows = {row["driver"]: row["cpu_us_per_row"] for row in found.get("rows", [])}
    for row in drivers:
        print(f"run {repeat}: {row['front_end']:10} {row['how']:9} {row['rps']:7.1f} req/s, predicted"
              f" {row['predicted_rps']:7.1f} ({row['bottleneck']})")
    for row in found["pool"]["little"]:
        print(f"run {repeat}: {row['driver']}: the pool's L {row['L']:.2f} against X·T {row['X_T']:.2f}; wait"
              f" {row['wait_ms']:.0f} ms against {row['predicted_wait_ms']:.0f} ms predicted")
    ratio = rows.get("psycopg", 0) / rows["asyncpg"] if rows.get("asyncpg") else None
    print(f"run {repeat}: {seconds:.1f} s; CPU per row psycopg / asyncpg = {ratio}; claims failed: {len(failed)}")
    return {"repeat": repeat, "seconds": seconds, "drivers": drivers, "little": found["pool"]["little"],
            "held_across": [{key: row[key] for key in ("release", "rps", "predicted_rps", "bottleneck")}
                            for row in found.get("held_across", [])],
            "cpu_us_per_row": rows, "psycopg_over_asyncpg": ratio,
            "rows_on_the_loop": [{key: row[key] for key in ("driver", "rps", "predicted_rps", "bottleneck", "rows_free_rps")}
                                 for row in found.get("rows_on_the_loop", [])], "round_trips": found.get("round_trips"),
            "claims_held": held, "claims_failed": failed}


if __name__ == "__main__":
    sys.exit(main())
