"""Lesson 12's push servers measured.

Memory per connection, CPU per delivery, the floor.

Three parts, each from this run's own figures:
  memory   server RSS against idle subscribers held (a least-squares slope over several N), per
           server, transport and compression; with compression, also after one message (aiohttp
           makes its compressor then). At --subscribers, and at --big on tornado_push.
  fanout   N subscribers, --messages broadcasts --gap-s apart: the server's CPU per delivery (the
           broadcast loop's own, from /publish, and the process's over the run, from /stats), the
           client's (its process CPU over the run), and the last subscriber's delivery time against
           N × max(D_server, D_client) (two stations in series on two CPUs) and N × their sum (one CPU).
  floor    one bare socket.send of the same frame per subscriber over N loopback connections.
The last line printed is JSON with every figure.

    flock /tmp/iolab-measure.lock .venv/bin/python benchmarks/push_servers.py [--subscribers 2000] [--big 10000]
        [--messages 5] [--parts memory,fanout,floor] [--servers tornado_push,...] [--hows frame,...] [--quick]
"""

import argparse
import json
import statistics
import time

from iolab import load, push_floor, registry, servers
from iolab.clients import push_routes

TRANSPORTS = {"tornado_push": ("ws", "sse", "poll"), "aiohttp_push": ("ws", "sse"), "websockets_push": ("ws",)}
HOWS = {"tornado_push": ("loop", "await", "frame"), "aiohttp_push": ("await", "tasks"),
        "websockets_push": ("broadcast", "await")}
KIB = 1024


def slope(points):
    """(bytes per subscriber, the largest residual in bytes) of a least-squares line through (n, rss) points."""
    xs, ys = zip(*points)
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)
    return b, max(abs(y - (my + b * (x - mx))) for x, y in points)


def hold(server, n, transport, compression, messages):
    """Start a client process holding n subscribers that wait for `messages` messages; return once held."""
    before = push_routes.counted(server.url)
    run = load.start_load(server.url + "/", kind="subscribers", transport=transport, compression=compression,
                          requests=n * messages, concurrency=n, timeout_s=10, max_duration_s=300)
    push_routes.wait_until_held(run, server.url, before + n, timeout_s=60)
    return run


