"""Draws the IO-model runs.

Stevens-style timelines, comparison-table rows, the select-vs-epoll plot. Never measures.
"""

from matplotlib.collections import LineCollection
from matplotlib.patches import Rectangle

from iolab import figures, neighbours

LANE_Y = {"app": 1.0, "kernel": 0.0}
HALF = 0.22  # half the height of a lane's bar
SPAN_STYLE = {
    "wait": dict(facecolor="#cfdcec", edgecolor="#7d96b8", label="kernel: waiting for data"),
    "copy": dict(facecolor="#f0a030", edgecolor="#b06d00", label="kernel: copying to user space"),
    "blocked": dict(facecolor="#f6c6c4", edgecolor="#c0392b", hatch="///", label="app: blocked in a system call"),
    "busy": dict(facecolor="#e67e22", edgecolor="#a04000", label="app: spinning, burning CPU"),
    "work": dict(facecolor="#b8e0b0", edgecolor="#3c8d2f", label="app: doing its own work"),
}
ARROW_COLOR = {"call": "#333333", "return": "#333333", "signal": "#8e44ad", "completion": "#1e8449"}
DOWN, UP = ("call",), ("return", "signal", "completion")


def _lane_bars(ax, run, x0, x1):
    for span in run.spans:
        y = LANE_Y[span.lane]
        width = max(span.end_ms - span.start_ms, 1e-6)
        ax.broken_barh([(span.start_ms, width)], (y - HALF, 2 * HALF), linewidth=0.8, **SPAN_STYLE[span.kind])
        shown = min(span.end_ms, x1) - max(span.start_ms, x0)
        if span.lane == "app" and span.label and shown > (x1 - x0) / 4:
            ax.text(max(span.start_ms, x0) + (x1 - x0) / 100, y, span.label, fontsize=7, va="center", clip_on=True)


class _Labels:
    """Puts short labels on a few rows each, never overlapping; a label with no free row is left out."""

    def __init__(self, ax, x0, x1, fontsize=7):
        self.ax, self.x0, self.x1, self.fontsize = ax, x0, x1, fontsize
        char_px = fontsize * ax.figure.dpi / 72 * 0.6  # an average character is about 0.6 em wide
        self.ms_per_char = (x1 - x0) * char_px / max(ax.bbox.width, 1.0)
        self.taken = {}

    def add(self, t_ms, rows, text, color):
        width = (len(text) + 1) * self.ms_per_char
        flip = t_ms > self.x0 + 0.7 * (self.x1 - self.x0)  # near the right edge the label goes left of its mark
        low, high = (t_ms - width, t_ms) if flip else (t_ms, t_ms + width)
        for y, va in rows:
            taken = self.taken.setdefault(y, [])
            if all(high <= a or low >= b for a, b in taken):
                taken.append((low, high))
                self.ax.text(t_ms, y, f"{text} " if flip else f" {text}", fontsize=self.fontsize, va=va,
                             ha="right" if flip else "left", color=color, clip_on=True)
                return


CALL_ROWS = [(1 + HALF + 0.05, "bottom")]
ANSWER_ROWS = [(0.62, "center"), (0.38, "center")]
KERNEL_ROWS = [(-HALF - 0.1, "top"), (-HALF - 0.32, "top")]


def _arrows_and_marks(ax, run, x0, x1):
    """Arrows for calls (app -> kernel) and returns/signals/completions (kernel -> app), marks for what the kernel saw."""
    # Each EAGAIN is a round trip app -> kernel -> app; thousands of them become a rug of ticks
    # (its gaps are moments when the scheduler took the CPU away from the spinning thread).
    eagain = [event.t_ms for event in run.events if event.kind == "eagain" and x0 <= event.t_ms <= x1]
    ax.add_collection(LineCollection([((t, 0.38), (t, 0.62)) for t in eagain], colors="#c0392b", linewidths=0.3))
    labels = _Labels(ax, x0, x1)
    for event in run.events:
        if not (x0 <= event.t_ms <= x1) or event.kind == "eagain":
            continue
        if event.kind in DOWN + UP:
            start, end = (1 - HALF, HALF) if event.kind in DOWN else (HALF, 1 - HALF)
            ax.annotate("", xy=(event.t_ms, end), xytext=(event.t_ms, start),
                        arrowprops=dict(arrowstyle="-|>", color=ARROW_COLOR[event.kind], lw=1.0))
            rows = CALL_ROWS if event.kind in DOWN else ANSWER_ROWS
        else:  # something the kernel saw: the peer's data arriving, the emulated kernel's steps
            ax.plot([event.t_ms], [-HALF - 0.04], marker="^", color="#2c3e50", markersize=5, clip_on=False)
            rows = KERNEL_ROWS
        if event.label:
            labels.add(event.t_ms, rows, event.label, ARROW_COLOR.get(event.kind, "#2c3e50"))


