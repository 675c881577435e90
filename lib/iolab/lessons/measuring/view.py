"""Lesson 09's figures.

Percentile spectra on HdrHistogram's axis, latency by send time, open and closed curves against their predictions.
"""

import math

from matplotlib.ticker import FixedLocator, NullFormatter

from iolab import figures, neighbours

NINES = (0.5, 0.9, 0.99, 0.999, 0.9999)


def _nines_axis(axes):
    axes.set_xscale("log")
    axes.xaxis.set_major_locator(FixedLocator([1 / (1 - p) for p in NINES]))
    axes.xaxis.set_major_formatter(lambda x, _: f"{100 * (1 - 1 / x):.4g}%")
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_xlabel("percentile (axis: 1 / (1 − p), so 90%, 99%, 99.9% are equally spaced)")


def spectra(curves, title, marks=None):
    """{label: [(fraction, ms)]} as HdrHistogram plots them; `marks` {label: (fraction, ms)} are predictions."""
    fig, axes = figures.subplots(figsize=(10, 4.2), layout="constrained")
    for label, points in curves.items():
        points = [(f, ms) for f, ms in points if f < 1]
        axes.step([1 / (1 - f) for f, _ in points], [max(ms, 1e-3) for _, ms in points], where="post", label=label)
    for label, (fraction, ms) in (marks or {}).items():
        axes.plot([1 / (1 - fraction)], [ms], "k*", markersize=11)
        axes.annotate(label, (1 / (1 - fraction), ms), textcoords="offset points", xytext=(6, -12), fontsize=8)
    _nines_axis(axes)
    axes.set_yscale("log")
    axes.set_ylabel("latency (ms, log scale)")
    axes.set_title(title)
    axes.legend(loc="upper left")
    return fig


def by_send_time(runs, stall_from_s, stall_s):
    """Each request's latency against when it was (meant to be) sent, one panel per client; the stall shaded."""
    fig, panels = figures.subplots(1, len(runs), figsize=(11, 3.6), layout="constrained", sharey=True)
    panels = panels if len(runs) > 1 else [panels]
    for axes, run in zip(panels, runs):
        axes.axvspan(run.stall_from_s, run.stall_from_s + run.stall_s, color="tab:red", alpha=0.15, label="server stopped")
        axes.plot([t for t, _ in run.points], [ms for _, ms in run.points], ".", markersize=2)
        axes.set_yscale("log")
        axes.set_xlabel("intended send (s into the run)")
        axes.set_title(f"{run.client}: {run.requests} requests")
    panels[0].set_ylabel("latency (ms, log scale)")
    panels[0].legend(loc="upper right")
    return fig


def open_vs_closed(points):
    """Mean latency against offered load, measured (markers) and predicted (lines), open and closed."""
    fig, axes = figures.subplots(figsize=(9, 4.2), layout="constrained")
    loads = [p.load for p in points]
    finite = lambda v: v if math.isfinite(v) else math.nan  # noqa: E731
    axes.plot(loads, [finite(p.predicted_open_ms) for p in points], "-", color="tab:orange", label="open: M/D/1 predicted")
    axes.plot(loads, [finite(p.band_open_ms[1]) for p in points], "x", color="tab:orange",
              label="open: its own sends, one ideal server")
    axes.plot(loads, [p.open.mean_ms for p in points], "o", color="tab:orange", label="open: measured")
    axes.plot(loads, [p.predicted_closed_ms for p in points], "-", color="tab:blue", label="closed: MVA predicted")
    axes.plot(loads, [p.closed.mean_ms for p in points], "s", color="tab:blue", label="closed: measured")
    axes.axvline(1.0, color="gray", linestyle=":", label="1 / D")
    axes.set_yscale("log")
    axes.set_xlabel("offered load (share of 1 / D)")
    axes.set_ylabel("mean latency (ms, log scale)")
    axes.legend()
    return fig


def queue_growing(points, title):
    """An open loop's latencies against send time past 1 / D: the line keeps growing."""
    fig, axes = figures.subplots(figsize=(9, 3.4), layout="constrained")
    axes.plot([t for t, _ in points], [ms for _, ms in points], ".", markersize=2)
    axes.set_xlabel("intended send (s into the run)")
    axes.set_ylabel("latency (ms)")
    axes.set_title(title)
    return fig


def others_held(run):
    """The neighbours column: the share of a run (a StallRun, or a point's loop) other programs held the CPUs."""
    return neighbours.held(run.others)


def others_held_both(point):
    """An open-or-closed point's neighbours cell: its closed run's share, then its open run's ("12% / 30%")."""
    return f"{neighbours.held(point.others_closed)} / {neighbours.held(point.others_open)}"
