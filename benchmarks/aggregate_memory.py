"""Aggregated recording keeps memory flat.

The client processes' RSS through a ten-million-request run.

Against nginx_hello when nginx is installed (else step4_event_loop), a run recorded
in aggregate (counts per time bin and latency histograms), bounded by a
duration. Every 0.25 s it reads the resident memory of each client process and
of this process (the parent, which folds the rows into the aggregate). The last
line printed is JSON: {"peak_client_rss_mb": ..., "under_200_mb": ...}.

    .venv/bin/python benchmarks/aggregate_memory.py [--requests 10000000] [--max-duration 600] [--loop pipelined]
"""

import argparse
import json
import threading
import time

import psutil

from iolab import load, metrics, registry, servers

LIMIT_MB = 200
MB = 2**20


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000_000)
    parser.add_argument("--max-duration", type=float, default=600.0, help="seconds the run may take at most")
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--loop", choices=("closed", "pipelined"), default="pipelined",
                        help="pipelined (depth --depth) reaches ten million sooner; closed is one request at a time")
    parser.add_argument("--depth", type=int, default=16)
    parser.add_argument("--server", default=None, help="default: nginx_hello if installed, else step4_event_loop")
    args = parser.parse_args()
    name = args.server or ("nginx_hello" if registry.get("nginx_hello").missing() is None else "step4_event_loop")
    shape = {"kind": "closed_raw"} | ({"kind": "pipelined", "pipeline_depth": args.depth} if args.loop == "pipelined" else {})

    parent = psutil.Process()
    parent_before = parent.memory_info().rss
    with servers.serve(name) as server:
        run = load.start_load(
            server.url + "/", requests=args.requests, concurrency=args.connections, processes=args.processes,
            max_duration_s=args.max_duration, timeout_s=10, record="aggregate", **shape,
        )
        peaks = {process.pid: 0 for process in run.processes}
        parent_peak = parent_before
        watched = [psutil.Process(process.pid) for process in run.processes]
        done = threading.Event()

        def watch():
            nonlocal parent_peak
            while not done.wait(0.25):
                for process in watched:
                    try:
                        peaks[process.pid] = max(peaks[process.pid], process.memory_info().rss)
                    except psutil.NoSuchProcess:
                        pass
                parent_peak = max(parent_peak, parent.memory_info().rss)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        began = time.monotonic()
        result = run.wait()
        done.set()
        watcher.join()
        server.check()
    summary = metrics.summarize(result)
    figures = {
        "server": name, "loop": args.loop, "depth": args.depth if args.loop == "pipelined" else None,
        "connections": args.connections, "processes": args.processes,
        "requests": result.completed, "errors": summary.errors, "duration_s": round(result.duration_s, 1),
        "wall_s": round(time.monotonic() - began, 1), "rps": round(summary.rps),
        "p50_ms": round(summary.p50_ms, 3), "p99_ms": round(summary.p99_ms, 3),
        "peak_client_rss_mb": round(max(peaks.values()) / MB, 1),
        "peak_clients_rss_total_mb": round(sum(peaks.values()) / MB, 1),
        "parent_rss_growth_mb": round((parent_peak - parent_before) / MB, 1),
        "stop_reason": result.stop_reason,
    }
    figures["under_200_mb"] = figures["peak_client_rss_mb"] < LIMIT_MB
    print(f"{result.completed:,} requests in {result.duration_s:.0f} s ({summary.rps:,.0f} req/s, {args.loop}) against"
          f" {name}: client RSS peaked at {figures['peak_client_rss_mb']} MB; the parent grew by"
          f" {figures['parent_rss_growth_mb']} MB")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