def _frame(ax, x0, x1, title):
    ax.set_xlim(x0, x1)
    ax.set_ylim(-0.75, 1.6)
    ax.set_yticks([0, 1], ["kernel", "application"])
    ax.set_title(title, fontsize=9, loc="left")
    ax.grid(axis="x", alpha=0.3)


def timeline(run, fig=None, zoom_pad_ms=0.15):
    """The run's trace as two lanes; left the whole run, right a zoom on the (last) copy phase."""
    fig = fig or figures.figure(figsize=(12, 2.7))
    full, zoom = fig.subplots(1, 2, gridspec_kw={"width_ratios": [5, 2]})
    end = max([span.end_ms for span in run.spans] + [event.t_ms for event in run.events])
    copy = max((span for span in run.spans if span.kind == "copy"), key=lambda span: span.end_ms)
    # The zoom runs from the peer's send (unless that was long before) through the last
    # copy to the moment the application hears of it.
    sent = max((e.t_ms for e in run.events if e.kind == "data" and e.t_ms <= copy.start_ms), default=copy.start_ms)
    told = min((e.t_ms for e in run.events if e.kind in UP and e.t_ms >= copy.start_ms), default=copy.end_ms)
    first = sent if copy.start_ms - sent < 1.0 else copy.start_ms
    zoomed = (first - zoom_pad_ms, max(copy.end_ms, told) + zoom_pad_ms)
    for ax, (x0, x1) in ((full, (0, end * 1.02)), (zoom, zoomed)):
        ax.set_xlim(x0, x1)
        _lane_bars(ax, run, x0, x1)
        _arrows_and_marks(ax, run, x0, x1)
    _frame(full, 0, end * 1.02,
           f"{run.model}: waited {run.wait_ms:.1f} ms, copied in {run.copy_ms * 1000:.0f} µs, "
           f"CPU burnt on the IO {run.cpu_ms:.1f} ms, own work done {run.work_ms:.1f} ms")
    _frame(zoom, *zoomed, "zoom on the copy")
    full.set_xlabel("ms since the application asked")
    zoom.set_xlabel("ms")
    zoom.set_yticklabels([])
    kinds = {span.kind for span in run.spans}
    handles = [Rectangle((0, 0), 1, 1, **SPAN_STYLE[kind]) for kind in SPAN_STYLE if kind in kinds]
    full.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.28), ncol=len(handles), frameon=False)
    fig.tight_layout()
    return fig


COMPARISON_HEADERS = [
    "model", "blocks while waiting", "blocks while copying", "wait (ms)", "copy (µs)", "CPU burnt on the IO (ms)",
    "queued for a CPU (ms)", "own work done meanwhile (ms)", "IO system calls", "wakeups", neighbours.COLUMN,
]


def comparison_rows(runs):
    """One row per run under COMPARISON_HEADERS: who blocks in each phase, and what the run cost the application."""
    return [
        [run.model, run.blocks["wait"], run.blocks["copy"], run.wait_ms, run.copy_ms * 1000, run.cpu_ms,
         run.queued_ms, run.work_ms, run.calls, run.wakeups, others_held(run)]
        for run in runs
    ]


def others_held(run):
    """The neighbours column: the share of a model's run other programs held the CPUs ("38%", or "unknown")."""
    return neighbours.held(run.others)


def wait_cost_plot(rows, slopes, fd_setsize=1024, ax=None):
    """Median µs per wait against watched descriptors, one line per mechanism, slopes in the legend."""
    ax = ax or figures.figure(figsize=(8, 4.5)).add_subplot()
    for mechanism, style in (("select", "o-"), ("poll", "s--"), ("epoll", "^-")):
        points = [(row["fds"], row[f"{mechanism}_us"]) for row in rows if row.get(f"{mechanism}_us") is not None]
        if points:
            slope = slopes.get(mechanism)
            label = mechanism + (f": {slope:.2f} µs per 1000 fds" if slope is not None else "")
            ax.plot(*zip(*points), style, label=label, markersize=4)
            if mechanism == "epoll":  # flat lines hide their values on a linear axis: say them
                for (fds, us), ha in ((points[0], "left"), (points[-1], "right")):
                    ax.annotate(f"{us:.1f} µs", (fds, us), textcoords="offset points", xytext=(0, 8), fontsize=8, ha=ha)
    ax.axvline(fd_setsize, color="#c0392b", linestyle=":", linewidth=1)
    ax.text(fd_setsize, ax.get_ylim()[1] * 0.95, " FD_SETSIZE: select() stops here", color="#c0392b", fontsize=8, va="top")
    ax.set_xlabel("watched descriptors (exactly one ready)")
    ax.set_ylabel("µs per wait (median)")
    ax.set_title("The cost of one wait: select and poll scan every descriptor, epoll does not", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend()
    return ax
