"""How close the lab's fastest client comes to wrk against every hello-world server in the registry, in one run.

For each server the registry has whose port speaks HTTP (its `protocol`; servers
that cannot start here, or whose port speaks something else, are skipped with
the reason), with its default options: alternating rounds of wrk and of the
lab's raw closed-loop client (uvloop, record="aggregate") with 1 and with 2
client processes, same connections and duration. A run's throughput is the
answers that came within the duration, divided by it, as wrk counts. A server's
ratio is the median over rounds of lab / wrk in the same round (pairs, so that
other load on a shared machine, which drifts, hits both alike), for the better
process count. CPU seconds per second of the server's processes and of the
client (its start-up included) show which side was the bottleneck.

The client's CPU per request, against wrk's in the same round (median over
rounds), is printed for every server, with as many lab processes as wrk has
threads (one each, by default). Against GUARDED_SERVER (nginx_hello) the
client is the bottleneck, so there the figure is the client's own cost, and
the lab's raw client must spend at most CPU_RATIO_TARGET times wrk's; against
a slower server each wake-up carries fewer answers, so the figure says more
about the server than about the client. The last line printed is JSON with
both ratios per server and the guarded one's verdict.

    .venv/bin/python benchmarks/loadgen_vs_wrk.py [--connections 50] [--duration 5] [--rounds 3] [--server NAME ...]
"""

import argparse
import json
import resource
import statistics
import sys

import psutil

from iolab import benchtools, load, registry, servers

TIMEOUT_S = 10  # per request, the same for wrk and the lab
GUARDED_SERVER = "nginx_hello"  # the fastest server: the client is the bottleneck
CPU_RATIO_TARGET = 1.3  # the raw client's CPU per request against it, at most this many times wrk's (1.29 before lesson 09)


