"""Per request against per batch, on lesson 08's two pipelining servers.

pipeline_app with the lab's pipelined client, pipeline_batch_app with the batch client, and wrk on both ends.

Issue figure: Python server and Python client together on this machine, every
answer checked in order. Per request: pipeline_app (uvloop, httptools, one
write per batch) runs Python for every request, and the lab's pipelined client
(iolab.load) for every answer. Per batch: pipeline_batch_app recognises a read
of requests with one pattern and answers it with one join, and the batch client
(iolab.clients.batch) sends numbered batches in one write and checks every
answer's number a read at a time. Beside them, wrk (C) at the same depths
against the batch server, its requests numbered too, so they take the batch path.

For each run: req/s, the server's CPU per request D (user + system), the
client's CPU per request, and what the utilization law says the pair can reach
from those two and the client's threads alone: min(1 / D, threads / client, cores / (D + client)),
as lesson 06's model counts the load client. Rounds alternate the
order of the runs; each figure is the median of its rounds. The last line is JSON.

Run it alone: flock /tmp/iolab-measure.lock .venv/bin/python benchmarks/pipelining_batch.py
    [--connections 64] [--duration 3] [--rounds 3] [--depths 16 32] [--one-cpu | --split]
"""

import argparse
import json
import os
import statistics
import sys

from iolab import benchtools, environment, servers
from iolab.lessons.pipelining import runs

