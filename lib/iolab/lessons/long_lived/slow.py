"""Section 5: one stopped subscriber, and each broadcaster.

What each broadcaster does about it.

Section 5: one subscriber (its own client process, subscribed first) is stopped with SIGSTOP for S while the
lab publishes at a steady rate; the others' delivery times, the server's unsent bytes and its drops are read.
"""

import asyncio
import time

import aiohttp

from iolab import neighbours, servers, stall
from iolab.clients.held_subscribers import Held

from . import model

# (server, how, awaits each send?): the blocking broadcaster and the one that is not, on Tornado.
# The one that does not await runs first: it shows when the kernel's buffers are full, which the other's prediction needs.
RUNS = (("tornado_push", "loop", False), ("tornado_push", "await", True))
OTHERS = 20  # subscribers behind the stopped one: enough to see a loop stall, few enough to read quickly
BASELINE_S = 0.3  # publishing with no one stopped first: the others' delivery on this run's machine
DRAIN_S = 0.3  # after the stall, the backlog's last messages arrive before the run ends
SAMPLE_S = 0.05  # how often /stats is read during the stall
TIMEOUT_S = 10.0


async def _publish_at(session, url, rate, seconds, size, how, sent):
    """Publish at `rate` a second for `seconds`, each without waiting for the one before (an awaiting broadcaster
    may hold an answer back for the whole stall)."""
    tasks = []
    began = time.monotonic()
    for i in range(round(rate * seconds)):
        await asyncio.sleep(max(0.0, began + i / rate - time.monotonic()))
        sent.append(time.monotonic())
        tasks.append(asyncio.ensure_future(session.get(f"{url}/publish?size={size}&how={how}")))
    for response in await asyncio.gather(*tasks, return_exceptions=True):
        if not isinstance(response, BaseException):
            response.release()


async def _sample(session, url, until, samples):
    while time.monotonic() < until:
        async with session.get(f"{url}/stats") as answer:
            found = await answer.json()
        samples.append((time.monotonic(), found["buffered_bytes"], found["dropped"]))
        await asyncio.sleep(SAMPLE_S)


async def one(server_name, how, blocking, plan):
    """One broadcaster: the baseline, then the stall; the others' worst delivery in each, the unsent bytes' growth."""
    size = plan.slow_message_kib * 1024
    options = {"max_buffer_kib": plan.max_buffer_kib, "send_timeout_s": plan.slow_seconds * 4}
    timeout = aiohttp.ClientTimeout(total=plan.slow_seconds * 4 + TIMEOUT_S)
    with neighbours.watching() as watch, servers.serve(server_name, **options) as server, \
            Held(server.url, "ws", 1) as stopped, Held(server.url, "ws", OTHERS) as others:
        async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as session:
            await _publish_at(session, server.url, plan.slow_rate, BASELINE_S, size, how, [])
            baseline = others.deliveries()
            sent, samples = [], []
            with stall.stall(stopped.process, plan.slow_seconds, group=False) as stopping:
                await asyncio.sleep(max(0.0, stopping.planned_at - time.monotonic()))
                await asyncio.gather(
                    _publish_at(session, server.url, plan.slow_rate, plan.slow_seconds, size, how, sent),
                    _sample(session, server.url, stopping.planned_at + plan.slow_seconds, samples))
            await asyncio.sleep(DRAIN_S)
            after = others.deliveries()
    stalled = [row for row in after if row not in baseline]
    stopped_at = stopping.stopped_at or stopping.planned_at
    worst_baseline = max((row["delivery_ms"] for row in baseline), default=0.0)
    worst = max((row["delivery_ms"] for row in stalled), default=float("nan"))
    growth = growth_rate(samples)
    growing = [taken for taken, buffered, _ in samples if buffered > 0]
    return {"server": server_name, "how": how, "blocking": blocking, "stall_ms": plan.slow_seconds * 1000,
            "baseline_ms": worst_baseline, "others_worst_ms": worst, "others": OTHERS,
            "published": len(sent), "dropped": samples[-1][2] if samples else 0,
            "buffered_peak_bytes": max((s[1] for s in samples), default=0), "cap_bytes": plan.max_buffer_kib * 1024,
            "message_bytes": size, "growth_bytes_per_s": growth,
            "full_after_s": growing[0] - stopped_at if growing else None,
            "predicted_growth_bytes_per_s": plan.slow_rate * size,
            "timeline": ([row["t"] - stopped_at for row in stalled], [row["delivery_ms"] for row in stalled]),
            "buffered": [(t - stopped_at, b) for t, b, _ in samples], "neighbours": watch.found.as_dict()}


