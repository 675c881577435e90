"""Hello-world throughput of step4_event_loop (on the scratch/ loop) against tornado_app.

The server built from scratch (lesson 05's step 4, on servers/scratch/) against
Tornado, with the lab's own load generator.

Both servers run for the whole benchmark. Runs alternate between them (and
alternate who goes first), with the same client, connections and request count,
so drift on a shared machine hits both alike. Each server's figure is the median
of its runs. The last line printed is JSON:
{"scratch_rps": ..., "tornado_rps": ..., "ratio": ...} (scratch_rps: step4_event_loop's).

    .venv/bin/python benchmarks/scratch_vs_tornado.py [--requests 20000] [--concurrency 20] [--repetitions 5] [--client raw]
"""

import argparse
import json
import statistics
import sys

from iolab import load, servers
from iolab.lessons.event_loop import probes as loop_probes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000, help="requests per run (default 20000)")
    parser.add_argument("--concurrency", type=int, default=20, help="connections per run (default 20)")
    parser.add_argument("--repetitions", type=int, default=5, help="runs per server (default 5)")
    parser.add_argument("--client", choices=load.CLIENTS, default="raw", help="the lab's client (default raw)")
    args = parser.parse_args()
    if not 1 <= args.repetitions <= 50:
        parser.error(f"--repetitions must be between 1 and 50, got {args.repetitions}")

    with servers.serve("step4_event_loop") as scratch, servers.serve("tornado_app") as tornado:
        urls = {"step4_event_loop": scratch.url + "/", "tornado_app": tornado.url + "/"}
        rps = loop_probes.alternating_rps(
            urls, requests=args.requests, concurrency=args.concurrency, repetitions=args.repetitions, client=args.client
        )
        scratch.check()
        tornado.check()
    for name, runs in rps.items():
        print(f"{name:14} " + "  ".join(f"{value:8.0f}" for value in runs) + f"   median {statistics.median(runs):8.0f} req/s",
              file=sys.stderr)
    scratch_rps = statistics.median(rps["step4_event_loop"])
    tornado_rps = statistics.median(rps["tornado_app"])
    print(f"{args.repetitions} alternating runs of {args.requests} requests, {args.concurrency} connections,"
          f" {args.client} client")
    print(json.dumps({"scratch_rps": round(scratch_rps, 1), "tornado_rps": round(tornado_rps, 1),
                      "ratio": round(scratch_rps / tornado_rps, 3)}))


if __name__ == "__main__":
    main()
