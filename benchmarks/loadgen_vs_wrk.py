"""How close the lab's own client comes to wrk against the same server, connections and duration."""

import argparse
import json
import statistics

from iolab import benchtools, load, servers


def lab_rps(url, connections, duration_s, client):
    result = load.run_load(url, requests=1_000_000, concurrency=connections, client=client,
                           max_duration_s=duration_s, timeout_s=10)
    assert result.errors == 0, f"{result.errors} errors from the {client} client"
    return len(result.samples) / result.duration_s


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--server", default="tornado_app")
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per run")
    parser.add_argument("--rounds", type=int, default=3, help="alternating wrk / lab runs; medians are reported")
    parser.add_argument("--client", default="raw", choices=load.CLIENTS, help="the lab client compared with wrk")
    parser.add_argument("--also", default="async", help="another lab client to report beside it ('' for none)")
    args = parser.parse_args()

    missing = benchtools.missing_reason("wrk")
    figures = {"wrk": [], args.client: []} | ({args.also: []} if args.also else {})
    with servers.serve(args.server) as server:
        url = server.url + "/"
        for round_number in range(args.rounds):
            if not missing:
                report = benchtools.run_wrk(url, args.connections, round(args.duration), threads=1)
                figures["wrk"].append(report["rps"])
            for client in [args.client] + ([args.also] if args.also else []):
                figures[client].append(lab_rps(url, args.connections, args.duration, client))
            print(f"round {round_number + 1}: " + ", ".join(f"{k} {v[-1]:.0f} req/s" for k, v in figures.items() if v))
            server.check()
    medians = {name: statistics.median(values) for name, values in figures.items() if values}
    if missing:
        print(missing)
    lab, wrk = medians[args.client], medians.get("wrk")
    summary = {"server": args.server, "client": args.client, "connections": args.connections,
               "duration_s": args.duration, "lab_rps": round(lab, 1), "wrk_rps": wrk and round(wrk, 1),
               "ratio": wrk and round(lab / wrk, 3)}
    if args.also:
        summary[f"{args.also}_rps"] = round(medians[args.also], 1)
        summary[f"{args.also}_ratio"] = wrk and round(medians[args.also] / wrk, 3)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
