"""Draws the hand-built loop's iteration trace.

Events per iteration, and time in select() against time in callbacks; never measures.
"""

import math

from iolab import figures, neighbours

COLORS = {"select": "#9ecae1", "callbacks": "#e6550d", "events": "#3182bd", "phase": "#f0f0f0"}


def _spread(totals, start_s, duration_s, bin_s):
    """Add the interval [start, start + duration) to `totals` (ms per bin), split across the bins it covers."""
    end_s = start_s + duration_s
    index = max(0, int(start_s / bin_s))
    while index < len(totals) and index * bin_s < end_s:
        overlap = min(end_s, (index + 1) * bin_s) - max(start_s, index * bin_s)
        totals[index] += max(0.0, overlap) * 1000
        index += 1


def binned_shares(iterations, origin, bin_s):
    """Per bin of `bin_s` seconds: (bin start, ms in select, ms in callbacks), long waits split across the bins they span."""
    end = max(it["t"] - origin + (it["select_ms"] + it["callbacks_ms"]) / 1000 for it in iterations)
    bins = max(1, math.ceil(end / bin_s - 1e-9))  # the tolerance keeps float noise from adding an empty bin
    select_ms, callbacks_ms = [0.0] * bins, [0.0] * bins
    for it in iterations:
        began = it["t"] - origin
        _spread(select_ms, began, it["select_ms"] / 1000, bin_s)
        _spread(callbacks_ms, began + it["select_ms"] / 1000, it["callbacks_ms"] / 1000, bin_s)
    return [i * bin_s for i in range(bins)], select_ms, callbacks_ms


def trace_figure(iterations, phases=(), bin_s=0.05, margin_s=0.1, title="the loop, iteration by iteration"):
    """Two panels: the events each iteration handled, and where each time bin went (select vs callbacks).

    `phases` is a list of (start, end, label) on the trace's clock (time.monotonic()),
    drawn as shaded spans; when given, the plot is cut to them, plus `margin_s` either side.
    """
    if not iterations:
        raise ValueError("the trace is empty: was the server started with --trace PATH, and did anything happen?")
    if phases:
        origin = min(start for start, _, _ in phases) - margin_s
        until = max(end for _, end, _ in phases) + margin_s
        iterations = [it for it in iterations
                      if origin <= it["t"] + (it["select_ms"] + it["callbacks_ms"]) / 1000 and it["t"] < until]
    else:
        origin = iterations[0]["t"]
        until = iterations[-1]["t"] + (iterations[-1]["select_ms"] + iterations[-1]["callbacks_ms"]) / 1000
    figure, (events_axes, time_axes) = figures.subplots(2, 1, figsize=(10, 5.5), sharex=True)
    for axes in (events_axes, time_axes):
        for start, end, _ in phases:
            axes.axvspan(start - origin, end - origin, color=COLORS["phase"], zorder=0)
    for start, _, label in phases:
        events_axes.annotate(label, (start - origin, 1.0), xycoords=("data", "axes fraction"),
                             va="bottom", fontsize=9, xytext=(0, 2), textcoords="offset points")

    times = [it["t"] - origin for it in iterations]
    events_axes.vlines(times, 0, [it["events"] + it["ready"] for it in iterations], color=COLORS["callbacks"],
                       linewidth=0.8, label="+ timers and call_soon callbacks")
    events_axes.vlines(times, 0, [it["events"] for it in iterations], color=COLORS["events"], linewidth=0.8,
                       label="sockets select() returned")
    events_axes.set_ylabel("per iteration")
    events_axes.set_title(f"{title}: {len(iterations):,} iterations", pad=16)
    events_axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)

    starts, select_ms, callbacks_ms = binned_shares(iterations, origin, bin_s)
    scale = 100 / (bin_s * 1000)  # ms per bin -> percent of the bin
    time_axes.bar(starts, [ms * scale for ms in callbacks_ms], width=bin_s, align="edge",
                  color=COLORS["callbacks"], label="running callbacks")
    time_axes.bar(starts, [ms * scale for ms in select_ms], width=bin_s, align="edge",
                  bottom=[ms * scale for ms in callbacks_ms], color=COLORS["select"], label="waiting in select()")
    time_axes.set_ylim(0, 105)
    time_axes.set_xlim(0, until - origin)
    time_axes.set_ylabel(f"% of each {bin_s * 1000:.0f} ms")
    time_axes.set_xlabel("time (s)")
    time_axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    figure.tight_layout()
    return figure


def others_held(row):
    """The neighbours column: the share of a run (a row with its "neighbours", as the results keep them) other
    programs held the CPUs ("38%", or "unknown")."""
    return neighbours.held(row.get("neighbours"))
