"""Lesson 10's figures: throughput against the front end's threads with the bottleneck law drawn, and the broker's queue live."""

import time

from IPython.display import display

from iolab import figures

REFRESH_HZ = 5


def sweep_figure(threads, rows, workers, trip_s, slot_s, task_s, extra=()):
    """Throughput against k, the front end's threads: min(k / R, c / T_w) predicted, min(k, c) / T the law's bound.

    `extra` adds (label, rps, predicted) points drawn at the right edge (awaiting: no front-end limit).
    """
    figure, axes = figures.subplots(figsize=(7.5, 4.2), dpi=80)
    ks = list(threads)
    axes.plot(ks, [min(k / trip_s, workers / slot_s) for k in ks], "--", color="#2ca02c",
              label="predicted: min(k / R, c / T_w)")
    axes.plot(ks, [min(k, workers) / task_s for k in ks], ":", color="#7f7f7f", label="law's bound: min(k, c) / T")
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
                  label=f"predicted: λ − c/T = {predicted_slope:.1f} tasks/s")
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
    time.sleep(0.3)  # the last tasks' arrival in Redis
    handle.update(figures.render(queue_figure(list(watch.stop()), predicted_slope, limit, title)))
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
