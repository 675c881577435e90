"""Lesson 02's experiment at the corners of its parameters.

Measured throughput against the bounds and the in-step prediction.
"""

import argparse
import json
import os

from iolab import load, servers, theory
from iolab.lessons.sync_async import experiment


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--client", default="async", choices=load.CLIENTS)
    parser.add_argument("--server", default="tornado_app")
    parser.add_argument("--mode", choices=("async", "sync", "both"), default="both")
    args = parser.parse_args()
    corners = [c for c in experiment.CORNERS if args.mode in ("both", c[0])]

    def report(m):
        row, p = m.row(), m.prediction
        mva = theory.mva_throughput(p.users, p.wait_s + p.demand_s + p.queued_s) if p.blocking else \
            theory.mva_throughput(p.users, p.demand_s + p.queued_s, p.wait_s)
        row["off_mva"] = row["rps"] / mva - 1
        print(f"{m.mode:>5} {m.delay_ms:5d} ms {row['users']:4d} users {row['requests']:4d} req: {row['rps']:8.2f} req/s;"
              f" in step {row['in_step_rps']:8.2f} ({row['off_in_step']:+.1%}), MVA {row['off_mva']:+.1%},"
              f" band {row['low_rps']:.2f}..{row['high_rps']:.2f} {'in' if row['in_band'] else 'OUT'};"
              f" D {row['demand_ms']:.3f} ms, queued {row['queued_ms']:.3f} ms, client {row['client_demand_ms']:.3f} ms",
              flush=True)
        rows.append(row)

    rows = []
    with servers.serve(args.server) as server:
        experiment.run_corners(server, corners, client=args.client, on_corner=report)
    asynchronous = [row for row in rows if row["mode"] == "async"]
    summary = {
        "server": args.server, "client": args.client, "cpus": len(os.sched_getaffinity(0)),
        "all_in_band": all(row["in_band"] for row in rows),
        "async_worst_off_in_step": max((abs(row["off_in_step"]) for row in asynchronous), default=None),
        "async_within_2pct": sum(abs(row["off_in_step"]) <= 0.02 for row in asynchronous),
        "async_corners": len(asynchronous),
        "demand_ms": {f"{row['mode']} {row['delay_ms']} {row['users']}": round(row["demand_ms"], 3) for row in rows},
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
