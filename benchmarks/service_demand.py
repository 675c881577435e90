"""Service demand D (server CPU per request) of the lab's servers, from their CPU counters, lightly loaded and saturated."""

import argparse
import json
import os

from iolab import load, metrics, servers

SERVERS = ("tornado_app", "threaded_app", "step4_event_loop")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--servers", nargs="+", default=list(SERVERS))
    parser.add_argument("--requests", type=int, default=4000, help="requests of the saturated run")
    parser.add_argument("--users", type=int, default=20, help="users of the saturated run")
    parser.add_argument("--client", default="raw", choices=load.CLIENTS)
    args = parser.parse_args()
    figures = {}
    for name in args.servers:
        figures[name] = {}
        with servers.serve(name) as server:
            for label, users, requests in (("one user", 1, 200), ("saturated", args.users, args.requests)):
                summary = metrics.summarize(load.run_load(
                    f"{server.url}/", server=server, requests=requests, concurrency=users, kind=f"closed_{args.client}",
                ))
                figures[name][label] = {
                    "rps": summary.rps, "demand_ms": summary.demand_ms, "utilization": summary.utilization,
                    "queued_ms": summary.queued_ms, "client_demand_ms": summary.client_demand_ms, "errors": summary.errors,
                }
                print(f"{name:>13} {label:>9}: D = {summary.demand_ms:.3f} ms, U = {summary.utilization:.2f},"
                      f" {summary.rps:8.0f} req/s (1 / D = {1000 / summary.demand_ms:8.0f}),"
                      f" queued {summary.queued_ms:.3f} ms, client {summary.client_demand_ms:.3f} ms", flush=True)
    print(json.dumps({"cpus": len(os.sched_getaffinity(0)), "client": args.client, "servers": figures}))


if __name__ == "__main__":
    main()
