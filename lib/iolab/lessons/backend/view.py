"""Lesson 10's figures: throughput against the front end's threads with the bottleneck law drawn, and the broker's queue live."""

import ast
import time
from pathlib import Path

from IPython.display import Code, display
from matplotlib.patches import FancyBboxPatch

from iolab import figures
from iolab.servers import SERVERS_DIR

REFRESH_HZ = 5


def method_source(server, cls, method):
    """servers/<server>.py's `cls.method` alone, highlighted: the lines that carry the idea, not their hardening."""
    text = (Path(SERVERS_DIR) / f"{server}.py").read_text()
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if getattr(item, "name", None) == method:
                    lines = text.splitlines()[item.lineno - 1:item.end_lineno]
                    return Code(f"class {cls}(...):  # servers/{server}.py\n" + "\n".join(lines), language="python")
    raise ValueError(f"servers/{server}.py has no {cls}.{method}")


def sweep_figure(threads, rows, workers, trip_s, slot_s, task_s, extra=()):
    """Throughput against k, the front end's threads: the law's prediction, and its ceiling with every hold = T.

    `extra` adds (label, rps, predicted) points drawn at the right edge (awaiting: no front-end limit).
    """
    figure, axes = figures.subplots(figsize=(7.5, 4.2), dpi=80)
    ks = list(threads)
    axes.plot(ks, [min(k / trip_s, workers / slot_s) for k in ks], "--", color="#2ca02c",
              label="predicted: min(N / R, k / R, c / T_w)")
    axes.plot(ks, [min(k, workers) / task_s for k in ks], ":", color="#7f7f7f", label="ceiling: every hold = T")
    axes.plot(ks, [row.rps for row in rows], "o-", color="#1f77b4", label="measured (Tornado, k threads)")
    for label, rps, predicted in extra:
        axes.plot([ks[-1] * 1.25], [rps], "s", color="#d62728", label=f"measured: {label}")
        axes.plot([ks[-1] * 1.25], [predicted], "_", markersize=16, color="#2ca02c")
    axes.axvline(workers, color="#9467bd", lw=0.8)
    axes.annotate(f"k = c = {workers}: the bottleneck moves\nfrom the front end to the worker pool",
                  (workers, workers / slot_s * 0.45), fontsize=9, color="#9467bd")
    axes.set(xscale="log", xlabel="k, threads that wait for results in the front end", ylabel="req/s",
             title=f"Throughput against k, worker pool c = {workers}, task T = {task_s * 1000:.0f} ms")
    axes.set_xticks(ks + ([ks[-1] * 1.25] if extra else []))
    axes.set_xticklabels([str(k) for k in ks] + (["await"] if extra else []))
    axes.set_ylim(0, max(min(k, workers) / task_s for k in ks) * 1.25)
    axes.legend(fontsize=8, loc="upper left")
    return figure


def queue_figure(points, predicted_slope, limit=None, title="The broker's queue, LLEN celery"):
    """LLEN over time, with the predicted slope drawn from where the queue starts growing."""
    figure, axes = figures.subplots(figsize=(7.5, 3.6), dpi=72)
    if points:
        times, lengths = zip(*points)
        axes.step(times, lengths, where="post", color="#1f77b4", label="LLEN, measured")
        start = next((t for t, n in points if n > 0), times[0])
        end = times[-1]
        axes.plot([start, end], [0, predicted_slope * (end - start)], "--", color="#2ca02c",
                  label=f"predicted: λ − c/T_w = {predicted_slope:.1f} tasks/s")
        axes.set_ylim(0, max(max(lengths), 1) * 1.2)
    if limit:
        axes.axhline(limit, color="#d62728", lw=0.8, label=f"--queue-limit {limit}")
    axes.set(xlabel="time (s)", ylabel="tasks waiting", title=title)
    if points or limit:
        axes.legend(fontsize=8, loc="upper left")
    return figure


def follow_queue(run, watch, predicted_slope, limit=None, title="The broker's queue, LLEN celery"):
    """Redraw the queue while `run` goes (REFRESH_HZ), then leave its final frame; returns the run's LoadResult."""
    handle = display(figures.render(queue_figure([], predicted_slope, limit, title + " (starting)"), dpi=60),
                     display_id=True)
    while not run.done():
        began = time.monotonic()
        handle.update(figures.render(queue_figure(list(watch.points), predicted_slope, limit, title + " (running)"), dpi=60))
        time.sleep(max(0.0, 1 / REFRESH_HZ - (time.monotonic() - began)))
    result = run.wait()
    points = watch.stop_after()  # two readings after the run: its last tasks, answered once in Redis, are in them
    handle.update(figures.render(queue_figure(list(points), predicted_slope, limit, title)))
    return result


