"""Pictures of simulated banks.

The hall, the tellers and the lounge at an instant, as frames, strips and a player; draws, never
measures.
"""

import math

import ipywidgets as widgets
from matplotlib.patches import Rectangle

from iolab import figures, neighbours

COLORS = {"hall": "#1f77b4", "working": "#ff7f0e", "waiting": "#7f7f7f", "lounge": "#2ca02c", "idle": "#ffffff"}
TITLES = {"sync": "synchronous bank", "threaded": "threaded bank", "ticket": "ticket bank"}
PLAYER_FRAMES = 60


def bank_title(run):
    tellers = f"{run.tellers} teller" + ("s" if run.tellers > 1 else "")
    return f"{TITLES.get(run.bank, run.bank)} ({tellers})"


def _grid(count, capacity, x0, width):
    """Positions for `count` customers in a square-ish grid sized for `capacity`, inside [x0, x0 + width]."""
    columns = max(1, math.ceil(math.sqrt(capacity)))
    rows = max(1, math.ceil(capacity / columns))
    step_x, step_y = width / columns, 0.8 / rows
    return [
        (x0 + step_x * (i % columns + 0.5), 0.85 - step_y * (i // columns + 0.5))
        for i in range(count)
    ], min(step_x, step_y)


def draw_bank(axes, run, time):
    """The bank at `time`: customers waiting in the hall, the tellers (working, waiting with a customer, idle), the lounge."""
    snapshot = run.at(time)
    axes.set(xlim=(0, 3), ylim=(0, 1.12), xticks=[], yticks=[])
    for x0, label in ((0, "hall"), (1, "tellers"), (2, "lounge")):
        axes.add_patch(Rectangle((x0 + 0.03, 0.03), 0.94, 0.86, fill=False, linewidth=0.8, edgecolor="#999999"))
        axes.text(x0 + 0.5, 0.95, label, ha="center", va="bottom", fontsize=8)
    capacity = max(run.concurrency, 1)
    for place, count, x0 in (("hall", snapshot.hall, 0), ("lounge", snapshot.lounge, 2)):
        points, size = _grid(count, capacity, x0 + 0.06, 0.88)
        if points:
            xs, ys = zip(*points)
            axes.scatter(xs, ys, s=max(4, (size * 70) ** 2 / 4), color=COLORS[place], linewidths=0)
    height = 0.8 / run.tellers
    for teller in range(run.tellers):
        if teller < snapshot.working:
            state = "working"
        elif teller < snapshot.working + snapshot.waiting:
            state = "waiting"
        else:
            state = "idle"
        y = 0.85 - height * (teller + 1)
        axes.add_patch(
            Rectangle((1.2, y + height * 0.1), 0.6, height * 0.8, facecolor=COLORS[state], edgecolor="#444444",
                      linewidth=0.6, hatch="//" if state == "waiting" else None)
        )
        if state != "idle":  # the customer being served, standing at the counter
            axes.scatter([1.1], [y + height / 2], s=max(4, min(60, 400 * height)), color="#333333", linewidths=0)
    axes.set_xlabel(f"t = {time:.2f} s   done {snapshot.done}/{run.requests}", fontsize=8)


def legend_text():
    return ("blue: waiting in the hall for a teller; orange: a teller working; hatched grey: a teller waiting "
            "with the customer through their errands; green: customers running errands in the lounge.")


def frame_times(run, frames):
    """`frames` instants spread over the run, each in the middle of its slice, so none falls on a burst of moves."""
    end = max(s.time for s in run.timeline)
    return [end * (i + 0.5) / frames for i in range(frames)]


def strip_figure(runs, frames=6):
    """Small multiples: one row per bank, `frames` instants across each bank's own opening hours."""
    runs = list(runs.values()) if isinstance(runs, dict) else list(runs)
    figure = figures.figure(figsize=(2.1 * frames, 1.85 * len(runs)), layout="constrained")
    for band, run in zip(figure.subfigures(len(runs), 1, squeeze=False)[:, 0], runs):
        for axes, time in zip(band.subplots(1, frames, squeeze=False)[0], frame_times(run, frames)):
            draw_bank(axes, run, time)
        band.suptitle(f"{bank_title(run)}: {frames} moments of its {run.duration_s:.2f} s", fontsize=9)
    return figure


def frame_figure(run, time):
    figure = figures.figure(figsize=(4.8, 1.9), layout="constrained")
    draw_bank(figure.subplots(), run, time)
    figure.suptitle(bank_title(run), fontsize=9)
    return figure


def player(run, frames=PLAYER_FRAMES, interval_ms=150):
    """A Play button linked to a slider; each step draws the bank at that instant into an Image widget."""
    times = frame_times(run, frames)
    image = widgets.Image(format="png")
    play = widgets.Play(value=0, min=0, max=frames - 1, step=1, interval=interval_ms, description="play")
    slider = widgets.IntSlider(value=0, min=0, max=frames - 1, description="frame", continuous_update=True)
    widgets.jslink((play, "value"), (slider, "value"))
    label = widgets.HTML()

    def show(change=None):
        index = slider.value
        image.value = figures.render(frame_figure(run, times[index]), dpi=72).data
        label.value = f"<code>t = {times[index]:.2f} s of {times[-1] + times[0]:.2f} s</code>"

    slider.observe(show, names="value")
    show()
    return widgets.VBox([widgets.HBox([play, slider, label]), image])


def players(runs, frames=PLAYER_FRAMES):
    """One player per bank, side by side in tabs."""
    tabs = widgets.Tab(children=[player(run, frames) for run in runs.values()])
    for index, name in enumerate(runs):
        tabs.set_title(index, TITLES.get(name, name))
    return tabs


def occupancy_figure(runs, measured=None):
    """Who is where over time, per bank (stacked), with the measured requests in flight drawn over it when given.

    `measured` maps a bank to (times, in-flight counts) from the real run.
    """
    runs = dict(runs)
    figure = figures.figure(figsize=(4 * len(runs), 2.8), layout="constrained")
    for axes, (name, run) in zip(figure.subplots(1, len(runs), squeeze=False)[0], runs.items()):
        times = [s.time for s in run.timeline]
        layers = [
            ("hall", [s.hall for s in run.timeline]),
            ("at a counter", [s.working + s.waiting for s in run.timeline]),
            ("lounge", [s.lounge for s in run.timeline]),
        ]
        axes.stackplot(times, *[values for _, values in layers], labels=[label for label, _ in layers], step="post",
                       colors=[COLORS["hall"], COLORS["working"], COLORS["lounge"]], alpha=0.75)
        if measured and name in measured:
            real_times, counts = measured[name]
            axes.step(real_times, counts, where="post", color="black", linewidth=0.9, label="measured in flight")
        axes.set(title=bank_title(run), xlabel="time (s)", ylabel="customers", ylim=(0, run.concurrency * 1.15))
        axes.legend(loc="lower left", fontsize=7)
    return figure


def others_held(measured):
    """The neighbours column: the share of a bank's run other programs held the CPUs ("38%", or "unknown")."""
    return neighbours.held(measured.others)