def memory(name, transport, compression, total, steps=4):
    """RSS at 0, total/steps, ... total idle subscribers, and after one message to all of them."""
    with servers.serve(name, compression=compression) as server:
        points = [(0, push_routes.get_json(server.url, "/stats")["rss_bytes"])]
        runs = []
        try:
            for step in range(1, steps + 1):
                runs.append(hold(server, total // steps, transport, compression == "on", 2))
                points.append((step * (total // steps), push_routes.get_json(server.url, "/stats")["rss_bytes"]))
            push_routes.publish(server.url)
            time.sleep(0.5)  # every subscriber has it (a few ms each); the compressors made at the first are there
            after_message = push_routes.get_json(server.url, "/stats")["rss_bytes"]
            push_routes.publish(server.url)  # the second: the runs end
            for run in runs:
                run.wait(timeout=60)
        finally:
            for run in runs:
                run.stop()
    per, residual = slope(points)
    held = points[-1][0]
    after = (after_message - points[0][1]) / held
    worst = max(per, after)  # aiohttp makes its compressor at the first message: the idle slope would flatter it
    return {"server": name, "transport": transport, "compression": compression, "subscribers": held,
            "kib_per_connection": round(per / KIB, 2), "fit_residual_kib": round(residual / KIB, 1),
            "kib_per_connection_after_a_message": round(after / KIB, 2),
            "rss_mb": [round(rss / KIB / KIB, 1) for _, rss in points],
            "predicted_max_in_2_gb": int(2 * KIB**3 / worst) if worst > 0 else None}


def fanout(name, transport, how, n, messages, gap_s):
    with servers.serve(name) as server:
        # One message more than measured: the last ends the run, after the server's CPU is read; closing n
        # connections costs the server more than a broadcast to them, and is not a delivery.
        run = load.start_load(server.url + "/", kind="subscribers", transport=transport, requests=n * (messages + 1),
                              concurrency=n, timeout_s=10, max_duration_s=120)
        try:
            push_routes.wait_until_held(run, server.url, n, timeout_s=60)
            cpu0 = push_routes.get_json(server.url, "/stats")["cpu_s"]
            answers = []
            for _ in range(messages):
                answers.append(push_routes.publish(server.url, 64, how))
                time.sleep(gap_s)
            deadline = time.monotonic() + 30
            while len(run.samples()) < n * messages and time.monotonic() < deadline:
                time.sleep(0.02)
            cpu1 = push_routes.get_json(server.url, "/stats")["cpu_s"]
            push_routes.publish(server.url, 64, how)
            result = run.wait(timeout=60)
        finally:
            run.stop()
    delivered = [sample for sample in result.samples if not sample.error]
    ending = max(sample.start for sample in delivered)  # the extra message's publish time
    rows = [sample for sample in delivered if sample.start != ending]
    by_message = {}
    for sample in rows:
        by_message.setdefault(sample.start, []).append(sample.latency)
    last_ms = statistics.median(max(latencies) for latencies in by_message.values()) * 1e3
    deliveries = len(rows)
    server_loop_us = statistics.median(answer["cpu_s"] / max(answer["subscribers"], 1) for answer in answers) * 1e6
    server_us = (cpu1 - cpu0) / deliveries * 1e6
    client_us = result.reports[0]["client_cpu_s"] / len(delivered) * 1e6  # its CPU spans the extra message too
    return {"server": name, "transport": transport, "how": how, "subscribers": n, "deliveries": deliveries,
            "errors": result.errors, "server_loop_us_per_delivery": round(server_loop_us, 2),
            "server_us_per_delivery": round(server_us, 2), "client_us_per_delivery": round(client_us, 2),
            "last_ms": round(last_ms, 1),
            "predicted_last_ms_two_cpus": round(n * max(server_us, client_us) / 1e3, 1),
            "predicted_last_ms_one_cpu": round(n * (server_us + client_us) / 1e3, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=2000)
    parser.add_argument("--big", type=int, default=10_000, help="tornado_push's memory run (0: skip it)")
    parser.add_argument("--messages", type=int, default=5)
    parser.add_argument("--gap-s", type=float, default=0.3, help="between broadcasts: each is delivered before the next")
    parser.add_argument("--parts", default="memory,fanout,floor")
    parser.add_argument("--servers", default=",".join(TRANSPORTS), help="which push servers, comma-separated")
    parser.add_argument("--hows", default=None, help="only these broadcasters, comma-separated (default: all)")
    parser.add_argument("--quick", action="store_true", help="500 subscribers, no --big run, 3 messages")
    args = parser.parse_args()
    if args.quick:
        args.subscribers, args.big, args.messages = 500, 0, 3
    parts = args.parts.split(",")
    names = [name for name in args.servers.split(",") if registry.get(name).missing() is None]
    hows = {name: [how for how in HOWS[name] if args.hows is None or how in args.hows.split(",")] for name in names}
    out = {"subscribers": args.subscribers, "memory": [], "fanout": [], "floor": None}
    if "memory" in parts:
        for name in names:
            for compression in ("off", "on"):
                for transport in TRANSPORTS[name] if compression == "off" else ("ws",):
                    out["memory"].append(row := memory(name, transport, compression, args.subscribers))
                    print(json.dumps(row), flush=True)
        if args.big:
            for compression in ("off", "on"):
                out["memory"].append(row := memory("tornado_push", "ws", compression, args.big))
                print(json.dumps(row), flush=True)
    if "fanout" in parts:
        for name in names:
            for transport in TRANSPORTS[name]:
                for how in hows[name] if transport != "poll" else ("loop",):
                    out["fanout"].append(row := fanout(name, transport, how, args.subscribers, args.messages,
                                                       args.gap_s))
                    print(json.dumps(row), flush=True)
    if "floor" in parts:
        out["floor"] = push_floor.floor(connections=args.subscribers, size=64, rounds=7)
        print(json.dumps(out["floor"]), flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
