"""Lesson 02's sweep drawn.

Throughput and mean latency against users, measured, with the bounds and the knee; draws, never
measures.
"""

from iolab import figures, neighbours

COLORS = {"async": "#1f77b4", "sync": "#d62728"}
LABELS = {"async": "non-blocking (await)", "sync": "blocking (time.sleep)"}
THEORY_STYLES = {
    "optimistic": dict(linestyle="--", linewidth=1.2),
    "pessimistic": dict(linestyle=":", linewidth=1.2),
    "in step": dict(linestyle="-.", linewidth=1.0),
    "MVA": dict(linestyle="-", linewidth=0.8, alpha=0.6),
}


def sweep_figure(sweeps, title=""):
    """Two panels, throughput and mean latency against users (log-log), for each Sweep in `sweeps`.

    Dots are measurements. Lines are theory from the measured demands: for
    throughput the optimistic and pessimistic bounds, the users-in-step
    prediction and MVA; for latency, runs of the same size simulated with users
    in step. A vertical line marks each handler's knee, (Z + D) / D_max.
    """
    figure, (rate_axes, latency_axes) = figures.subplots(1, 2, figsize=(11, 4.4), layout="constrained")
    for sweep in sweeps:
        color, label = COLORS.get(sweep.mode, "grey"), LABELS.get(sweep.mode, sweep.mode)
        users = sweep.users
        dense = sorted(set(users) | {round(users[-1] * i / 60) or 1 for i in range(1, 61)})
        curves = sweep.curves(dense)
        rate_axes.plot(users, [p.summary.rps for p in sweep.points], "o", color=color, label=f"{label}, measured")
        # Each run's own bounds, from the D it measured (the lines use one D, the busiest run's, for every population).
        rate_axes.vlines(users, [p.prediction.low_rps for p in sweep.points], [p.prediction.high_rps for p in sweep.points],
                         color=color, alpha=0.25, linewidth=5)
        latency_axes.plot(users, [p.summary.mean_ms for p in sweep.points], "o", color=color)
        latency_axes.plot(dense, curves["in step latency"], color=color, **THEORY_STYLES["in step"])
        for name, style in THEORY_STYLES.items():
            rate_axes.plot(dense, curves[name], color=color, **style)
        knee = sweep.knee_predicted()
        if users[0] <= knee <= users[-1]:
            for axes in (rate_axes, latency_axes):
                axes.axvline(knee, color=color, linewidth=0.8, alpha=0.5)
            rate_axes.text(knee, 0.03, f" knee N* = {knee:.0f}", transform=rate_axes.get_xaxis_transform(),
                           color=color, fontsize=8, rotation=90, va="bottom")
    for axes, ylabel in ((rate_axes, "throughput (req/s)"), (latency_axes, "mean latency (ms)")):
        axes.set(xscale="log", yscale="log", xlabel="users (concurrency)", ylabel=ylabel)
        axes.grid(True, which="both", alpha=0.2)
    rate_axes.set_title("throughput: the bottleneck sets the ceiling")
    latency_axes.set_title("mean latency, and as users in step would see it")
    # One legend entry per line style (theory) besides the measured dots, in grey: the colours say which handler.
    rate_axes.vlines([], [], [], color="grey", alpha=0.25, linewidth=5, label="each run's bounds, from its own D")
    for name, style in THEORY_STYLES.items():
        rate_axes.plot([], [], color="grey", **style, label=f"{name}, from the busiest run's D")
    rate_axes.legend(fontsize=7, loc="upper left")
    if title:
        figure.suptitle(title, fontsize=11)
    return figure


def others_held(measured):
    """The neighbours column: the share of a run other programs held the CPUs ("38%", or "unknown")."""
    return neighbours.held(measured.others)


def most_others_held(sweep):
    """The neighbours column of a sweep's row: the most others held of any of its runs, "unknown" if none read them."""
    read = [point.others for point in sweep.points if point.others is not None]
    return neighbours.held(max(read, key=lambda found: found.others_share) if read else None)
