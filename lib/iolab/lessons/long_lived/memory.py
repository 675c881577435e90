"""Section 1: a server's RSS against its idle subscribers.

Section 1: each server alone, idle subscribers added in steps, its RSS read from /stats after each; the line
RSS(N) = M0 + N·m fitted on every step but the last, which it predicts.
"""

import concurrent.futures
import contextlib
import json
import time
import urllib.request

from iolab import servers
from iolab.clients.held_subscribers import Held

from . import model

# (server, transport, compression): each server's WebSocket with compression off and on, and Tornado's other two.
SERIES = (("tornado_push", "ws", False), ("aiohttp_push", "ws", False), ("websockets_push", "ws", False),
          ("tornado_push", "poll", False), ("tornado_push", "sse", False),
          ("tornado_push", "ws", True), ("aiohttp_push", "ws", True), ("websockets_push", "ws", True))
SETTLE_CHECK_S = 0.005  # how often a step's subscribers are counted until the server holds them all
TIMEOUT_S = 10.0


def stats(server):
    """The server's /stats: subscribers by transport, RSS, CPU, published, dropped, unsent bytes."""
    with urllib.request.urlopen(f"{server.url}/stats", timeout=TIMEOUT_S) as answer:
        return json.loads(answer.read())


def publish(server, size, how=None):
    """One message of `size` bytes to every subscriber; the server's answer once its loop is done."""
    query = f"size={size}" + (f"&how={how}" if how else "")
    with urllib.request.urlopen(f"{server.url}/publish?{query}", timeout=TIMEOUT_S) as answer:
        return json.loads(answer.read())


def held(server, transport):
    return stats(server)["subscribers"][transport]


def stats_once(server, holds, timeout_s, every_s, failure):
    """The server's /stats once `holds(stats)`: asked again every `every_s` (no fixed wait), and after `timeout_s`
    the exception `failure(stats)` is raised."""
    deadline = time.monotonic() + timeout_s
    while not holds(found := stats(server)):
        if time.monotonic() > deadline:
            raise failure(found)
        time.sleep(every_s)
    return found


def settled(server, transport, n):
    """The server's /stats once it holds all `n` subscribers the client opened: their accepts and allocations have
    landed, so its RSS holds them. At most TIMEOUT_S."""
    return stats_once(server, lambda found: found["subscribers"][transport] == n, TIMEOUT_S, SETTLE_CHECK_S,
                      lambda found: RuntimeError(f"{server.name} holds {found['subscribers'][transport]} {transport}"
                                                 f" subscribers, not the {n} the client opened"))


def series(server, transport, compression, steps, message_bytes):
    """RSS at each N of `steps` for one (fresh) server and transport, subscribers added a step at a time. With
    compression on, one message goes out before each reading: a compressor may be made only when it is first used
    (aiohttp's is)."""
    with Held(server.url, transport, steps[0], compression=compression) as subscribers:
        ns, rss = [], []
        for n in steps:
            if n > subscribers.n:
                subscribers.add(n - subscribers.n)
            if compression:
                publish(server, message_bytes)
            found = settled(server, transport, n)
            ns.append(n)
            rss.append(found["rss_bytes"])
    return ns, rss


def start(server_name, compression):
    return servers.start(server_name, **({"compression": "on"} if compression else {}))


@contextlib.contextmanager
def fresh_servers():
    """A fresh server for each series of SERIES, all started side by side and stopped side by side: start-up and
    shutdown measure nothing here, and an idle server's RSS is its own, so each series still meets a server that no
    other series touched."""
    with concurrent.futures.ThreadPoolExecutor(len(SERIES)) as pool:
        futures = [pool.submit(start, name, compression) for name, _, compression in SERIES]
        concurrent.futures.wait(futures)
    started = [future.result() for future in futures if future.exception() is None]
    try:
        for future in futures:
            future.result()  # a server that did not start: raised here, once the others are in hand to stop
        yield started
    finally:
        with concurrent.futures.ThreadPoolExecutor(len(SERIES)) as pool:
            list(pool.map(lambda server: server.stop(), started))


def run(plan):
    """Every series of SERIES: the fit, the held-out prediction, the budget's N_max (and the cgroup's, if set)."""
    with fresh_servers() as started:
        return [row(plan, server, transport, compression)
                for server, (_, transport, compression) in zip(started, SERIES)]


def row(plan, server, transport, compression):
    """One series's row: its fit, the held-out prediction, the budget's N_max (and the cgroup's, if set)."""
    budget = plan.budget_gib * 2**30
    largest = plan.compressed_subscribers if compression else plan.subscribers
    ns, rss = series(server, transport, compression, plan.memory_steps(largest), plan.message_bytes)
    fit = model.memory(ns, rss)
    m, m0 = fit["bytes_per_connection"], fit["m0_bytes"]
    limit = plan.limits.memory_limit_bytes if plan.limits else None
    return fit | {
        "kind": transport, "server": server.name, "compression": compression, "budget_bytes": budget,
        "predicted_max": model.n_max(budget, m, m0), "predicted_rss_10000_bytes": m0 + 10_000 * m,
        "cgroup_limit_bytes": limit, "predicted_max_cgroup": model.n_max(limit, m, m0) if limit else None}


def table(rows, plan):
    """(headers, rows) for tables.markdown."""
    headers = ["server", "transport", "deflate", "N held", "M0 (MiB)", "m (KiB)", "RSS at 10,000 (MiB)",
               f"N_max in {plan.budget_gib:g} GiB"]
    if any(row["cgroup_limit_bytes"] for row in rows):
        headers.append("N_max in this container")
    body = []
    for row in rows:
        line = [row["server"], row["kind"], "on" if row["compression"] else "off", row["ns"][-1],
                row["m0_bytes"] / 2**20, row["kib_per_connection"], row["predicted_rss_10000_bytes"] / 2**20,
                f"{row['predicted_max']:,}"]
        if len(headers) > len(line):
            line.append(f"{row['predicted_max_cgroup']:,}" if row["predicted_max_cgroup"] is not None else "")
        body.append(line)
    return headers, body


def say(rows, plan):
    """The run's reading of section 1 in sentences, from its own figures."""
    off = {row["server"]: row for row in rows if row["kind"] == "ws" and not row["compression"]}
    on = {row["server"]: row for row in rows if row["kind"] == "ws" and row["compression"]}
    for name, row in off.items():
        text = (f"{name}: {row['kib_per_connection']:.1f} KiB per idle WebSocket, so 10,000 take"
                f" {row['predicted_rss_10000_bytes'] / 2**20:.0f} MiB and {plan.budget_gib:g} GiB holds"
                f" {row['predicted_max']:,}.")
        if name in on:
            deflate = on[name]
            text += (f" With deflate on: {deflate['kib_per_connection']:.1f} KiB"
                     f" ({deflate['kib_per_connection'] / row['kib_per_connection']:.1f}×), and {plan.budget_gib:g}"
                     f" GiB holds {deflate['predicted_max']:,}.")
        print(text)
