"""Lesson 06 at full size.

Every thread, process and matrix run against its prediction, the USL peak checked, nginx beside
Python.
"""

import argparse
import json
import math
import statistics
import time
from collections import Counter

from iolab.lessons.workers import cores, sweep, usl


def counts(text):
    return [int(part) for part in text.split(",")]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--wait-ms", type=int, default=20)
    parser.add_argument("--cpu-ms", type=int, default=5)
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--run-seconds", type=float, default=0.5)
    parser.add_argument("--threads", type=counts, default=[1, 2, 4, 8], help="thread counts, e.g. 1,2,4,8")
    parser.add_argument("--workers", type=counts, default=[1, 2, 4], help="process counts")
    parser.add_argument("--matrix-workers", type=counts, default=[1, 2, 4])
    parser.add_argument("--matrix-threads", type=counts, default=[1, 2, 4, 8])
    parser.add_argument("--usl-workers", type=counts, default=[1, 2, 3, 4, 6, 8, 12, 16])
    parser.add_argument(
        "--one-cpu", action="store_true",
        help="pin servers and clients to one CPU (taskset -c 0; Binder sets a quota instead: binder_like.py)",
    )
    args = parser.parse_args()
    began = time.monotonic()
    cpus = cores.usable_cores()[:1] if args.one_cpu else None
    lab = sweep.Lab(args.wait_ms, args.cpu_ms, args.run_seconds, args.users, cpus=cpus)
    judged = {}
    parts = {"threads": [], "processes": [], "matrix": []}
    for kind in ("sync", "gthread", "threaded", "tornado"):
        lab.measure(sweep.Config(kind))
    for threads in args.threads:
        for kind in ("gthread", "threaded"):
            cells = lab.measure(sweep.Config(kind, 1, threads))
            parts["threads"] += cells
            judged.update((id(c), c) for c in cells)
    for workers in args.workers:
        for kind in ("sync", "tornado"):
            cells = lab.measure(sweep.Config(kind, workers))
            parts["processes"] += cells
            judged.update((id(c), c) for c in cells)
    for workers in args.matrix_workers:
        for threads in args.matrix_threads:
            config = sweep.Config("sync", workers) if threads == 1 else sweep.Config("gthread", workers, threads)
            cells = lab.measure(config)
            parts["matrix"] += cells
            judged.update((id(c), c) for c in cells)
    for cell in judged.values():
        print(f"{cell.config.label:26s} {cell.handler:5s} predicted {cell.predicted.rps:9,.0f} ({cell.predicted.limit:7s})"
              f" measured {cell.rps:9,.0f} {cell.error:+5.0%}  {cell.verdict.kind} {cell.verdict.reason}")
    curve = [lab.measure(sweep.Config("sync", n), ["hello"])[0] for n in args.usl_workers]
    # As the lesson fits it (Gunther's way): normalised to one worker, on the points up to the knee, where the
    # knee is judged against the noise between hello world's identical baseline runs.
    alone = lab.find(sweep.Config("sync"), "hello")
    noise = (max(alone.tries) - min(alone.tries)) / statistics.median(alone.tries)
    knee_workers, knee_rps, _ = usl.before_saturation([c.config.processes for c in curve], [c.rps for c in curve], noise)
    fit = usl.normalised_fit(knee_workers, knee_rps)
    peak_workers = fit.peak_workers(most=2 * max(args.usl_workers))
    peak_range = usl.peak_range(knee_workers, knee_rps, noise, most=2 * max(args.usl_workers))
    check = lab.measure(sweep.Config("sync", peak_workers), ["hello"], again=True)[0]
    peak_rps = fit.predict(peak_workers)
    print(f"USL: λ {fit.lam:,.0f}, σ {fit.sigma:.3f}, κ {fit.kappa:.4f}; peak {peak_workers} workers,"
          f" {peak_rps:,.0f} req/s predicted, {check.rps:,.0f} checked ({check.rps / peak_rps - 1:+.0%},"
          f" others took {check.run.others_share:.0%})")
    nginx = lab.measure(sweep.Config("nginx"))[0]
    best = max(lab.select({"sync", "gthread"}, "hello"), key=lambda c: c.rps)
    side = {"nginx alone": nginx, f"best gunicorn ({best.config.label})": best,
            "nginx + 1 Tornado": lab.measure(sweep.Config("tornado", 1), ["hello"])[0],
            "nginx + 2 Tornado": lab.measure(sweep.Config("tornado", 2), ["hello"])[0]}
    for label, cell in side.items():
        print(f"{label:36s} {cell.rps:9,.0f} req/s, D {cell.run.server_demand_ms:.3f} ms,"
              f" others took {cell.run.others_share:.0%}")
    verdicts = Counter(cell.verdict.kind for cell in judged.values())
    spread_read = [cell for cell in judged.values() if cell.run.connections_at_go]
    hits = [abs(cell.error) for cell in judged.values() if cell.verdict.kind == "predicted"]
    print(json.dumps({
        "cores": lab.cores,
        "runs": len(judged),
        "verdicts": dict(verdicts),
        "worst_predicted_error": max(hits, default=math.nan),
        # The figure: predictions within 10% of the run, per kind of experiment.
        "within_10_percent": {
            part: f"{sum(abs(c.error) <= 0.10 for c in cells)}/{len(cells)}" for part, cells in parts.items()
        },
        # gthread with several workers: predicted from the spread of connections read before each run.
        "spread_read_first_within_10_percent": f"{sum(abs(c.error) <= 0.10 for c in spread_read)}/{len(spread_read)}",
        "largest_miss": max((abs(c.error) for c in judged.values()), default=math.nan),
        "usl": {"sigma": fit.sigma, "kappa": fit.kappa, "lambda": fit.lam, "fitted_workers": knee_workers,
                "noise": noise, "peak_range": list(peak_range), "peak_workers": peak_workers,
                "peak_rps": peak_rps, "checked_rps": check.rps, "checked_error": check.rps / peak_rps - 1,
                "checked_others_share": check.run.others_share},
        "side_by_side": {label: {"rps": cell.rps, "demand_ms": cell.run.server_demand_ms} for label, cell in side.items()},
        "seconds": time.monotonic() - began,
    }))


if __name__ == "__main__":
    main()
