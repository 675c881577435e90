"""Lesson 11's timelines, one row per call.

Lesson 11's timelines: one row per call, from the moment it was sent to its answer.
"""

from iolab import figures, neighbours

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")


def timelines(rows, title):
    """One panel per fan-out (`rows`: {name: a row with calls_timed, T_ms, rounds, predicted_s}), calls as bars."""
    figure = figures.figure(figsize=(11, 1.0 + 1.5 * len(rows)), layout="constrained")
    panels = figure.subplots(len(rows), 1, squeeze=False)[:, 0]
    for index, (axes, (name, row)) in enumerate(zip(panels, rows.items())):
        calls = row["calls_timed"]
        for number, (sent, answered) in enumerate(calls):
            axes.plot([sent * 1000, answered * 1000], [number, number], color=COLORS[index % len(COLORS)],
                      linewidth=max(0.6, min(4.0, 60 / len(calls))), solid_capstyle="butt")
        for k in range(1, row["rounds"] + 1):  # each round of Z the prediction counts
            axes.axvline(k * row["T_ms"], color="grey", linestyle=":", linewidth=0.8)
        axes.set_xlim(0, row["measured_s"] * 1000 * 1.05)
        axes.invert_yaxis()
        axes.set_yticks([])
        axes.set_ylabel(f"{len(calls)} calls", fontsize=8)
        rounds = f"{row['rounds']} round{'s' if row['rounds'] != 1 else ''}"
        axes.set_title(f"{name}: at most {row['limit']} at once, {rounds} of {row['T_ms']:.0f} ms;"
                       f" predicted {row['predicted_s'] * 1000:.0f} ms, measured {row['measured_s'] * 1000:.0f} ms",
                       loc="left", fontsize=9)
    panels[-1].set_xlabel("ms since the first call was sent (dotted lines: each round of Z)")
    figure.suptitle(title)
    return figures.render(figure)


def others_held(row):
    """The neighbours column: the share of the run other programs held this machine's CPUs (iolab.neighbours)."""
    return neighbours.held(row.get("neighbours"))
