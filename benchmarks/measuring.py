"""Lesson 09's figures to reach: the open loop's p99 under a real stall against its prediction, and open vs closed curves.

A Tornado server is stopped (SIGSTOP) for --stall s a quarter into a --duration s
run at --rate req/s, measured by the lab's closed loop (--users users), wrk (the
same users as connections, paced) and the lab's open loop. Then one handler
burning --cpu-ms of CPU is loaded open (Poisson) and closed (users thinking 50 ms)
at shares of 1/D, D measured first. Every prediction is made from the same run's
figures (the stall as measured, D, the calm latency). Unless --no-one-cpu, it
all runs again under `taskset -c 0` (the client and the server on one CPU). The
last line printed is JSON.

    .venv/bin/python benchmarks/measuring.py [--rate 200] [--duration 20] [--stall 1] [--users 10] [--no-one-cpu]
"""

import argparse
import json
import math
import shutil
import subprocess
import sys

from iolab import environment, metrics, servers
from iolab.lessons.measuring import open_closed, stall_runs

LOADS = (0.2, 0.4, 0.6, 0.8, 1.3)
P99_WITHIN = 0.2  # the open loop's p99 within 20% of its prediction
CLOSED_UNDER = 0.1  # the closed loop's p99 under a tenth of the open loop's


def stall_figures(args):
    with servers.serve("tornado_app") as server:
        closed = stall_runs.closed_loop(server, args.rate, args.users, args.duration, args.stall)
        wrk = stall_runs.wrk_run(server, args.rate, args.users, args.duration, args.stall)
        opened = stall_runs.open_loop(server, args.rate, args.duration, args.stall)
    shared = environment.usable_cores() < 2
    drain_s = (opened.summary.demand_ms + (opened.summary.client_demand_ms if shared else 0.0)) / 1000
    predicted = stall_runs.predicted_open_ms(0.99, opened.stall_s, args.duration, args.rate, drain_s, opened.calm_p99_ms)
    corrected = metrics.percentile(stall_runs.corrected(closed, args.users / closed.rate_rps * 1000), 0.99)
    open_p99, closed_p99 = opened.percentile_ms(0.99), closed.percentile_ms(0.99)
    return {
        "stall_s": round(opened.stall_s, 4),
        "open_p99_ms": round(open_p99, 2),
        "predicted_open_p99_ms": round(predicted, 2),
        "open_over_predicted": round(open_p99 / predicted, 3),
        "closed_p99_ms": round(closed_p99, 2),
        "closed_over_open": round(closed_p99 / open_p99, 4),
        "corrected_p99_ms": round(corrected, 2),
        "wrk_p99_ms": None if isinstance(wrk, str) else round(wrk.percentile_ms(0.99), 2),
        "server_demand_ms": round(opened.summary.demand_ms, 3),
        "client_demand_ms": round(opened.summary.client_demand_ms, 3),
        "open_within_20_percent": abs(open_p99 / predicted - 1) <= P99_WITHIN,
        "closed_under_a_tenth": closed_p99 < CLOSED_UNDER * open_p99,
    }


def curve_figures(args):
    path = f"/cpu?ms={args.cpu_ms}"
    rows = []
    with servers.serve("tornado_app") as server:
        nominal_s, _ = open_closed.calibrate(server, path, 2.0)
        for share in LOADS:
            point = open_closed.run_point(server, path, share, nominal_s, args.point_s)
            low, high = point.band_open_ms
            first, last = open_closed.growth(point.open_points, args.point_s)
            rows.append({
                **{key: round(value, 3) for key, value in point.row().items()},
                "open_band_ms": [round(low, 3), round(high, 3) if math.isfinite(high) else None],
                "open_in_band": bool(low - 3 * point.noise_open_ms <= point.open.mean_ms
                                     <= high + 3 * point.noise_open_ms),
                "closed_over_predicted": round(point.closed.mean_ms / point.predicted_closed_ms, 3),
                "open_first_third_ms": round(first, 2), "open_last_third_ms": round(last, 2),
            })
    past = max(rows, key=lambda row: row["load"])
    return {
        "demand_ms": round(nominal_s * 1000, 3),
        "points": rows,
        "below_0_8_in_band": all(row["open_in_band"] for row in rows if row["load"] <= 0.8),
        "open_grows_past_1_over_d": past["open_last_third_ms"] > 2 * past["open_first_third_ms"],
    }


def measure(args):
    figures = {"cores": environment.usable_cores(), "stall": stall_figures(args), "open_vs_closed": curve_figures(args)}
    s = figures["stall"]
    print(f"[{figures['cores']} CPU] stall {s['stall_s']:.3f} s in {args.duration} s at {args.rate:g} req/s:"
          f" open p99 {s['open_p99_ms']:.0f} ms vs predicted {s['predicted_open_p99_ms']:.0f} ms"
          f" (x{s['open_over_predicted']}); closed p99 {s['closed_p99_ms']:.2f} ms (x{s['closed_over_open']} of open);"
          f" corrected {s['corrected_p99_ms']:.0f} ms; wrk {s['wrk_p99_ms']} ms")
    for row in figures["open_vs_closed"]["points"]:
        print(f"  load {row['load']}: open {row['open_ms']:.2f} ms (M/D/1 {row['predicted_open_ms']:.2f},"
              f" band {row['open_band_ms']}), closed {row['closed_ms']:.2f} ms (MVA {row['predicted_closed_ms']:.2f});"
              f" open latency by thirds {row['open_first_third_ms']} -> {row['open_last_third_ms']} ms")
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--stall", type=float, default=1.0)
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--cpu-ms", type=int, default=4)
    parser.add_argument("--point-s", type=float, default=4.0)
    parser.add_argument("--no-one-cpu", action="store_true", help="skip the second pass under taskset -c 0")
    args = parser.parse_args()

    figures = {"all_cpus": measure(args)}
    if not args.no_one_cpu and shutil.which("taskset"):
        inner = [sys.executable, __file__, "--no-one-cpu", "--rate", str(args.rate), "--duration", str(args.duration),
                 "--stall", str(args.stall), "--users", str(args.users), "--cpu-ms", str(args.cpu_ms),
                 "--point-s", str(args.point_s)]
        done = subprocess.run(["taskset", "-c", "0", *inner], capture_output=True, text=True, timeout=900)
        print(done.stdout.strip().rsplit("\n", 1)[0])
        if done.returncode:
            print(done.stderr[-2000:], file=sys.stderr)
        figures["one_cpu"] = json.loads(done.stdout.strip().splitlines()[-1])["all_cpus"] if done.returncode == 0 else None
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