def children_cpu_s():
    """CPU seconds of this process's finished children: wrk, or the lab's client processes, once reaped."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def tree_cpu_s(pid):
    """CPU seconds of a server and its children so far (nginx and gunicorn have workers)."""
    total = 0.0
    root = psutil.Process(pid)
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
        except psutil.NoSuchProcess:
            pass
    return total


def measured(server, run):
    """(rps, errors, server CPU per second, client CPU per second) of run(), which returns (answers, errors, seconds)."""
    server_before, client_before = tree_cpu_s(server.pid), children_cpu_s()
    answered, errors, seconds = run()
    server_cpu = (tree_cpu_s(server.pid) - server_before) / seconds
    return answered / seconds, errors, server_cpu, (children_cpu_s() - client_before) / seconds


def wrk_run(url, connections, duration_s, threads):
    report = benchtools.run_wrk(url, connections, duration_s, threads=threads, timeout_s=TIMEOUT_S)
    return report["requests"], report["socket_errors"] + report["non_2xx"], duration_s


def lab_run(url, connections, duration_s, processes):
    result = load.run_load(url, requests=100_000_000, concurrency=connections, kind="closed_raw", processes=processes,
                           max_duration_s=duration_s, timeout_s=TIMEOUT_S, record="aggregate")
    answered_in_time = float(result.samples.completions_per_bin(duration_s, duration_s)[0])
    return answered_in_time, sum(result.samples.error_kinds.values()), duration_s


def compare(name, args):
    figures = {"wrk": [], **{f"lab_p{p}": [] for p in args.processes}}
    details = {key: [] for key in figures}
    with servers.serve(name) as server:
        url = server.url + "/"
        for round_number in range(args.rounds):
            runs = [("wrk", lambda: wrk_run(url, args.connections, args.duration, args.wrk_threads))]
            runs += [(f"lab_p{p}", lambda p=p: lab_run(url, args.connections, args.duration, p)) for p in args.processes]
            if round_number % 2:  # alternate who goes first: drift on a shared machine hits both alike
                runs.reverse()
            for key, run in runs:
                rps, errors, server_cpu, client_cpu = measured(server, run)
                figures[key].append(rps)
                details[key].append((errors, server_cpu, client_cpu))
            print(f"  {name} round {round_number + 1}: "
                  + ", ".join(f"{key} {values[-1]:,.0f}" for key, values in figures.items()), file=sys.stderr, flush=True)
        server.check()
    if not any(figures["wrk"]):  # nothing to pair the lab's rounds with: say so rather than fail on an empty median
        raise RuntimeError(f"wrk got no answer in {args.rounds} rounds")
    medians = {key: statistics.median(values) for key, values in figures.items()}
    paired = {key: statistics.median(lab / wrk for lab, wrk in zip(values, figures["wrk"]) if wrk)
              for key, values in figures.items() if key != "wrk"}
    best = max(paired, key=paired.get)
    row = {"wrk_rps": round(medians["wrk"], 1), "lab_rps": round(medians[best], 1), "ratio": round(paired[best], 3),
           "lab_processes": int(best.removeprefix("lab_p")),
           "round_ratios": [round(lab / wrk, 3) for lab, wrk in zip(figures[best], figures["wrk"]) if wrk]}
    # CPU per request, per round: the client's CPU seconds per second over its answers per second.
    cpu_us = {key: [1e6 * cpu / rps if rps else None for rps, (_, _, cpu) in zip(figures[key], details[key])]
              for key in figures}
    for key in figures:
        errors, server_cpu, client_cpu = (statistics.median(column) for column in zip(*details[key]))
        row[key] = {"rps": round(medians[key], 1), "errors": errors, "server_cpu": round(server_cpu, 2),
                    "client_cpu": round(client_cpu, 2)}
        answered = [us for us in cpu_us[key] if us is not None]
        row[key]["client_cpu_us_per_request"] = round(statistics.median(answered), 2) if answered else None
        if key != "wrk":
            pairs = [lab / wrk for lab, wrk in zip(cpu_us[key], cpu_us["wrk"]) if lab and wrk]
            row[key]["cpu_ratio"] = round(statistics.median(pairs), 3) if pairs else None
    same = f"lab_p{args.wrk_threads}"  # as many client processes as wrk has threads
    row["cpu_ratio"] = row[same]["cpu_ratio"] if same in row else None
    return row


def guarded(results):
    """The guarded server's CPU-per-request ratio against its target, if it ran."""
    ratio = results[GUARDED_SERVER]["cpu_ratio"] if GUARDED_SERVER in results else None
    return {"server": GUARDED_SERVER, "cpu_ratio": ratio, "at_most": CPU_RATIO_TARGET,
            "within": None if ratio is None else ratio <= CPU_RATIO_TARGET}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--duration", type=int, default=3, help="seconds per run (wrk takes whole seconds)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per server; medians are reported")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2], help="lab client processes to try")
    parser.add_argument("--wrk-threads", type=int, default=1)
    parser.add_argument("--server", nargs="*", help="only these servers (default: every one whose port speaks HTTP)")
    args = parser.parse_args()
    if not 1 <= args.rounds <= 20:
        parser.error(f"--rounds must be between 1 and 20, got {args.rounds}")
    missing_wrk = benchtools.missing_reason("wrk")
    if missing_wrk:
        print(missing_wrk)
        print(json.dumps({"skipped": missing_wrk}))
        return

    names = args.server or registry.names()
    skipped = {name: registry.get(name).missing() for name in names if registry.get(name).missing()}
    for name in names:
        if registry.get(name).protocol != "http":  # wrk and the lab's clients speak HTTP only
            skipped[name] = f"its port speaks {registry.get(name).protocol}, not HTTP: wrk cannot drive it"
    results = {}
    for name in names:
        if name in skipped:
            print(f"{name:18} skipped: {skipped[name]}")
            continue
        try:
            results[name] = compare(name, args)
        except (servers.ServerError, RuntimeError, AssertionError) as error:
            skipped[name] = f"failed: {error}"
            print(f"{name:18} failed: {error}")
            continue
        row = results[name]
        lab = row[f"lab_p{row['lab_processes']}"]
        print(f"{name:18} wrk {row['wrk_rps']:9,.0f}  lab {row['lab_rps']:9,.0f} (p={row['lab_processes']})"
              f"  ratio {row['ratio']}  server CPU {row['wrk']['server_cpu']:.2f} / {lab['server_cpu']:.2f}"
              f"  client CPU {row['wrk']['client_cpu']:.2f} / {lab['client_cpu']:.2f}"
              f"  errors {row['wrk']['errors']} / {lab['errors']}"
              f"  CPU per request, lab / wrk {row['cpu_ratio']}"
              + (f" (at most {CPU_RATIO_TARGET})" if name == GUARDED_SERVER else ""),
              flush=True)
    ratios = [row["ratio"] for row in results.values() if row["ratio"] is not None]
    print(json.dumps({"connections": args.connections, "duration_s": args.duration, "rounds": args.rounds,
                      "wrk_threads": args.wrk_threads, "lowest_ratio": min(ratios, default=None),
                      "ratios": {name: row["ratio"] for name, row in results.items()},
                      "cpu_ratios": {name: row["cpu_ratio"] for name, row in results.items()},
                      "guarded": guarded(results),
                      "servers": results, "skipped": skipped}))


if __name__ == "__main__":
    main()
