"""Lesson 08's ladder of frameworks, measured at full size.

Lesson 08's ladder with D per rung, Tornado's "4x the second fastest" verdict, and its synchronous claim measured.

1. The ladder: every rung of iolab.lessons.pipelining.ladder on hello world with keep-alive, driven by the
   lesson's client (wrk where installed): req/s, D (the server's CPU per request) split user/kernel, the busiest
   thread's CPU per request, and 1 / D. System calls are counted only with --count.
2. The verdict on the seed's 4x (iolab.lessons.pipelining.frameworks), in sentences from these figures.
3. The synchronous claim: Tornado's blocking handler and Django's def view on gunicorn's sync workers, on
   /sync-sleep?ms=W, each predicted as workers / (W + D) (at most cores / D) from the D its own run measured, and
   from hello world's D on the ladder. Equal where the wait dominates, apart where D does.

The last line printed is JSON. Run it alone, under the lab's lock:
    flock /tmp/iolab-measure.lock .venv/bin/python benchmarks/frameworks.py [--duration 2] [--connections 64]
        [--rungs django_gunicorn tornado_app ...] [--waits 0 1 10 100] [--count]
"""

import argparse
import json
import math

from iolab import environment, servers, tables
from iolab.lessons.pipelining import frameworks, ladder, runs

SYNC_SERVERS = [  # (label, registry name, options, workers)
    ("tornado_app, blocking", "tornado_app", {}, 1),
    ("django_gunicorn, 1 worker", "django_gunicorn", {"workers": 1}, 1),
    ("django_gunicorn, 4 workers", "django_gunicorn", {"workers": 4}, 4),
]


def plain(text):
    """A Markdown table as plain text, for a terminal."""
    return text.data if hasattr(text, "data") else str(text)


def run_ladder(labels, connections, duration_s, count):
    rows = []
    for label, name, options, _ in ladder.RUNGS:
        if labels and label not in labels:
            continue
        reason = ladder.missing(name)
        if reason:
            print(f"{label}: skipped, {reason}", flush=True)
            continue
        with servers.serve(name, **options) as server:
            rung = runs.measure(label, server, depth=1, connections=connections, duration_s=duration_s,
                                count=count and ladder.counted(label))
        rows.append({"server": label, **rung.row()})
        print(f"{label}: {rung.rps:,.0f} req/s, D {rung.demand_us:.1f} µs", flush=True)
    return rows


