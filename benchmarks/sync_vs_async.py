"""The article's experiment at full size.

Throughput of /sync-sleep and /async-sleep against the bounds from the measured CPU.
"""

import argparse
import json

from iolab import load, metrics, servers
from iolab.lessons.sync_async import experiment


def report(measured):
    s, p = measured.summary, measured.prediction
    print(f"{measured.mode}: {s.rps:.3f} req/s; bounds {p.low_rps:.3f} .. {p.high_rps:.3f}"
          f" ({'in' if measured.in_band else 'OUT'}), users in step {p.in_step_rps:.3f} ({measured.off_in_step:+.1%});"
          f" naive bound {s.rps / naive(measured):.2%}; D {s.demand_ms:.3f} ms, mean {s.mean_ms:.0f} ms,"
          f" p99 {s.p99_ms:.0f} ms, ab's time per request {s.ab_time_per_request_ms:.0f} ms, {s.errors} errors", flush=True)
    return measured.row() | {"fraction_of_naive_bound": s.rps / naive(measured)}


def naive(measured):
    # The bound that leaves the CPU out: N / Z for the waiting handler, 1 / Z for the blocking one.
    return metrics.little_bound(measured.summary.concurrency, measured.delay_ms / 1000,
                                workers=1 if measured.mode == "sync" else None)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=40)
    parser.add_argument("--delay-ms", type=int, default=1000)
    parser.add_argument("--client", default="async", choices=load.CLIENTS)
    parser.add_argument("--rounds", type=int, default=3, help="async rounds (the sync run is long, it runs once)")
    parser.add_argument("--skip-sync", action="store_true", help="skip the sync run (it takes requests x delay)")
    args = parser.parse_args()
    summary = {"requests": args.requests, "concurrency": args.concurrency, "delay_ms": args.delay_ms,
               "client": args.client}
    with servers.serve("tornado_app") as server:
        rows = [report(experiment.run(server, "async", args.requests, args.concurrency, args.delay_ms, args.client))
                for _ in range(args.rounds)]
        if not args.skip_sync:
            rows.append(report(experiment.run(server, "sync", args.requests, args.concurrency, args.delay_ms, args.client)))
    asynchronous = [row for row in rows if row["mode"] == "async"]
    summary["async_worst_off_in_step"] = max(abs(row["off_in_step"]) for row in asynchronous)
    summary["async_fraction_of_naive_bound"] = sorted(row["fraction_of_naive_bound"] for row in asynchronous)
    summary["all_in_band"] = all(row["in_band"] for row in rows)
    summary["runs"] = [{key: row[key] for key in ("mode", "rps", "low_rps", "in_step_rps", "high_rps", "demand_ms")}
                       for row in rows]
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