TARGET_RPS = 1_000_000
SERVERS = {  # what each end of the ladder's last rung runs
    "per request": ("pipeline_app", {"loop": "uvloop", "parser": "httptools", "write": "batched"}, "lab client"),
    "per batch": ("pipeline_batch_app", {"loop": "uvloop", "parser": "httptools"}, "batch client"),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=64, help="connections in every run (default 64)")
    parser.add_argument("--duration", type=int, default=3, help="seconds per run (default 3)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each kind (default 3)")
    parser.add_argument("--depths", type=int, nargs="+", default=[16, 32], help="requests per batch (default 16 32)")
    pinning = parser.add_mutually_exclusive_group()
    pinning.add_argument("--one-cpu", action="store_true", help="pin everything (servers and clients) to CPU 0")
    pinning.add_argument("--split", action="store_true", help="servers on CPU 1, clients on CPU 0 (needs 2 CPUs)")
    args = parser.parse_args()
    for name, value, low, high in (("connections", args.connections, 2, 1000), ("duration", args.duration, 1, 60),
                                   ("rounds", args.rounds, 1, 20)):
        if not low <= value <= high:
            parser.error(f"--{name} must be between {low} and {high}, got {value}")
    for depth in args.depths:
        if not 2 <= depth <= 256:
            parser.error(f"--depths must each be between 2 and 256, got {depth}")
    if args.one_cpu:
        os.sched_setaffinity(0, {0})  # every process started from here on inherits it
    if args.split and not {0, 1} <= os.sched_getaffinity(0):
        parser.error("--split needs CPUs 0 and 1")
    cores = environment.usable_cores()  # before --split pins this process (and its clients) to one of them
    wrk = benchtools.missing_reason("wrk")
    if wrk:
        print(wrk, file=sys.stderr)
    load_average = os.getloadavg()

    # (label, which server, client, depth)
    kinds = []
    for depth in args.depths:
        kinds.append(("per request", "per request", "lab client", depth))
        kinds.append(("per batch", "per batch", "batch client", depth))
        if not wrk:
            kinds.append(("wrk, batch server", "per batch", "wrk", depth))
    measured = {kind: [] for kind in kinds}
    with servers.serve(SERVERS["per request"][0], **SERVERS["per request"][1]) as per_request, \
            servers.serve(SERVERS["per batch"][0], **SERVERS["per batch"][1]) as per_batch:
        started = {"per request": per_request, "per batch": per_batch}
        if args.split:
            for server in started.values():
                os.sched_setaffinity(server.pid, {1})
            os.sched_setaffinity(0, {0})  # the clients, started from here, inherit it
        for round_number in range(args.rounds):
            for kind in kinds if round_number % 2 == 0 else kinds[::-1]:
                label, which, client, depth = kind
                paths = runs.numbered_paths(depth) if client == "wrk" else None  # so wrk takes the batch path
                point = runs.measure(label, started[which], depth=depth, connections=args.connections,
                                     duration_s=args.duration, count=False, client=client, paths=paths)
                if point.errors:
                    raise SystemExit(f"{label} ({client}) at depth {depth}: {point.errors} errors; the figures would"
                                     " not mean what they say")
                measured[kind].append(point)
                print(f"round {round_number + 1}: {label}, {client}, depth {depth}: {point.rps:,.0f} req/s,"
                      f" D {point.demand_us:.3f} us, client {point.client_us:.3f} us", file=sys.stderr)
        for server in started.values():
            server.check()

    rows = []
    for (label, which, client, depth), points in measured.items():
        demand = statistics.median(point.demand_us for point in points)
        user = statistics.median(point.user_us for point in points)
        client_us = statistics.median(point.client_us for point in points)
        rows.append({
            "run": label, "server": SERVERS[which][0], "client": client, "depth": depth,
            "rps": round(statistics.median(point.rps for point in points)),
            "rps_spread": [round(min(point.rps for point in points)), round(max(point.rps for point in points))],
            "demand_us": round(demand, 3), "user_us": round(user, 3), "client_us": round(client_us, 3),
            # The utilization law three times: the server's thread, the client's own threads, both on the cores.
            "reach_rps": round(min(runs.ceilings(demand, client_us, cores, points[0].client_threads).values())),
        })
    print(f"{args.connections} connections, {args.duration} s runs, median of {args.rounds}"
          f"{', all on CPU 0' if args.one_cpu else ', servers on CPU 1, clients on CPU 0' if args.split else ''};"
          f" {cores} usable CPU(s); load average before:"
          f" {load_average[0]:.2f} {load_average[1]:.2f} {load_average[2]:.2f}")
    print(f"{'run':18} {'server':18} {'client':12} {'depth':>5} {'req/s':>10} {'D us':>6} {'user':>6} {'client us':>9}"
          f" {'reach req/s':>11}")
    for row in rows:
        print(f"{row['run']:18} {row['server']:18} {row['client']:12} {row['depth']:>5} {row['rps']:>10,}"
              f" {row['demand_us']:>6.3f} {row['user_us']:>6.3f} {row['client_us']:>9.3f} {row['reach_rps']:>11,}")
    by = {(row["run"], row["depth"]): row for row in rows}
    deepest = max(args.depths)
    best = max((by["per batch", depth] for depth in args.depths), key=lambda row: row["rps"])
    for depth in args.depths:
        pair = by["per batch", depth]
        print(f"depth {depth}: per batch / per request {pair['rps'] / by['per request', depth]['rps']:.1f}x;"
              f" a million with the Python client needs D + client <= {cores} us, it is"
              f" {pair['demand_us'] + pair['client_us']:.2f} us")
    print(json.dumps({
        "connections": args.connections, "duration_s": args.duration, "rounds": args.rounds, "depths": args.depths,
        "one_cpu": args.one_cpu, "split": args.split, "cores": cores, "load_average": [round(value, 2) for value in load_average],
        "rows": rows, "target_rps": TARGET_RPS, "best_python_pair_rps": best["rps"], "best_depth": best["depth"],
        "meets_target_rps": best["rps"] >= TARGET_RPS,
        "per_batch_over_per_request": {depth: round(by["per batch", depth]["rps"] / by["per request", depth]["rps"], 2)
                                       for depth in args.depths},
        "cores_for_target_at_deepest": round((by["per batch", deepest]["demand_us"]
                                              + by["per batch", deepest]["client_us"]) * TARGET_RPS / 1e6, 2),
    }))


if __name__ == "__main__":
    main()
