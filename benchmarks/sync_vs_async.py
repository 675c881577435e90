"""The article's experiment at full size: throughput of /sync-sleep and /async-sleep against Little's bounds."""

import argparse
import json

from iolab import load, metrics, servers


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=40)
    parser.add_argument("--delay-ms", type=int, default=1000)
    parser.add_argument("--client", default="async", choices=load.CLIENTS)
    parser.add_argument("--rounds", type=int, default=3, help="async rounds (the sync run is long, it runs once)")
    parser.add_argument("--skip-sync", action="store_true", help="skip the sync run (it takes requests x delay)")
    args = parser.parse_args()
    service_s = args.delay_ms / 1000
    bound = metrics.little_bound(args.concurrency, service_s)
    summary = {"requests": args.requests, "concurrency": args.concurrency, "delay_ms": args.delay_ms,
               "client": args.client, "bound_rps": bound}
    with servers.serve("tornado_app") as server:
        fractions = []
        for round_number in range(args.rounds):
            result = load.run_load(f"{server.url}/async-sleep?ms={args.delay_ms}", requests=args.requests,
                                   concurrency=args.concurrency, client=args.client, timeout_s=30)
            s = metrics.summarize(result)
            fractions.append(s.rps / bound)
            print(f"async round {round_number + 1}: {s.rps:.2f} req/s = {s.rps / bound:.2%} of {bound:g};"
                  f" mean {s.mean_ms:.0f} ms, p99 {s.p99_ms:.0f} ms, {s.errors} errors")
        summary["async_fraction_of_bound"] = {"min": min(fractions), "median": sorted(fractions)[len(fractions) // 2]}
        if not args.skip_sync:
            result = load.run_load(f"{server.url}/sync-sleep?ms={args.delay_ms}", requests=args.requests,
                                   concurrency=args.concurrency, client=args.client,
                                   timeout_s=args.requests * service_s + 30, max_duration_s=args.requests * service_s * 2)
            s = metrics.summarize(result)
            sync_bound = metrics.little_bound(args.concurrency, service_s, workers=1)
            print(f"sync: {s.rps:.3f} req/s = {s.rps / sync_bound:.2%} of {sync_bound:g}; mean {s.mean_ms:.0f} ms,"
                  f" ab's time per request {s.ab_time_per_request_ms:.0f} ms, {s.errors} errors")
            summary["sync_rps"] = s.rps
            summary["sync_fraction_of_one_per_service_time"] = s.rps / sync_bound
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