def growth_rate(samples):
    """Bytes a second the unsent bytes grew at, fitted over the readings from the first non-zero one until the
    drop (or the end): None if fewer than three readings lie there."""
    growing = []
    for taken, buffered, dropped in samples:
        if dropped:
            break
        if buffered > 0 or growing:
            growing.append((taken, buffered))
    if len(growing) < 3:
        return None
    _, slope = model.fit_line([t for t, _ in growing], [b for _, b in growing])
    return slope


async def run(plan):
    """Every broadcaster of RUNS, one after another, each with its prediction for the others' worst delivery.

    One that does not await keeps the others at their baseline. One that awaits each send stops at the first
    message that finds the stopped one's kernel buffers full (the other run shows when: its unsent bytes start to
    grow then), and goes on when the stall ends. So the others' worst is S less that time."""
    runs = [await one(server, how, blocking, plan) for server, how, blocking in RUNS]
    full = [r["full_after_s"] for r in runs if not r["blocking"] and r["full_after_s"] is not None]
    # A stall whose messages all fit in the kernel's buffers (few, small or slow messages) fills nothing: no send
    # waits, nothing piles up in the server, and no one is dropped.
    filled_after_s = min(full) if full else None
    filled, kib_per_s = filled_after_s is not None, plan.slow_rate * plan.slow_message_kib
    for found in runs:
        stalled_ms = found["stall_ms"] - (filled_after_s * 1000 if filled else 0.0)
        found["buffers_filled"] = filled
        found["predicted_ms"], found["opposite_ms"] = ((stalled_ms, found["baseline_ms"]) if found["blocking"] and filled
                                                       else (found["baseline_ms"], stalled_ms))
        found["kernel_kib"] = filled_after_s * kib_per_s if filled else None
        # What piles up in the server by the stall's end: every message after the kernel's buffers filled.
        found["piled_bytes"] = (plan.slow_seconds - filled_after_s) * kib_per_s * 1024 if filled else 0.0
    return {"runs": runs}


def table(found):
    headers = ["server", "how", "others' worst, no one stopped (ms)", "others' worst, one stopped (ms)",
               "unsent bytes grew (KiB/s)", "predicted (KiB/s)", "peak unsent (KiB)", "dropped", neighbours.COLUMN]
    rows = []
    for run in found["runs"]:
        growth = run["growth_bytes_per_s"]
        rows.append([run["server"], run["how"], run["baseline_ms"], run["others_worst_ms"],
                     "" if growth is None or run["blocking"] else growth / 1024,
                     "" if run["blocking"] else run["predicted_growth_bytes_per_s"] / 1024,
                     run["buffered_peak_bytes"] / 1024, run["dropped"], neighbours.held(run.get("neighbours"))])
    return headers, rows


def say(found):
    """The run's reading of section 5 in sentences, from its own figures."""
    for run in found["runs"]:
        print(f"{run['server']} how={run['how']}: the others' worst delivery {run['others_worst_ms']:.3g} ms,"
              f" predicted {run['predicted_ms']:.3g} ms (with no one stopped: {run['baseline_ms']:.2g} ms).")
        if not run["blocking"] and run["full_after_s"] is not None:
            dropped = (f"it was dropped with {run['buffered_peak_bytes'] / 1024:,.0f} KiB unsent at the last reading"
                       if run["dropped"] else f"it was not dropped ({run['buffered_peak_bytes'] / 1024:,.0f} KiB at most)")
            print(f"  The kernel took {run['kernel_kib']:,.0f} KiB for the stopped one, {run['full_after_s']:.2f} s"
                  f" of messages, before the server's own buffer grew; {dropped}.")
        elif not run["blocking"]:
            print("  The kernel's buffers took every message of the stall: nothing piled up in the server, and no send"
                  " had to wait.")