def run_sync(waits_ms, connections, duration_s, hello_us, cores):
    """Each blocking server on /sync-sleep?ms=W: measured, and predicted from its own run's D and hello world's."""
    points = []
    for label, name, options, workers in SYNC_SERVERS:
        reason = ladder.missing(name)
        if reason:
            print(f"{label}: skipped, {reason}", flush=True)
            continue
        with servers.serve(name, **options) as server:
            for wait in waits_ms:
                run = runs.measure(label, server, depth=1, connections=connections, duration_s=duration_s,
                                   count=False, paths=[f"/sync-sleep?ms={wait}"])
                hello = hello_us.get(name, math.nan)
                points.append({
                    "server": label, "wait_ms": wait, "workers": workers, "rps": run.rps, "demand_us": run.demand_us,
                    "predicted_rps": frameworks.sync_rate_rps(wait, run.demand_us, workers, cores),
                    "predicted_from_hello_rps": frameworks.sync_rate_rps(wait, hello, workers, cores),
                    "edges": run.edges, "errors": run.errors,
                })
                print(f"{label}, W {wait} ms: {run.rps:,.1f} req/s, D {run.demand_us:.0f} µs", flush=True)
    return points


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=64, help="connections of every ladder run")
    parser.add_argument("--duration", type=int, default=2, help="seconds of every run (wrk counts whole seconds)")
    parser.add_argument("--rungs", nargs="*", default=[], help="ladder labels to run (default: every rung)")
    parser.add_argument("--waits", nargs="*", type=int, default=list(frameworks.SYNC_WAITS_MS),
                        help="the waits W (ms) of the synchronous comparison")
    parser.add_argument("--sync-connections", type=int, default=8, help="connections of the synchronous runs")
    parser.add_argument("--count", action="store_true", help="count system calls too (a second run per rung)")
    args = parser.parse_args()
    unknown = set(args.rungs) - {label for label, *_ in ladder.RUNGS}
    if unknown:
        parser.error(f"--rungs: no rung named {sorted(unknown)}; the rungs are {[label for label, *_ in ladder.RUNGS]}")
    if not 1 <= args.duration <= 60 or not 1 <= args.connections <= 1000 or not 1 <= args.sync_connections <= 100:
        parser.error("--duration must be 1 to 60 s, --connections 1 to 1000, --sync-connections 1 to 100")
    if any(not 0 <= wait <= 1000 for wait in args.waits):
        parser.error(f"--waits must be 0 to 1000 ms each, got {args.waits}")
    cores = environment.usable_cpus()
    client = runs.client_name()
    print(f"{cores:g} usable CPU(s), client {client}, {args.connections} connections, {args.duration} s a run.")

    rows = run_ladder(set(args.rungs), args.connections, args.duration, args.count)
    print(plain(tables.markdown(
        ["rung", "req/s", "D (µs)", "user (µs)", "kernel (µs)", "busiest thread (µs)", "1 / D (req/s)",
         "system calls per request"],
        [[row["server"], row["rps"], row["demand_us"], row["user_us"], row["system_us"], row["thread_us"],
          1e6 / row["demand_us"], row["syscalls_per_request"]] for row in rows])))

    four = frameworks.four_times(rows, cores)
    if four is None:
        print("4x: no verdict, Tornado or none of the seed's rivals ran.")
    else:
        print(frameworks.sentence(four, {row["server"]: row for row in rows}))

    hello_us = {name: next((row["demand_us"] for row in rows if row["server"] == label), math.nan)
                for label, name in (("tornado_app", "tornado_app"), ("django_gunicorn", "django_gunicorn"))}
    points = run_sync(args.waits, args.sync_connections, args.duration, hello_us, cores)
    print(plain(tables.markdown(
        ["server", "W (ms)", "measured (req/s)", "D (µs)", "predicted from its D", "predicted from hello's D",
         "measured / predicted"],
        [[p["server"], p["wait_ms"], p["rps"], p["demand_us"], p["predicted_rps"], p["predicted_from_hello_rps"],
          p["rps"] / p["predicted_rps"]] for p in points])))
    by = {(p["server"], p["wait_ms"]): p for p in points}
    tornado, django = SYNC_SERVERS[0][0], SYNC_SERVERS[1][0]
    for wait in args.waits:
        if (tornado, wait) in by and (django, wait) in by:
            t, d = by[tornado, wait], by[django, wait]
            print(f"W {wait} ms, one worker each: Tornado / Django measured {t['rps'] / d['rps']:.2f},"
                  f" predicted {t['predicted_rps'] / d['predicted_rps']:.2f} from their D's"
                  f" ({t['demand_us']:.0f} and {d['demand_us']:.0f} µs).")
    over = [p for p in points if p["rps"] > p["predicted_rps"] * p["edges"]]
    print(f"{len(points) - len(over)} of {len(points)} synchronous runs under workers / (W + D) x the window's edges"
          + (f"; over: {over}" if over else "."))
    errors = sum(row["errors"] for row in rows) + sum(p["errors"] for p in points)
    keys = ("server", "rps", "demand_us", "user_us", "system_us", "thread_us", "client_us", "syscalls_per_request",
            "errors")
    print(json.dumps({
        "cpus": cores, "client": client, "connections": args.connections, "duration_s": args.duration,
        "ladder": [{key: row[key] for key in keys} for row in rows],
        "four_times": four.row() if four else None,
        "sync": points, "sync_over_bound": len(over), "errors": errors,
    }, default=float))


if __name__ == "__main__":
    main()
