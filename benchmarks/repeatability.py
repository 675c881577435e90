"""Identical runs of lesson 02's corners and lesson 06's cells.

How far they spread, how close any prediction can come.

A prediction is one figure; runs of one experiment give several. If identical
runs differ by more than a target allows, no model can meet that target on
this machine (theory.least_error). Run it on a quiet machine, then pinned to
one CPU (`taskset -c 0 ...`) and beside a CPU hog, to see what each allows.
"""

import argparse
import json
import os
import time

from iolab import servers, theory
from iolab.lessons.sync_async import experiment
from iolab.lessons.workers import sweep

CORNER_TARGET = 0.02  # lesson 02: predicted and measured async throughput within 2% at every corner
CELL_TARGET = 0.10  # lesson 06: every predicted throughput within 10%


def corners(text):
    """'20:40:200,100:200:400' -> [(20, 40, 200), (100, 200, 400)]: wait in ms, users, requests."""
    return [tuple(int(x) for x in part.split(":")) for part in text.split(",") if part]


def cells(text):
    """'gthread:1:1:hello,sync:2:1:hello' -> [(kind, workers, threads, handler), ...]."""
    out = []
    for part in text.split(","):
        kind, workers, threads, handler = part.split(":")
        out.append((kind, int(workers), int(threads), handler))
    return out


def spread(label, rps, demand_ms, target, extra):
    """One line of figures for a repeated run, and its row for the JSON. The spread of D is the CPU's own: the same
    work measured again, which any prediction built on one run's D inherits."""
    least, least_d = theory.least_error(rps), theory.least_error(demand_ms)
    row = {"label": label, "rps": [round(x, 1) for x in rps], "least_error": round(least, 4),
           "demand_ms": [round(x, 3) for x in demand_ms], "demand_least_error": round(least_d, 4),
           "target": target, "reachable": least <= target, **extra}
    print(f"{label:28s} {min(rps):9,.1f}..{max(rps):9,.1f} req/s over {len(rps)} runs: the best single prediction"
          f" is off by {least:.1%} (target {target:.0%}: {'reachable' if least <= target else 'NOT reachable'});"
          f" D {min(demand_ms):.3f}..{max(demand_ms):.3f} ms, ±{least_d:.1%}", flush=True)
    return row


def repeat_corners(chosen, repeats):
    rows = []
    with servers.serve("tornado_app") as server:
        for delay_ms, users, requests in chosen:
            runs = [experiment.run(server, "async", requests, users, delay_ms) for _ in range(repeats)]
            for m in runs:
                r = m.row()
                print(f"  {delay_ms} ms x {users} users: {r['rps']:9.1f} req/s, in step {r['in_step_rps']:9.1f}"
                      f" ({r['off_in_step']:+.1%}), D {r['demand_ms']:.3f} ms, {r['listen_drops']} connection"
                      f" attempts dropped", flush=True)
            # A run whose connection attempts overflowed the accept queue lost TCP's retry time: not the same
            # experiment, so it is left out of the spread (the in-step prediction allows for it separately).
            clean = [m for m in runs if not m.summary.listen_drops] or runs
            rows.append(spread(
                f"lesson 02: {delay_ms} ms x {users} users", [m.summary.rps for m in clean],
                [m.summary.demand_ms for m in clean], CORNER_TARGET,
                {"off_in_step": [round(m.off_in_step, 4) for m in runs], "runs_with_drops": len(runs) - len(clean)},
            ))
    return rows


def repeat_cells(chosen, repeats, lab):
    rows = []
    for kind, workers, threads, handler in chosen:
        config = sweep.Config(kind, workers, threads if kind in ("gthread", "threaded") else 1)
        runs = [lab.measure(config, [handler], again=True)[0] for _ in range(repeats)]
        for cell in runs:
            print(f"  {config.label} {handler}: {cell.rps:9,.0f} req/s, predicted {cell.predicted.rps:9,.0f}"
                  f" ({cell.error:+.1%}), D {cell.run.app_demand_ms:.3f} ms, idle {cell.run.idle_share:.0%},"
                  f" others {cell.run.others_share:.0%}", flush=True)
        rows.append(spread(
            f"lesson 06: {config.label} {handler}", [c.rps for c in runs], [c.run.app_demand_ms for c in runs],
            CELL_TARGET,
            {"error": [round(c.error, 4) for c in runs], "idle_share": [round(c.run.idle_share, 3) for c in runs]},
        ))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=6, help="runs of each configuration (at least 2)")
    parser.add_argument("--corners", type=corners, default=corners("20:1:100,20:40:200,100:200:400,1000:200:200"),
                        help="lesson 02 corners as wait_ms:users:requests, comma-separated")
    parser.add_argument("--cells", type=cells, default=cells("gthread:1:1:hello,sync:2:1:hello,gthread:2:4:cpu"),
                        help="lesson 06 cells as kind:workers:threads:handler, comma-separated")
    parser.add_argument("--run-seconds", type=float, default=0.5, help="lesson 06's run length, as its benchmark uses")
    args = parser.parse_args()
    if args.repeats < 2:
        parser.error("--repeats must be at least 2: one run has no spread")
    began = time.monotonic()
    rows = repeat_corners(args.corners, args.repeats)
    rows += repeat_cells(args.cells, args.repeats, sweep.Lab(20, 5, args.run_seconds, 16))
    print(json.dumps({
        "cpus": len(os.sched_getaffinity(0)), "repeats": args.repeats,
        "reachable": sum(row["reachable"] for row in rows), "of": len(rows),
        "worst_demand_least_error": max(row["demand_least_error"] for row in rows),
        "rows": rows, "seconds": round(time.monotonic() - began, 1),
    }))


if __name__ == "__main__":
    main()
