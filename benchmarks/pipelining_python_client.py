"""Hello world pipelined 16 deep on pipeline_app with the lab's Python client, every answer checked, beside wrk at the same depth.

The issue's figure: Python server and Python client together on this machine,
depth 16, every response checked. The lab's pipelined client (iolab.load, in
client processes of its own) compares every answer with the one its request
gets alone; the speed run sends hello world only, and a second run with
answers that all differ (lesson 08's order paths) shows the order is right.
Beside them: wrk at the same depth and connections, the same server unpipelined,
and what this machine can reach at most, from the run's own D (server CPU per
request) and the client's CPU per request: min(1 / D, cores / (D + client)).
Rounds alternate between the runs; each figure is the median of its rounds.
The last line printed is JSON.

Run it alone: flock /tmp/iolab-measure.lock .venv/bin/python benchmarks/pipelining_python_client.py
    [--connections 64] [--duration 3] [--rounds 3] [--depth 16] [--one-cpu]
"""

import argparse
import json
import os
import statistics
import sys

from iolab import benchtools, environment, servers
from iolab.lessons.pipelining import order, runs

TARGET_RPS = 1_000_000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=64, help="connections in every run (default 64)")
    parser.add_argument("--duration", type=int, default=3, help="seconds per run (default 3)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each kind (default 3)")
    parser.add_argument("--depth", type=int, default=16, help="requests per batch (default 16)")
    parser.add_argument("--one-cpu", action="store_true", help="pin everything (server and clients) to CPU 0")
    args = parser.parse_args()
    for name, value, low, high in (("connections", args.connections, 2, 1000), ("duration", args.duration, 1, 60),
                                   ("rounds", args.rounds, 1, 20), ("depth", args.depth, 2, 256)):
        if not low <= value <= high:
            parser.error(f"--{name} must be between {low} and {high}, got {value}")
    if args.one_cpu:
        os.sched_setaffinity(0, {0})  # every process started from here on inherits it
    kinds = [("lab client", args.depth), ("lab client", 1)]
    if benchtools.missing_reason("wrk") is None:
        kinds.append(("wrk", args.depth))
    else:
        print(benchtools.missing_reason("wrk"), file=sys.stderr)
    measured = {kind: [] for kind in kinds}
    with servers.serve("pipeline_app", loop="uvloop", parser="httptools", write="batched") as server:
        for round_number in range(args.rounds):
            for kind in kinds if round_number % 2 == 0 else kinds[::-1]:
                client, depth = kind
                point = runs.measure(f"{client} {depth}", server, depth=depth, connections=args.connections,
                                     duration_s=args.duration, count=False, client=client)
                if point.errors:
                    raise SystemExit(f"{client} at depth {depth}: {point.errors} errors; the figures would not mean"
                                     " what they say")
                measured[kind].append(point)
                print(f"round {round_number + 1}: {client} depth {depth}: {point.rps:,.0f} req/s,"
                      f" D {point.demand_us:.2f} us, client {point.client_us:.2f} us", file=sys.stderr)
        checked = order.with_lab_client(server, depth=args.depth, connections=8, requests=16_000 * 4)
        server.check()

    cores = environment.usable_cores()
    rows = []
    for (client, depth), points in measured.items():
        demand = statistics.median(point.demand_us for point in points)
        client_us = statistics.median(point.client_us for point in points)
        rows.append({
            "client": client, "depth": depth, "rps": round(statistics.median(point.rps for point in points)),
            "demand_us": round(demand, 3), "client_us": round(client_us, 3),
            # The utilization law twice: one server thread, and server plus client on the machine's cores.
            "reach_rps": round(min(1e6 / demand, cores * 1e6 / (demand + client_us))),
        })
    by = {(row["client"], row["depth"]): row for row in rows}
    python_pair = by["lab client", args.depth]
    print(f"pipeline_app (uvloop, httptools, one write per batch), {args.connections} connections, {args.duration} s"
          f" runs, median of {args.rounds}{', all on CPU 0' if args.one_cpu else ''}; {cores} usable CPUs")
    print(f"{'client':12} {'depth':>5} {'req/s':>10} {'D us':>7} {'client us':>9} {'reach req/s':>11}")
    for row in rows:
        print(f"{row['client']:12} {row['depth']:>5} {row['rps']:>10,} {row['demand_us']:>7.2f} {row['client_us']:>9.2f}"
              f" {row['reach_rps']:>11,}")
    print(f"order: {checked.checked:,} answers that all differ checked, {checked.out_of_order} out of place,"
          f" {checked.other_errors} missing")
    print(f"a million req/s would need {python_pair['demand_us'] + python_pair['client_us']:.1f} cores for this server"
          f" and the Python client together, and D under 1 us in the one server process")
    print(json.dumps({
        "connections": args.connections, "duration_s": args.duration, "rounds": args.rounds, "depth": args.depth,
        "one_cpu": args.one_cpu, "cores": cores, "rows": rows, "order": checked.row(),
        "python_pipelined_over_unpipelined": round(python_pair["rps"] / by["lab client", 1]["rps"], 2),
        "target_rps": TARGET_RPS, "meets_target_rps": python_pair["rps"] >= TARGET_RPS,
        "cores_for_target": round((python_pair["demand_us"] + python_pair["client_us"]) * TARGET_RPS / 1e6, 2),
    }))


if __name__ == "__main__":
    main()
