"""Ten thousand idle connections held on each of lesson 07's servers.

Ten thousand idle connections held at once on each of lesson 07's servers: memory per connection,
fresh latency, time to open them.

Each server holds --connections (default 10,000) idle keep-alive connections,
opened in one go from none, while one more connection times
--fresh-requests requests one after another. The figures to reach: the event
loops (tornado_app, step4_event_loop, the raw asyncio server) hold them all with a
fresh p99 under 20 ms and at most 16 KiB of RSS per connection; the holding
client opens them within 10 s; the thread server's figures beside them. The
last line printed is JSON: {"servers": {label: {...}}, "client_open_s": ..., "goals": {...}}.

    .venv/bin/python benchmarks/c10k.py [--connections 10000] [--fresh-requests 500] [--servers tornado_app,step4_event_loop,...]
        [--selectors]
"""

import argparse
import json
import sys

from iolab import environment, servers
from iolab.lessons.c10k import holding, limits, lineup

GOALS = {"fresh_p99_ms": 20.0, "kb_per_connection": 16.0, "open_s": 10.0}


def measure(label, name, options, connections, fresh_requests):
    with servers.serve(name, **options) as server:
        # One step from none to all, so accept_s is the time to open every one of them.
        result = holding.hold(server, [connections], fresh_requests=fresh_requests, label=label)
        if result.last.limit != limits.DIED:  # select() past FD_SETSIZE dies, and the run says so
            server.check()
    step = result.last
    return {
        **step.row(),
        "vsz_kb_per_connection": round(step.vsz_kb_per_connection or 0, 1),
        "kernel_kb_per_connection": round(step.kernel_kb_per_connection or 0, 2),
        "kernel_stack_kb_per_connection": round(step.kernel_stack_kb_per_connection or 0, 2),
        "message": step.message,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=10_000, help="connections held at once (default 10000)")
    parser.add_argument("--fresh-requests", type=int, default=500, help="fresh requests timed at each step")
    parser.add_argument("--servers", default=",".join(lineup.servers()), help="labels from lesson 07's lineup")
    parser.add_argument("--selectors", action="store_true",
                        help="also the hand-built loop waiting in poll() and select() (which stops at FD_SETSIZE)")
    args = parser.parse_args()
    if not 100 <= args.connections <= holding.MAX_CONNECTIONS:
        parser.error(f"--connections must be from 100 to {holding.MAX_CONNECTIONS}, got {args.connections}")
    lineup_servers = lineup.servers()
    wanted = [label.strip() for label in args.servers.split(",") if label.strip()]
    unknown = [label for label in wanted if label not in lineup_servers]
    if unknown:
        parser.error(f"--servers: unknown {unknown}; choose from {list(lineup_servers)}")
    soft, hard = environment.raise_file_limit()
    print(f"RLIMIT_NOFILE {soft}/{hard}; {args.connections:,} connections per server", file=sys.stderr)

    if args.selectors:
        for selector in ("poll", "select"):
            name, options = lineup_servers["step4_event_loop"]
            label = f"step4_event_loop on {selector}"
            lineup_servers[label] = (name, {**options, "selector": selector})
            wanted.append(label)
    figures = {}
    for label in wanted:
        name, options = lineup_servers[label]
        reason = lineup.missing(name)
        if reason:
            print(f"{label}: skipped, {reason}", file=sys.stderr)
            continue
        figures[label] = row = measure(label, name, options, args.connections, args.fresh_requests)
        print(f"{label:28} held {row['connections']:6,}  accept {row['accept_s']:6.2f} s  RSS {row['rss_mb']:7.1f} MiB"
              f"  {row['kb_per_connection']:6.1f} KiB/conn  threads {row['threads']:6,}"
              f"  fresh p50 {row['fresh_p50_ms'] or 0:6.2f} p99 {row['fresh_p99_ms'] or 0:6.2f} ms"
              + (f"  {row['limit']}" if row["limit"] else ""), file=sys.stderr)

    # The goals are epoll's (and kqueue's): poll() and select() are there to be compared, not to pass.
    event_loops = {label: row for label, row in figures.items() if lineup.is_event_loop(label) and " on " not in label}
    held_all = {label: row for label, row in figures.items() if row["connections"] >= args.connections}
    client_open_s = min((row["accept_s"] for row in held_all.values()), default=None)
    goals = {
        "event_loops_hold_all": bool(event_loops) and all(label in held_all for label in event_loops),
        "fresh_p99_under_20_ms": all((row["fresh_p99_ms"] or 1e9) < GOALS["fresh_p99_ms"] for row in event_loops.values()),
        "at_most_16_kib": all(0 < row["kb_per_connection"] <= GOALS["kb_per_connection"] for row in event_loops.values()),
        "client_opens_within_10_s": client_open_s is not None and client_open_s <= GOALS["open_s"],
    }
    print(json.dumps({"connections": args.connections, "servers": figures, "client_open_s": client_open_s,
                      "goals": goals}))


if __name__ == "__main__":
    main()
