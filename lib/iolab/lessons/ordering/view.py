"""Timelines of a handful of requests as Gantt bars.

When each was sent and when its answer came.
"""


from iolab import figures, neighbours

HANDLER_COLORS = {"A": "#d62728", "B": "#1f77b4", "C": "#2ca02c", "D": "#9467bd", "A′": "#ff7f0e"}


def request_timelines(runs, delay_ms, expectations=None, title=""):
    """One panel per run; `runs` maps a label such as "A,C" to its samples, in the order the requests were sent.

    Times are drawn in milliseconds from the first request's send. `expectations`
    maps the same labels to a sentence written under each panel.
    """
    figure = figures.figure(figsize=(11, 1.55 * len(runs) + 0.6), layout="constrained")
    axes_list = figure.subplots(len(runs), 1, sharex=True, squeeze=False)[:, 0]
    longest = max(s.end - samples[0].start for samples in runs.values() for s in samples) * 1000
    for axes, (label, samples) in zip(axes_list, runs.items()):
        handlers = label.split(",")
        t0 = samples[0].start
        for row, (handler, sample) in enumerate(zip(handlers, samples)):
            begin, end = (sample.start - t0) * 1000, (sample.end - t0) * 1000
            axes.barh(row, end - begin, left=begin, height=0.55, color=HANDLER_COLORS.get(handler, "grey"))
            axes.text(end + longest * 0.01, row, f"{handler} answered at {end:.0f} ms", va="center", fontsize=9)
        axes.axvline(delay_ms, color="grey", linestyle=":", linewidth=1)
        axes.set_yticks(range(len(handlers)), [f"{n + 1}. {h}" for n, h in enumerate(handlers)])
        axes.invert_yaxis()
        axes.set_ylim(len(handlers) - 0.4, -0.6)
        heading = f"order {label}"
        if expectations and label in expectations:
            heading += f" — expected: {expectations[label]}"
        axes.set_title(heading, loc="left", fontsize=10)
    axes_list[-1].set_xlabel("ms since the first request was sent (dotted line: one handler delay)")
    axes_list[-1].set_xlim(0, longest * 1.35)
    if title:
        figure.suptitle(title)
    return figures.render(figure)


def others_held(found):
    """The neighbours column: the share of a run (`found`: its Neighbours, or None) other programs held the CPUs."""
    return neighbours.held(found)
