"""Lesson 10 at full size: every backend run's throughput against the bottleneck law, the queue's slope, and the stack's RSS.

Run under the shared lock (flock /tmp/iolab-measure.lock ...). Binder gives a container one CPU as a quota, not
a pinned core: `make binder-like LESSONS=10` runs the lesson under that limit (a 1-CPU quota, 2 GB).
"""

import argparse
import json
import time

from iolab import servers
from iolab.lessons.backend import runs, stack


def counts(text):
    return [int(part) for part in text.split(",")]


def blocking(backend, name, how, options, users, requests, task_ms, front_servers, workers, slot):
    with backend.front(name, timeout_ms=30000, **options) as front:
        trip = runs.trip_s(front, how, task_ms)
        tiers = runs.Tiers(users, front_servers, workers, front_threads=how == "pool")
        run = runs.start_blocking(front, how, users, requests, task_ms, tiers, trip, slot)
        try:
            row = runs.blocking_row(f"{name} {how}", front, how, run.wait(), task_ms, tiers, trip, slot)
        finally:
            run.stop()
    print(f"{row.test:34} k/W={str(front_servers):>4} c={workers}  predicted {row.predicted_rps:7.2f}"
          f"  measured {row.rps:7.2f}  ({row.off:+.1%})  bound {row.bound_rps:7.2f}  {row.bottleneck}", flush=True)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--task-ms", type=int, default=200)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--article-workers", type=int, default=1)
    parser.add_argument("--sweep-workers", type=int, default=4)
    parser.add_argument("--threads", type=counts, default=[1, 2, 4, 8])
    parser.add_argument("--queue-workers", type=int, default=2)
    parser.add_argument("--arrival-rps", type=float, default=50)
    parser.add_argument("--queue-seconds", type=float, default=8)
    args = parser.parse_args()
    missing = stack.missing()
    if missing:
        print(json.dumps({"skipped": missing}))
        return
    began = time.monotonic()
    backend = stack.Backend(args.article_workers)
    rows, figures = [], {}
    try:
        with backend.front("tornado_backend") as front:
            slot = runs.trip_s(front, "await", args.task_ms)
        print(f"worker slot T_w = {slot * 1000:.1f} ms for T = {args.task_ms} ms", flush=True)
        for name, how, options, front_servers in (
            ("tornado_backend", "wait", {}, 1), ("gevent_flask", "wait", {}, None),
            ("gunicorn_flask", "wait", {"workers": 3}, 3),
        ):
            rows.append(blocking(backend, name, how, options, args.users, args.requests, args.task_ms, front_servers,
                                 args.article_workers, slot))
        backend.start_worker(args.sweep_workers)
        with backend.front("tornado_backend") as front:
            slot = runs.trip_s(front, "await", args.task_ms)
        for k in args.threads:
            rows.append(blocking(backend, "tornado_backend", "pool", {"threads": k}, 16, 40, args.task_ms, k,
                                 args.sweep_workers, slot))
        rows.append(blocking(backend, "tornado_backend", "await", {}, 16, 40, args.task_ms, None, args.sweep_workers, slot))
        for name in ("tornado_backend", "gevent_flask"):
            with backend.front(name) as front:
                run = runs.start_cpu_bound(front, f"/backend?ms={args.task_ms}&how=forget", 50, 2000)
                try:
                    row = runs.cpu_bound_row("forget", front, "forget", run.wait(), 1)
                finally:
                    run.stop()
            waited = next(r for r in rows if r.test == f"{name} wait")
            figures[f"forget_over_wait_{name}"] = row.rps / waited.rps
            print(f"{name} forget: {row.rps:.1f} req/s (bound 1/D {row.bound_rps:.1f}, {row.bottleneck});"
                  f" {row.rps / waited.rps:.1f} x its blocking run", flush=True)
            rows.append(row)
            backend.flush()
        backend.start_worker(args.queue_workers)
        with backend.front("tornado_backend") as front:
            slot = runs.trip_s(front, "await", args.task_ms)
            drain = args.queue_workers / slot
            watch = stack.QueueWatch(backend).start()
            run = runs.start_open_loop(front, args.arrival_rps, args.queue_seconds, args.task_ms)
            try:
                result = run.wait()
            finally:
                run.stop()
            time.sleep(0.3)
            watch.stop()
            queue = runs.QueueRun(args.arrival_rps, drain, watch.points, result)
            figures["rss_mb"] = backend.rss_mb(front)
        slope = queue.measured_slope()
        figures["queue_slope"] = {"measured": slope, "predicted": queue.predicted_slope,
                                  "off": slope / queue.predicted_slope - 1, "bytes_per_task": watch.bytes_per_task()}
        print(f"queue slope: measured {slope:.2f}/s, predicted λ − c/T_w = {queue.predicted_slope:.2f}/s"
              f" ({slope / queue.predicted_slope - 1:+.1%}); {watch.bytes_per_task():.0f} bytes of Redis per task")
        total = sum(figures["rss_mb"].values())
        print("RSS (MB): " + ", ".join(f"{k} {v:.0f}" for k, v in figures["rss_mb"].items()) + f"; total {total:.0f}")
        figures["rss_total_mb"] = total
    finally:
        backend.stop()
        servers.stop_all()
    blocking_rows = [r for r in rows if r.how != "forget"]
    figures["worst_prediction_off"] = max(abs(r.off) for r in blocking_rows)
    figures["rows"] = [r.as_dict() for r in rows]
    figures["seconds"] = time.monotonic() - began
    print(json.dumps(figures, default=str))


if __name__ == "__main__":
    main()