def cap_figure(cap):
    """Tasks Redis took against time in a run to its memory cap, the predicted count, and every 503 after it."""
    figure, axes = figures.subplots(figsize=(7.5, 3.6), dpi=72)
    samples = sorted(cap.result.samples, key=lambda sample: sample.end)
    taken = [sample.end for sample in samples if sample.status == 200]
    refused = [sample.end for sample in samples if sample.status == 503]
    axes.step(taken, range(1, len(taken) + 1), where="post", color="#1f77b4", label="tasks Redis took (200s)")
    axes.axhline(cap.predicted_tasks, color="#2ca02c", ls="--",
                 label=f"predicted: ({cap.cap_mb} MB − empty) / {cap.bytes_per_task:.0f} B = {cap.predicted_tasks:.0f}")
    if refused:
        axes.plot(refused, [len(taken)] * len(refused), "|", color="#d62728", markersize=12,
                  label=f"503 broker full ({len(refused)}, median {cap.median_503_ms():.1f} ms)")
    axes.set(xlabel="time (s)", ylabel="tasks waiting", ylim=(0, max(len(taken), cap.predicted_tasks) * 1.25),
             title=f"Fire and forget into a Redis capped at {cap.cap_mb} MB, no worker")
    axes.legend(fontsize=8, loc="lower right")
    return figure


# Each tier: (x of its centre, y, name, what it holds at once, where a request or task waits in it).
TIERS = [
    (1.0, 2.0, "client", "N users, one\nrequest out each", "waits R\nfor its answer"),
    (3.7, 2.0, "front end", "F requests at once:\n1, k, w or no limit", "a slot waits\nfor the task's result"),
    (6.4, 2.0, "broker", "Redis's queue of\ntasks (LLEN celery)", "a task waits\nfor a free slot"),
    (9.1, 2.0, "worker pool", "c slots", "a slot waits T\n(a slow API), CPU idle"),
    (6.4, 0.2, "result store", "Redis: one\nresult per task", "a result waits\nuntil it is read"),
]
WIDTH, HEIGHT = 1.7, 0.9
INK, WAIT = "#444444", "#d62728"


def _arrow(axes, tail, head, label, label_at):
    axes.annotate("", head, tail, arrowprops={"arrowstyle": "-|>", "color": INK, "lw": 1.2})
    axes.text(*label_at, label, ha="center", va="center", fontsize=8, color=INK,
              bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})


def tiers_figure():
    """The tiers a request crosses in lesson 10, what each holds at once and where each waits: drawn, not measured."""
    figure, axes = figures.subplots(figsize=(9.6, 4.2), dpi=80)
    for x, y, name, holds, waits in TIERS:
        axes.add_patch(FancyBboxPatch((x - WIDTH / 2, y - HEIGHT / 2), WIDTH, HEIGHT, boxstyle="round,pad=0.05",
                                      facecolor="#e8f0fa", edgecolor="#1f77b4"))
        axes.text(x, y + 0.2, name, ha="center", va="center", fontsize=10, weight="bold")
        axes.text(x, y - 0.15, holds, ha="center", va="center", fontsize=8)
        if y > 1:  # above the top row; beside the result store
            axes.text(x, y + HEIGHT / 2 + 0.12, waits, ha="center", va="bottom", fontsize=8, color=WAIT, style="italic")
        else:
            axes.text(x + WIDTH / 2 + 0.15, y, waits, ha="left", va="center", fontsize=8, color=WAIT, style="italic")
    (cx, cy), (fx, fy), (bx, by), (wx, wy), (rx, ry) = [tier[:2] for tier in TIERS]
    half = WIDTH / 2
    _arrow(axes, (cx + half, cy + 0.2), (fx - half, fy + 0.2), "request", ((cx + fx) / 2, cy + 0.38))
    _arrow(axes, (fx - half, fy - 0.2), (cx + half, cy - 0.2), "answer", ((cx + fx) / 2, cy - 0.38))
    _arrow(axes, (fx + half, fy), (bx - half, by), "task", ((fx + bx) / 2, fy + 0.18))
    _arrow(axes, (bx + half, by), (wx - half, wy), "a task per\nfree slot", ((bx + wx) / 2, by - 0.3))
    _arrow(axes, (wx, wy - HEIGHT / 2), (rx + half - 0.2, ry + HEIGHT / 2), "result", ((wx + rx + half) / 2, (wy + ry) / 2 + 0.1))
    _arrow(axes, (rx - half + 0.2, ry + HEIGHT / 2), (fx, fy - HEIGHT / 2), "result read",
           ((fx + rx - half) / 2, (fy + ry) / 2 + 0.1))
    axes.set(xlim=(-0.1, 10.2), ylim=(-0.4, 3.2))
    axes.set_title("The tiers of lesson 10: what each holds at once (black) and where it waits (red)", fontsize=10)
    axes.axis("off")
    return figure
