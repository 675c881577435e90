"""Lesson 02's concurrency sweep on tornado_app.

Measured throughput against users, the bounds, and the knee predicted from D.
"""

import argparse
import json

from iolab import load, servers
from iolab.lessons.sync_async import sweep


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delay-ms", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=10, help="requests per user at each population")
    parser.add_argument("--most", type=int, default=200, help="the largest population")
    parser.add_argument("--points", type=int, default=9)
    parser.add_argument("--client", default="async", choices=load.CLIENTS)
    parser.add_argument("--server", default="tornado_app")
    args = parser.parse_args()

    def report(point):
        s, p = point.summary, point.prediction
        print(f"  N={s.concurrency:4d}: {s.rps:8.1f} req/s (in step {p.in_step_rps:8.1f}, bounds {p.low_rps:8.1f} .."
              f" {p.high_rps:8.1f}) mean {s.mean_ms:7.1f} ms, D {s.demand_ms:.3f} ms, queued {s.queued_ms:.3f} ms,"
              f" U {s.utilization:.2f}", flush=True)

    with servers.serve(args.server) as server:
        # A short look at the busy server first, for the populations: its knee is (Z + D) / D.
        probe = sweep.measure(server, "async", [1, args.most], args.delay_ms, rounds=3, client=args.client)
        users = sweep.users_to_try(probe.knee_predicted(), most=args.most, points=args.points)
        print(f"async, {args.delay_ms} ms waits; users {users}")
        measured = sweep.measure(server, "async", users, args.delay_ms, rounds=args.rounds, client=args.client,
                                 on_point=report)
    predicted, bent = measured.knee_predicted(), measured.knee_measured()
    summary = {
        "delay_ms": args.delay_ms, "client": args.client, "server": args.server, "users": users,
        "rps": [point.summary.rps for point in measured.points],
        "demand_ms_busiest": measured.demand_s() * 1000, "queued_ms_busiest": measured.queued_s() * 1000,
        "path_ms_lone": measured.path_s() * 1000, "cores": measured.busiest.summary.cores,
        "knee_predicted": predicted, "knee_measured": bent, "knee_off": bent / predicted - 1,
    }
    print(f"knee predicted from D: {predicted:.1f} users;"
          f" where the measured curve bends: {bent:.1f} ({bent / predicted - 1:+.1%})")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
