"""Lesson 06's pictures.

Scaling curves, the GIL's delays, the matrix, the USL fit, nginx as reference; draws, never
measures.
"""

import inspect
import math

import numpy as np
from IPython.display import Code
from matplotlib.colors import Normalize

from iolab import figures

HANDLER_TITLES = {"hello": "hello world ( / )", "wait": "waiting ( /sync-sleep )", "cpu": "CPU work ( /cpu )"}
VERDICT_MARKERS = {"predicted": "o", "explained": "s", "reported": "x", "unexplained": "X"}


def code_only(obj):
    """A function's source without its comment lines: for code we show but do not own (gunicorn's), whose
    comments are longer than the lines that carry the idea. What is shown still runs as shown."""
    lines = inspect.getsource(obj).splitlines()
    return Code("\n".join(line for line in lines if not line.strip().startswith("#")), language="python")


def _handler_title(handler, lab):
    if handler == "wait":
        return f"waiting ( /sync-sleep?ms={lab.wait_ms} )"
    if handler == "cpu":
        return f"CPU work ( /cpu?ms={lab.cpu_ms} )"
    return HANDLER_TITLES[handler]


def scaling_figure(lab, series, x_of, x_label, handlers=None, title=""):
    """One panel per handler: each series' measured throughput (marker = verdict) and its prediction (dashed).

    `series` maps a label to the cells of one configuration family; `x_of(cell)` places a cell on the x axis.
    """
    handlers = list(handlers or lab.handlers)
    figure, axes_row = figures.subplots(1, len(handlers), figsize=(4.2 * len(handlers), 3.4), layout="constrained")
    axes_row = np.atleast_1d(axes_row)
    for axes, handler in zip(axes_row, handlers):
        for index, (label, cells) in enumerate(series.items()):
            mine = sorted((c for c in cells if c.handler == handler), key=x_of)
            if not mine:
                continue
            color = f"C{index}"
            xs = [x_of(c) for c in mine]
            axes.plot(xs, [c.predicted.rps for c in mine], "--", color=color, alpha=0.7, label=f"{label}: predicted")
            for cell in mine:
                axes.scatter(x_of(cell), cell.rps, color=color, marker=VERDICT_MARKERS[cell.verdict.kind], s=40, zorder=3)
            axes.plot(xs, [c.rps for c in mine], "-", color=color, alpha=0.4, label=f"{label}: measured")
        axes.set_xscale("log", base=2)
        ticks = sorted({x_of(c) for cells in series.values() for c in cells})
        axes.set_xticks(ticks, [str(t) for t in ticks])
        axes.set_ylim(bottom=0)
        axes.set_xlabel(x_label)
        axes.set_title(_handler_title(handler, lab), fontsize=10)
    axes_row[0].set_ylabel("requests per second")
    axes_row[0].legend(fontsize=7, loc="lower left")
    if title:
        figure.suptitle(title + "   (o predicted, ■ explained, x reported)", fontsize=10)
    return figure


def gil_figure(latencies, busy_counts, interval_ms):
    """Median (bar) and every latency (dots) of `/` against the CPU-bound requests running beside it, per server;
    the lines mark one and three switch intervals."""
    figure, axes = figures.subplots(figsize=(7, 3.4), layout="constrained")
    width = 0.8 / max(len(latencies), 1)
    for index, (label, by_busy) in enumerate(latencies.items()):
        for position, busy in enumerate(busy_counts):
            values = by_busy.get(busy)
            if not values:
                continue
            x = position + (index - (len(latencies) - 1) / 2) * width
            axes.bar(x, float(np.median(values)), width=width * 0.9, color=f"C{index}", alpha=0.35,
                     label=label if position == 0 else None)
            axes.scatter(np.full(len(values), x), values, color=f"C{index}", s=6, alpha=0.6)
    for times, style in ((1, "--"), (3, ":")):
        axes.axhline(times * interval_ms, color="black", linestyle=style, linewidth=1,
                     label=f"{times} switch interval{'s' if times > 1 else ''} ({times * interval_ms:g} ms)")
    axes.set_xticks(range(len(busy_counts)), [str(b) for b in busy_counts])
    axes.set_xlabel("CPU-bound requests running at the same time")
    axes.set_ylabel("latency of / (ms)")
    axes.set_yscale("symlog", linthresh=1)
    axes.legend(fontsize=8, loc="upper left")
    return figure


def _heatmap(axes, grid, workers, threads, norm, title):
    image = axes.imshow(grid, origin="lower", cmap="viridis", norm=norm, aspect="auto")
    axes.set_xticks(range(len(threads)), [str(t) for t in threads])
    axes.set_yticks(range(len(workers)), [str(w) for w in workers])
    axes.set_xlabel("threads per worker")
    axes.set_ylabel("workers")
    axes.set_title(title, fontsize=9)
    for row in range(len(workers)):
        for column in range(len(threads)):
            value = grid[row, column]
            if not math.isnan(value):
                bright = norm(value) > 0.6
                axes.text(column, row, f"{value:,.0f}", ha="center", va="center", fontsize=7,
                          color="black" if bright else "white")
    return image


