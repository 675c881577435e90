"""Live dashboards of load runs: latency per request, throughput against its bound, requests in flight; draws, never measures."""

import io
import time

from IPython.display import Image, display
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from . import metrics

REFRESH_HZ = 6  # the design asks for 5 Hz or more while a run is going
COLORS = {"ok": "#1f77b4", "error": "#d62728", "bound": "#2ca02c", "flight": "#9467bd"}


def render(figure, dpi=80):
    """A matplotlib Figure as a PNG Image; pyplot is never involved, so nothing else gets displayed."""
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return Image(data=buffer.getvalue(), format="png")


def dashboard_figure(samples, title, bound_rps=None, now_s=None, in_flight_history=None, bin_s=None):
    """Three panels over one time axis: latency of each request by its start, throughput per bin, requests in flight."""
    figure = Figure(figsize=(11, 3.4), layout="constrained")
    latency_axes, throughput_axes, flight_axes = figure.subplots(1, 3)
    end_s = max([now_s or 0.0] + [sample.end for sample in samples])
    horizon = max(end_s, 0.5)
    bin_s = bin_s or _bin_width(horizon)

    good = [s for s in samples if not s.error]
    bad = [s for s in samples if s.error]
    latency_axes.scatter([s.start for s in good], [s.latency * 1000 for s in good], s=9, color=COLORS["ok"])
    if bad:
        latency_axes.scatter(
            [s.start for s in bad], [s.latency * 1000 for s in bad], s=18, marker="x", color=COLORS["error"],
            label=f"{len(bad)} errors",
        )
        latency_axes.legend(loc="upper left", fontsize=8)
    latency_axes.set(title="latency of each request", xlabel="sent at (s)", ylabel="latency (ms)", xlim=(0, horizon))

    starts, rates = metrics.throughput_over_time(samples, bin_s, until_s=end_s)
    throughput_axes.bar(starts, rates, width=bin_s, align="edge", color=COLORS["ok"], alpha=0.8)
    if bound_rps:
        throughput_axes.axhline(bound_rps, color=COLORS["bound"], linestyle="--", label=f"bound {bound_rps:.3g} req/s")
        throughput_axes.legend(loc="upper right", fontsize=8)
    throughput_axes.set(title=f"throughput per {bin_s:g} s", xlabel="time (s)", ylabel="req/s", xlim=(0, horizon))

    if in_flight_history:
        times, counts = zip(*in_flight_history)
    else:
        times, counts = metrics.in_flight_over_time(samples, until_s=end_s)
    flight_axes.step(times, counts, where="post", color=COLORS["flight"])
    flight_axes.set(title="requests in flight", xlabel="time (s)", ylabel="in flight", xlim=(0, horizon))
    flight_axes.set_ylim(bottom=0)
    figure.suptitle(title, fontsize=11)
    return figure


def _bin_width(horizon_s):
    # About 20 bars whatever the run's length, on round numbers.
    for width in (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30):
        if horizon_s / width <= 25:
            return width
    return 60


class Dashboard:
    """Redraws a running LoadRun at REFRESH_HZ in one display slot; the final frame stays as a static image.

    By default it draws into the cell's output through a display handle. Given an
    ipywidgets.Image it draws there instead: display handles cannot be updated
    from inside a widget's Output area, an Image widget's value can.
    """

    def __init__(self, title, bound_rps=None, image=None):
        self.title = title
        self.bound_rps = bound_rps
        self.image = image
        self.frames = 0
        self._handle = None

    def draw(self, samples, now_s=None, in_flight_history=None, subtitle=""):
        figure = dashboard_figure(
            samples, f"{self.title}{subtitle}", self.bound_rps, now_s=now_s, in_flight_history=in_flight_history
        )
        image = render(figure)
        if self.image is not None:
            self.image.value = image.data
        elif self._handle is None:
            self._handle = display(image, display_id=True)
        else:
            self._handle.update(image)
        self.frames += 1

    def follow(self, run):
        """Draw `run` until it ends, then draw its final frame and return its LoadResult."""
        history = []
        period = 1 / REFRESH_HZ
        while not run.done():
            began = time.monotonic()
            samples = run.samples()
            now = run.client_time_s
            history.append((now, run.in_flight))
            self.draw(samples, now_s=now, in_flight_history=history, subtitle=f" — {len(samples)} done, running")
            time.sleep(max(0.0, period - (time.monotonic() - began)))
        result = run.wait()
        self.show(result)
        return result

    def show(self, result):
        """The finished run, with exact in-flight counts and its headline figures in the title."""
        summary = metrics.summarize(result)
        note = f" — {summary.rps:.2f} req/s, mean {summary.mean_ms:.0f} ms, {summary.errors} errors"
        self.draw(result.samples, subtitle=note)


def follow(run, title, bound_rps=None):
    """Shorthand: a new Dashboard following `run`; returns the LoadResult."""
    return Dashboard(title, bound_rps).follow(run)
