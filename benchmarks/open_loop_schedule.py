"""How well the open-loop client keeps its schedule.

Each request's actual send minus its intended send, at a fixed rate.

Against `/` on step4_event_loop (the hand-built server), which answers a request in
well under the 1 ms between sends, so no request waits for a free connection
and every bit of lateness is the client's own: its timer, its thread handing the
send to the event loop, and the machine's scheduling. The last line printed is
JSON: {"lag_p99_ms": ..., "within_1_ms_at_p99": ...}.

    .venv/bin/python benchmarks/open_loop_schedule.py [--rate 1000] [--requests 10000] [--schedule fixed] [--event-loop auto]
"""

import argparse
import json

from iolab import load, metrics, servers
from iolab.clients import kinds

TARGET_MS = 1.0  # sends within 1 ms of their intended time, at the 99th percentile


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="step4_event_loop")
    parser.add_argument("--rate", type=float, default=1000.0, help="requests per second (default 1000)")
    parser.add_argument("--requests", type=int, default=10_000, help="requests in the run (default 10000: 10 s)")
    parser.add_argument("--connections", type=int, default=20, help="the most requests outstanding (default 20)")
    parser.add_argument("--schedule", choices=kinds.SCHEDULES, default="fixed")
    parser.add_argument("--event-loop", choices=("auto", "uvloop", "asyncio"), default="auto")
    args = parser.parse_args()

    with servers.serve(args.server) as server:
        result = load.run_load(
            server.url + "/", kind="open", rate_rps=args.rate, requests=args.requests, concurrency=args.connections,
            schedule=args.schedule, seed=1, event_loop=args.event_loop, timeout_s=10,
            max_duration_s=args.requests / args.rate + 10, record="samples",
        )
        server.check()
    lags_ms = sorted(sample.send_lag * 1000 for sample in result.samples)
    summary = metrics.summarize(result)
    # If the server ever held every connection (a stall), requests then waited for one: that lag is the server's.
    _, in_flight = metrics.in_flight_over_time(result.samples, step_s=0.0005)
    figures = {
        "server": args.server, "rate_rps": args.rate, "schedule": args.schedule, "event_loop": args.event_loop,
        "requests": len(result.samples), "errors": summary.errors,
        "achieved_rps": round(summary.rps, 1),
        "lag_p50_ms": round(metrics.percentile(lags_ms, 0.50), 3),
        "lag_p99_ms": round(metrics.percentile(lags_ms, 0.99), 3),
        "lag_p999_ms": round(metrics.percentile(lags_ms, 0.999), 3),
        "lag_max_ms": round(lags_ms[-1], 3),
        "latency_p99_ms": round(summary.p99_ms, 3),
        "latency_from_intended_p99_ms": round(metrics.summarize(result, latency_from="intended").p99_ms, 3),
        "most_in_flight": max(in_flight), "connections": args.connections,
    }
    figures["within_1_ms_at_p99"] = figures["lag_p99_ms"] <= TARGET_MS
    print(f"{figures['requests']} requests at {args.rate:g}/s ({args.schedule}) on {args.server}: sent late by"
          f" p50 {figures['lag_p50_ms']} ms, p99 {figures['lag_p99_ms']} ms, p99.9 {figures['lag_p999_ms']} ms,"
          f" max {figures['lag_max_ms']} ms; {summary.errors} errors; at most {max(in_flight)} of"
          f" {args.connections} connections busy" + (" (all: the server stalled, and sends waited)"
                                                     if max(in_flight) >= args.connections else ""))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
