"""Lesson 10 at full size: every backend run's throughput against the bottleneck law, the queue's slope, and the stack's RSS.

It runs the lesson's own experiment (iolab.lessons.backend.experiment), every run the notebook makes, in its order
and at its default sizes unless given others. Run under the shared lock (flock /tmp/iolab-measure.lock ...).
Binder gives a container one CPU as a quota, not a pinned core: `make binder-like LESSONS=10` runs the lesson under
that limit (a 1-CPU quota, 2 GB).
"""

import argparse
import json
import time

from iolab import servers
from iolab.lessons.backend import experiment, parameters, stack


def counts(text):
    return [int(part) for part in text.split(",")]


def print_row(row):
    if row.how in ("hello", "forget"):  # CPU-bound: the utilization law's bound is the prediction
        print(f"{row.test:6} {row.front_end:16} measured {row.rps:9.1f}  bound min(W, cores) / D {row.bound_rps:9.1f}"
              f"  {row.bottleneck}", flush=True)
        return
    print(f"{row.test:6} {row.front_end:16} {row.how:5} N={row.users:<3} predicted {row.predicted_rps:7.2f}"
          f"  measured {row.rps:7.2f} ({row.off:+.1%})  pessimistic {row.low_rps:7.2f}  bound {row.bound_rps:7.2f}"
          f"  {row.bottleneck}", flush=True)


def parse(defaults):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--task-ms", type=int, default=defaults.task_ms)
    parser.add_argument("--users", type=int, default=defaults.users)
    parser.add_argument("--requests", type=int, default=defaults.blocking_requests, help="per blocking run")
    parser.add_argument("--article-workers", type=int, default=defaults.article_workers)
    parser.add_argument("--sweep-workers", type=int, default=defaults.sweep_workers)
    parser.add_argument("--sweep-users", type=int, default=defaults.sweep_users)
    parser.add_argument("--sweep-requests", type=int, default=defaults.sweep_requests)
    parser.add_argument("--threads", type=counts, default=defaults.sweep_threads, help="the sweep's k, comma-separated")
    parser.add_argument("--queue-workers", type=int, default=defaults.queue_workers)
    parser.add_argument("--arrival-rps", type=int, default=defaults.arrival_rps)
    parser.add_argument("--queue-seconds", type=int, default=defaults.queue_seconds)
    parser.add_argument("--no-faults", action="store_true", help="skip killing the worker pool and Redis")
    parser.add_argument("--quick", action="store_true", help="the notebook's quick sizes (the memory cap's run skipped)")
    return parser.parse_args()


def main():
    args = parse(parameters.Plan())
    plan = parameters.Plan(
        task_ms=args.task_ms, users=args.users, blocking_requests=args.requests, article_workers=args.article_workers,
        sweep_workers=args.sweep_workers, sweep_users=args.sweep_users, sweep_requests=args.sweep_requests,
        sweep_threads=args.threads, queue_workers=args.queue_workers, arrival_rps=args.arrival_rps,
        queue_seconds=args.queue_seconds, run_faults=not args.no_faults,
    ).check()
    if args.quick:
        plan = plan.quick_sizes()
    missing = stack.missing()
    if missing:
        print(json.dumps({"skipped": missing}))
        return
    began = time.monotonic()
    lab = experiment.Lab(plan)
    lab.start()
    figures = {}
    try:
        for row in lab.hello():
            print_row(row)
        planned = lab.plan_waits()
        print(f"worker slot T_w = {planned[0].slot_s * 1000:.1f} ms for T = {plan.task_ms} ms", flush=True)
        for row in lab.waits(planned):
            print_row(row)
        sweep = lab.thread_sweep()
        for row in sweep.rows + [sweep.await_row]:
            print_row(row)
        waits = {row.front_end: row for row in lab.wait_rows}
        for row in lab.forget():
            print_row(row)
            figures[f"forget_over_wait_{row.front_end}"] = row.rps / waits[row.front_end].rps
        with lab.queue_growth() as growth:
            queue = growth.run()
        slope = queue.measured_slope()
        lowest, highest = queue.slope_bounds(plan.task_s)
        print(f"queue slope: measured {slope:.2f}/s, predicted λ − c/T_w = {queue.predicted_slope:.2f}/s"
              f" ({slope / queue.predicted_slope - 1:+.1%}), the law allows {lowest:.2f} to {highest:.2f};"
              f" {lab.bytes_per_task:.0f} bytes of Redis per task", flush=True)
        if not plan.quick:
            with lab.memory_cap() as filling:
                cap = filling.run()
            fewest, most = cap.held_bounds()
            print(f"memory cap {plan.cap_mb} MB: Redis held {cap.held} tasks, predicted {cap.predicted_tasks:.0f},"
                  f" its own readings {fewest:.0f} to {most:.0f}; {cap.reason}", flush=True)
        bounded = lab.bounded_queue()
        print(f"bounded queue: {bounded.statuses()}, longest {max(n for _, n in bounded.points)}"
              f" (limit {plan.queue_limit})", flush=True)
        if plan.run_faults:
            for fault in (lab.kill_worker(), lab.kill_redis()):
                print(f"{fault.what} killed: {fault.counts()} in {fault.took_s:.1f} s; left {fault.left}", flush=True)
    finally:
        lab.stop()
        servers.stop_all()
    total = sum(lab.rss.values())
    print("RSS (MB): " + ", ".join(f"{k} {v:.0f}" for k, v in lab.rss.items()) + f"; total {total:.0f}")
    figures.update(lab.results())
    figures["queue_slope"].update(off=slope / queue.predicted_slope - 1, bytes_per_task=lab.bytes_per_task,
                                  lowest=lowest, highest=highest)
    figures["rss_total_mb"] = total
    blocking_rows = [row for row in lab.rows() if row.how not in ("hello", "forget")]
    figures["worst_prediction_off"] = max(abs(row.off) for row in blocking_rows)
    figures["rows"] = [row.as_dict() for row in lab.rows()]
    figures["seconds"] = time.monotonic() - began
    print(json.dumps(figures, default=str))


if __name__ == "__main__":
    main()
