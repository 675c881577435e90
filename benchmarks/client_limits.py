"""Lesson 11's library limits, measured at full size.

Lesson 11's limits at full size: each library's limit predicted against the one its throughput reads back.

It runs the lesson's own fan-outs (iolab.lessons.client_side: section 1's four ways and section 2's libraries),
at the notebook's default sizes unless given others, `--repeat` times. Run it under the shared lock
(flock /tmp/iolab-measure.lock ...), on two cores, under `taskset -c 0` for one CPU, or beside a hog
(`--hog`). The last line is JSON: per library, its limit predicted and measured (the calls answered within 2T,
and X · T), the time predicted and measured, and whether both lay within the run's own bounds.
"""

import argparse
import asyncio
import json
import subprocess
import sys

from iolab import children
from iolab.lessons.client_side import fanout, limits, parameters

HOG = "while True: pass"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each library's limit (default 3)")
    parser.add_argument("--limit-ms", type=int, default=200, help="T of section 2, in ms (default 200)")
    parser.add_argument("--calls", type=int, default=40, help="n of section 1 (default 40)")
    parser.add_argument("--call-ms", type=int, default=200, help="T of section 1, in ms (default 200)")
    parser.add_argument("--repeat", type=int, default=1, help="how many times to run it all (default 1)")
    parser.add_argument("--hog", action="store_true", help="a CPU hog beside the runs")
    args = parser.parse_args()
    plan = parameters.Plan.from_cell(parameters.DEFAULTS | {"calls": args.calls, "call_ms": args.call_ms,
                                                            "limit_ms": args.limit_ms, "rounds": args.rounds})
    hog = children.spawn([sys.executable, "-c", HOG], stdout=subprocess.DEVNULL) if args.hog else None
    rows = []
    try:
        for repeat in range(args.repeat):
            for row in list(asyncio.run(fanout.run_all(plan)).values()) + limits.run_all(plan):
                rows.append(summary(row, repeat))
                print_row(rows[-1])
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    held = sum(row["within"] for row in rows)
    print(f"{held} of {len(rows)} fan-outs within their bounds", flush=True)
    print(json.dumps({"hog": args.hog, "plan": vars(args), "rows": rows}))
    return 0 if held == len(rows) else 1


def summary(row, repeat):
    return {"repeat": repeat, "how": row["how"], "limit_predicted": row["limit"],
            "limit_measured": row["answered_in_two_T"], "answered_in_T_and_work": row["answered_in_T_and_work"],
            "X_times_T": row["measured_rps"] * row["T_ms"] / 1000,
            "calls": row["calls"], "rounds": row["rounds"], "predicted_ms": row["predicted_s"] * 1000,
            "measured_ms": row["measured_s"] * 1000, "low_ms": row["low_s"] * 1000, "high_ms": row["high_s"] * 1000,
            "overhead_ms": row["overhead_ms"], "connections_opened": row.get("connections_opened"),
            "within": row["low_s"] <= row["measured_s"] <= row["high_s"]
            and row["answered_in_two_T"] <= min(row["limit"], row["calls"]) <= row["answered_in_T_and_work"]}


def print_row(row):
    print(f"{row['how']:28} P {row['limit_predicted']:3} read back {row['limit_measured']:3}"
          f" (within T + work {row['answered_in_T_and_work']:3}, X·T {row['X_times_T']:6.1f})"
          f"  {row['rounds']:2} rounds: predicted {row['predicted_ms']:7.0f} ms, measured {row['measured_ms']:7.0f}"
          f" in [{row['low_ms']:.0f}, {row['high_ms']:.0f}]  connections {row['connections_opened']}"
          f"  {'ok' if row['within'] else 'OUTSIDE'}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
