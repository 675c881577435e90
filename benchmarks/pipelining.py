"""Hello world pipelined 16 deep on pipeline_app, against the rest.

Hello world pipelined 16 deep on pipeline_app (uvloop, httptools, one write per batch), against the
same without pipelining and tornado.

Every run is wrk with the same connections, threads and duration; the pipelined
one sends each connection's requests in batches of --depth with a Lua script
(iolab.wrk_lua), the others one request at a time. Rounds alternate between the
three, so drift on a shared machine hits them alike; each figure is the median
of its rounds. For each: throughput (wrk's count), the server's CPU per request
D split into user (Python) and system (kernel, for its system calls) time, the
share of a core the server and wrk each used (which one was the limit), and,
from a separate shorter run under strace -c -f (tracing slows every call, so it
counts and never times), the server's system calls per request. The last line
printed is JSON.

Run it alone: flock /tmp/iolab-measure.lock .venv/bin/python benchmarks/pipelining.py
    [--connections 100] [--duration 5] [--rounds 3] [--depth 16] [--one-cpu]
    [--loop uvloop] [--parser httptools] [--write batched]
"""

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

from iolab import benchtools, servers, syscalls, wrk_lua

TIMEOUT_S = 10  # per request, as wrk counts it
TARGET_RPS = 1_000_000  # lesson 08's goal at depth 16 (Japronto's figure, on 8 vCPUs)
TARGET_SYSCALLS_PER_REQUEST = 0.2
SATURATED = 0.9  # a process using this share of a core or more is what limits the run
STRACE_DURATION_S = 2


def children_cpu_s():
    """CPU seconds of this process's finished children: wrk, once reaped."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def server_cpu(pid):
    times = psutil.Process(pid).cpu_times()
    return times.user, times.system


def run_wrk(url, depth, connections, duration_s, script_path):
    """wrk's report for one run: pipelined `depth` deep through the Lua script, or plain wrk at depth 1."""
    if depth > 1:
        return wrk_lua.run_pipelined(url, ["/"] * depth, connections, duration_s, script_path=script_path,
                                     timeout_s=TIMEOUT_S)
    return benchtools.run_wrk(url, connections, duration_s, timeout_s=TIMEOUT_S)


def measure(server, depth, connections, duration_s, script_path):
    """One timed run: requests per second, and the CPU the server and wrk spent on them."""
    user_before, system_before = server_cpu(server.pid)
    client_before = children_cpu_s()
    began = time.perf_counter()
    report = run_wrk(server.url + "/", depth, connections, duration_s, script_path)
    wall_s = time.perf_counter() - began
    user_after, system_after = server_cpu(server.pid)
    errors = report["socket_errors"] + report["non_2xx"]
    if errors:
        raise RuntimeError(f"{server.name}: wrk saw {errors} errors; the figures would not mean what they say")
    requests = report["requests"]
    return {
        "rps": report["rps"],
        "user_us": (user_after - user_before) / requests * 1e6,
        "system_us": (system_after - system_before) / requests * 1e6,
        "server_cpu_share": (user_after - user_before + system_after - system_before) / duration_s,
        "client_cpu_share": (children_cpu_s() - client_before) / wall_s,
    }