def matrix_figure(lab, cells, workers, threads, article=None):
    """Per handler, the measured matrix and the predicted one on the same colour scale; for hello world, the
    article's figures too (a machine with more cores, so a scale of its own)."""
    handlers = [h for h in lab.handlers if any(c.handler == h for c in cells)]
    columns = 3 if article else 2
    figure, grid_axes = figures.subplots(len(handlers), columns, figsize=(4 * columns, 3.1 * len(handlers)),
                                         layout="constrained", squeeze=False)
    for row, handler in enumerate(handlers):
        measured = np.full((len(workers), len(threads)), math.nan)
        predicted = np.full_like(measured, math.nan)
        for cell in cells:
            if cell.handler == handler and cell.config.processes in workers and cell.config.threads in threads:
                spot = workers.index(cell.config.processes), threads.index(cell.config.threads)
                measured[spot], predicted[spot] = cell.rps, cell.predicted.rps
        both = np.concatenate([measured[~np.isnan(measured)], predicted[~np.isnan(predicted)]])
        norm = Normalize(vmin=0, vmax=float(both.max()) if both.size else 1)
        image = _heatmap(grid_axes[row][0], measured, workers, threads, norm, f"measured: {_handler_title(handler, lab)}")
        _heatmap(grid_axes[row][1], predicted, workers, threads, norm, "predicted from one worker's D")
        figure.colorbar(image, ax=list(grid_axes[row][:2]), label="req/s", shrink=0.8)
        if columns == 3:
            axes = grid_axes[row][2]
            if handler == "hello":
                _article_heatmap(figure, axes, article)
            else:
                axes.set_visible(False)
    return figure


def _article_heatmap(figure, axes, article):
    cells = article["cells"]
    workers = sorted({w for w, _ in cells})
    threads = sorted({t for _, t in cells})
    grid = np.full((len(workers), len(threads)), math.nan)
    for (w, t), (rps, _) in cells.items():
        grid[workers.index(w), threads.index(t)] = rps
    norm = Normalize(vmin=0, vmax=float(np.nanmax(grid)))
    image = _heatmap(axes, grid, workers, threads, norm, f"the article: Flask, {article['cores']} cores, wrk -c320")
    figure.colorbar(image, ax=axes, label="req/s", shrink=0.8)


def usl_figure(workers, rps, fit, check=None, most=None):
    """The measured points, the fitted USL curve, its peak, and the run that checked it."""
    figure, axes = figures.subplots(figsize=(7, 3.6), layout="constrained")
    top = max(max(workers), most or 0)
    n = np.linspace(1, top, 200)
    axes.plot(n, fit.predict(n), "-", color="C1",
              label=f"USL: X(1) = {fit.lam:,.0f}, σ = {fit.sigma:.3f}, κ = {fit.kappa:.4f}")
    axes.plot(n, fit.lam * n, ":", color="gray", label="linear: X(1) w (σ = κ = 0)")
    axes.scatter(workers, rps, color="C0", zorder=3, label="measured")
    if check is not None:
        peak_n, peak_rps, checked_rps = check
        axes.scatter([peak_n], [peak_rps], marker="*", s=160, color="C1", zorder=4, label="fitted peak")
        axes.scatter([peak_n], [checked_rps], marker="D", s=50, color="C3", zorder=4, label="the checking run")
    axes.set_ylim(0, max(max(rps), fit.predict(top)) * 1.3)
    axes.set_xlabel("sync workers (w)")
    axes.set_ylabel("requests per second")
    axes.legend(fontsize=8)
    return figure


def reference_figure(rows, article_rps=None):
    """Horizontal bars of hello-world throughput, nginx first; `rows` are (label, rps, demand_ms); the article's
    figures (another machine) as dotted lines."""
    figure, axes = figures.subplots(figsize=(8, 0.55 * len(rows) + 1.4), layout="constrained")
    labels = [f"{label}\n(D = {demand:.3g} ms)" for label, _, demand in rows]
    values = [rps for _, rps, _ in rows]
    axes.barh(range(len(rows)), values, color=["C2"] + ["C0"] * (len(rows) - 1))
    for y, value in enumerate(values):
        axes.text(value, y, f" {value:,.0f}", va="center", fontsize=8)
    for index, (label, value) in enumerate((article_rps or {}).items()):
        axes.axvline(value, color=f"C{index + 3}", linestyle=":", linewidth=1.5, label=label)
    axes.set_yticks(range(len(rows)), labels, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlim(0, max(values + list((article_rps or {}).values())) * 1.15)
    axes.set_xlabel("hello world, requests per second")
    if article_rps:
        axes.legend(fontsize=7, loc="lower right", title="the articles (8 cores)", title_fontsize=7)
    return figure