def count_syscalls(server, depth, connections, script_path):
    """System calls per request, all of them and writes alone, from a run under strace; None where strace cannot."""
    try:
        with syscalls.counting(server.pid) as counts:
            report = run_wrk(server.url + "/", depth, connections, STRACE_DURATION_S, script_path)
    except syscalls.SyscallCountUnavailable as error:
        print(f"syscalls not counted: {error}", file=sys.stderr)
        return None, None
    requests = report["requests"]
    return counts.total / requests, counts.of(syscalls.WRITES) / requests


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=100, help="wrk connections in every run (default 100)")
    parser.add_argument("--duration", type=int, default=5, help="seconds per run (default 5)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per server (default 3)")
    parser.add_argument("--depth", type=int, default=16, help="requests per batch in the pipelined run (default 16)")
    parser.add_argument("--one-cpu", action="store_true", help="pin everything (servers and wrk) to CPU 0")
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="uvloop")
    parser.add_argument("--parser", choices=["ours", "httptools"], default="httptools")
    parser.add_argument("--write", choices=["batched", "per-response"], default="batched")
    args = parser.parse_args()
    for name, value, low, high in (("connections", args.connections, 1, 1000), ("duration", args.duration, 1, 60),
                                   ("rounds", args.rounds, 1, 20), ("depth", args.depth, 2, 256)):
        if not low <= value <= high:
            parser.error(f"--{name} must be between {low} and {high}, got {value}")
    reason = benchtools.missing_reason("wrk")
    if reason:
        print(json.dumps({"skipped": reason}))
        return
    if args.one_cpu:
        os.sched_setaffinity(0, {0})  # every process started from here on inherits it

    variant = f"{args.loop} {args.parser} {args.write}"
    pipelining = {"loop": args.loop, "parser": args.parser, "write": args.write}
    runs = [  # (what the table calls it, depth, server, its options)
        (f"pipeline_app {variant}", args.depth, "pipeline_app", pipelining),
        (f"pipeline_app {variant}", 1, "pipeline_app", pipelining),
        ("tornado_app", 1, "tornado_app", {}),
    ]
    rounds = [[] for _ in runs]
    counted = []
    with tempfile.TemporaryDirectory() as scratch:
        script_path = Path(scratch) / "pipeline.lua"
        started = []
        try:
            for _, depth, name, options in runs:
                started.append(servers.start(name, **options))
                run_wrk(started[-1].url + "/", depth, args.connections, 1, script_path)  # warm-up
            for round_number in range(args.rounds):
                order = range(len(runs)) if round_number % 2 == 0 else reversed(range(len(runs)))
                for i in order:
                    label, depth = runs[i][:2]
                    rounds[i].append(measure(started[i], depth, args.connections, args.duration, script_path))
                    print(f"round {round_number + 1}: {label} depth {depth}: {rounds[i][-1]['rps']:.0f} req/s",
                          file=sys.stderr)
            for server, (_, depth, *_) in zip(started, runs):
                counted.append(count_syscalls(server, depth, args.connections, script_path))
                server.check()
        finally:
            for server in started:
                server.stop()

    results = []
    for (label, depth, *_), its_rounds, (per_request, writes_per_request) in zip(runs, rounds, counted):
        summary = {field: statistics.median(run[field] for run in its_rounds) for field in its_rounds[0]}
        summary["demand_us"] = summary["user_us"] + summary["system_us"]
        # The utilization law: one core busy D per request serves at most 1/D requests a second.
        summary["rps_one_core_could_serve"] = 1e6 / summary["demand_us"]
        results.append({"server": label, "depth": depth, **{key: round(value, 3) for key, value in summary.items()},
                        "syscalls_per_request": _rounded(per_request), "writes_per_request": _rounded(writes_per_request)})
    pipelined, unpipelined, tornado = results
    limit = ("the server (a core's worth of CPU)" if pipelined["server_cpu_share"] >= SATURATED
             else "wrk (a core's worth of CPU)" if pipelined["client_cpu_share"] >= SATURATED
             else "neither saturated a core: the machine is shared, or the connections are too few")

    print(f"wrk -t1 -c{args.connections} -d{args.duration}s, median of {args.rounds} alternating rounds"
          f"{', all on CPU 0' if args.one_cpu else ''}; {os.cpu_count()} CPUs")
    print(f"{'server':42} {'depth':>5} {'req/s':>10} {'D us':>6} {'user':>6} {'sys':>6} {'srv%':>5} {'wrk%':>5}"
          f" {'sysc/req':>8} {'wr/req':>7}")
    for row in results:
        print(f"{row['server']:42} {row['depth']:>5} {row['rps']:>10.0f} {row['demand_us']:>6.2f} {row['user_us']:>6.2f}"
              f" {row['system_us']:>6.2f} {row['server_cpu_share'] * 100:>5.0f} {row['client_cpu_share'] * 100:>5.0f}"
              f" {_shown(row['syscalls_per_request']):>8} {_shown(row['writes_per_request']):>7}")
    print(f"pipelined / not: {pipelined['rps'] / unpipelined['rps']:.1f}x; pipelined / tornado: "
          f"{pipelined['rps'] / tornado['rps']:.1f}x; limit at depth {args.depth}: {limit}")
    print(json.dumps({
        "connections": args.connections, "duration_s": args.duration, "rounds": args.rounds, "depth": args.depth,
        "one_cpu": args.one_cpu, "cpus": os.cpu_count(), "rows": results,
        "pipelined_over_unpipelined": round(pipelined["rps"] / unpipelined["rps"], 2),
        "pipelined_over_tornado": round(pipelined["rps"] / tornado["rps"], 2),
        "limit": limit,
        "target_rps": TARGET_RPS, "meets_target_rps_with_wrk": pipelined["rps"] >= TARGET_RPS,
        "target_syscalls_per_request": TARGET_SYSCALLS_PER_REQUEST,
        "meets_target_syscalls": (pipelined["syscalls_per_request"] is not None
                                  and pipelined["syscalls_per_request"] < TARGET_SYSCALLS_PER_REQUEST),
    }))


def _rounded(value):
    return None if value is None else round(value, 4)


def _shown(value):
    return "-" if value is None else f"{value:.3f}"


if __name__ == "__main__":
    main()
