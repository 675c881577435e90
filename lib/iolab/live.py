"""Live dashboards of load runs.

Latency per request, throughput against its bound, requests in flight; draws, never measures.
"""

import io
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from IPython.display import Image, display
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image as PILImage

from . import figures, metrics
from .clients.aggregate import Aggregate
from .figures import render  # lesson notebooks call live.render; figures owns it

if TYPE_CHECKING:  # annotations only: a dashboard draws what load ran
    from .load import LoadResult, LoadRun, Sample

# One bound (req/s), or several by label; NaN and None are drawn as nothing.
Bounds = float | dict[str, float] | dict[str, float | None] | None

REFRESH_HZ = 6  # the design asks for 5 Hz or more while a run is going
COLORS = {"ok": "#1f77b4", "error": "#d62728", "bound": "#2ca02c", "flight": "#9467bd"}
AGGREGATED_LATENCY_TITLE = "mean latency, by when sent"  # an aggregated run keeps no single request
PANELS = (
    ("latency of each request", "sent at (s)", "latency (ms)"),
    ("throughput", "time (s)", "req/s"),
    ("requests in flight", "time (s)", "in flight"),
)


def bin_width(horizon_s: float) -> float:
    """About 20 bars whatever the run's length, on round numbers."""
    for width in (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30):
        if horizon_s / width <= 25:
            return width
    return 60


def latency_points(
    samples: "Aggregate | Sequence[Sample]", width: float, until_s: float
) -> tuple[np.ndarray, np.ndarray, int]:
    """(ok, failed) arrays of (sent at s, latency ms): one point per request, or for an Aggregate one per bin of
    `width` (its mean latency, and its worst where the bin had failures); and how many failed."""
    if isinstance(samples, Aggregate):
        mean_s, worst_s = samples.latency_per_bin(width, max(until_s, width))
        starts = np.arange(len(mean_s)) * width
        failed = samples.failures_per_bin(width, max(until_s, width))[: len(mean_s)] > 0
        sent = ~np.isnan(mean_s)
        ok = np.column_stack((starts[sent], mean_s[sent] * 1000))
        bad = np.column_stack((starts[sent & failed], worst_s[sent & failed] * 1000))
        return ok, bad, samples.errors
    ok = np.array([(s.start, s.latency * 1000) for s in samples if not s.error]).reshape(-1, 2)
    bad = np.array([(s.start, s.latency * 1000) for s in samples if s.error]).reshape(-1, 2)
    return ok, bad, len(bad)


def _horizon(samples: "Aggregate | Sequence[Sample]") -> float:
    if isinstance(samples, Aggregate):
        return max(0.5, samples.last_end)
    return max([0.5] + [sample.end for sample in samples])


def bound_lines(bound_rps: Bounds) -> list[tuple[str, float]]:
    """[(label, req/s), ...] from a single bound (a number) or several ({label: req/s}); NaN and None are left out."""
    if not bound_rps:
        return []
    items = bound_rps.items() if isinstance(bound_rps, dict) else [("bound", bound_rps)]
    return [(label, value) for label, value in items if value is not None and value == value]


def draw_bounds(axes: Axes, bound_rps: Bounds) -> None:
    """Dashed lines for the bounds on the throughput axes; between the lowest and highest, a shaded band."""
    lines = bound_lines(bound_rps)
    for index, (label, value) in enumerate(sorted(lines, key=lambda line: -line[1])):
        axes.axhline(value, color=COLORS["bound"], linestyle=("--", ":", "-.")[index % 3], label=f"{label} {value:.3g} req/s")
    if len(lines) > 1:
        values = [value for _, value in lines]
        axes.axhspan(min(values), max(values), color=COLORS["bound"], alpha=0.12, linewidth=0)
    if lines:
        axes.legend(loc="lower right", fontsize=8)


def dashboard_figure(samples: "Aggregate | Sequence[Sample]", title: str, bound_rps: Bounds = None) -> Figure:
    """The finished run as a static figure: one dot per request (per time bin when aggregated), throughput per bin,
    exact requests in flight."""
    figure, (latency_axes, throughput_axes, flight_axes) = figures.subplots(1, 3, figsize=(11, 3.4), layout="constrained")
    horizon = _horizon(samples)
    width = bin_width(horizon)
    good, bad, errors = latency_points(samples, width, horizon)
    latency_axes.scatter(good[:, 0], good[:, 1], s=9, color=COLORS["ok"])
    if len(bad):
        latency_axes.scatter(
            bad[:, 0], bad[:, 1], s=18, marker="x", color=COLORS["error"], label=f"{errors} errors",
        )
        latency_axes.legend(loc="upper left", fontsize=8)
    starts, rates = metrics.throughput_over_time(samples, width, until_s=horizon)
    throughput_axes.bar(starts, rates, width=width, align="edge", color=COLORS["ok"], alpha=0.8)
    draw_bounds(throughput_axes, bound_rps)
    times, counts = metrics.in_flight_over_time(samples, until_s=horizon)
    flight_axes.step(times, counts, where="post", color=COLORS["flight"])
    for axes, (name, xlabel, ylabel) in zip((latency_axes, throughput_axes, flight_axes), PANELS):
        axes.set(title=name, xlabel=xlabel, ylabel=ylabel, xlim=(0, horizon))
        axes.set_ylim(bottom=0)
    throughput_axes.set_title(f"throughput per {width:g} s")
    if isinstance(samples, Aggregate):
        latency_axes.set_title(AGGREGATED_LATENCY_TITLE)
    figure.suptitle(title, fontsize=11)
    return figure


class LiveFigure:
    """A dashboard figure for frames: axes drawn once, data blitted on top, so a frame costs milliseconds.

    Drawing tick labels is most of matplotlib's time, and 5 frames a second of
    that would take a whole core from the server being measured. The axes are
    redrawn only when the data outgrows their limits, which then double.
    """

    def __init__(
        self, title: str, bound_rps: Bounds = None, horizon_s: float = 2.0, concurrency: int = 1, aggregated: bool = False
    ) -> None:
        self.title = title
        self.bound_rps = bound_rps
        self.figure = figures.figure(figsize=(11, 3.4), dpi=72)
        self.canvas = cast(FigureCanvasAgg, self.figure.canvas)  # Agg, whose buffer the frames are copied from
        self.figure.subplots_adjust(left=0.06, right=0.985, bottom=0.16, top=0.8, wspace=0.3)
        self.axes = self.figure.subplots(1, 3)
        latency_axes, throughput_axes, flight_axes = self.axes
        for axes, (name, xlabel, ylabel) in zip(self.axes, PANELS):
            axes.set(title=name, xlabel=xlabel, ylabel=ylabel)
        if aggregated:
            latency_axes.set_title(AGGREGATED_LATENCY_TITLE)
        self.dots = latency_axes.scatter([], [], s=9, color=COLORS["ok"], animated=True)
        self.crosses = latency_axes.scatter([], [], s=18, marker="x", color=COLORS["error"], animated=True)
        self.bars = throughput_axes.stairs([0], [0, 1], fill=True, color=COLORS["ok"], alpha=0.8, animated=True)
        (self.flight,) = flight_axes.step([], [], where="post", color=COLORS["flight"], animated=True)
        self.heading = self.figure.suptitle(title, fontsize=11, animated=True)
        draw_bounds(throughput_axes, bound_rps)
        self.limits = {
            "time": horizon_s,
            "latency": 100.0,
            "rate": max([10] + [value for _, value in bound_lines(bound_rps)]) * 1.25,
            "flight": max(concurrency * 1.15, 2),
        }
        self._background: Any = None

    def _grow(self, name: str, needed: float) -> bool:
        if needed <= self.limits[name]:
            return False
        while self.limits[name] < needed:
            self.limits[name] *= 2
        return True

    def _draw_axes(self) -> None:
        latency_axes, throughput_axes, flight_axes = self.axes
        for axes in self.axes:
            axes.set_xlim(0, self.limits["time"])
        latency_axes.set_ylim(0, self.limits["latency"])
        throughput_axes.set_ylim(0, self.limits["rate"])
        throughput_axes.set_title(f"throughput per {bin_width(self.limits['time']):g} s")
        flight_axes.set_ylim(0, self.limits["flight"])
        self.canvas.draw()
        self._background = self.canvas.copy_from_bbox(self.figure.bbox)

    def frame(
        self,
        samples: "Aggregate | Sequence[Sample]",
        now_s: float,
        in_flight_history: Sequence[tuple[float, int]],
        note: str = "",
    ) -> bytes:
        """PNG bytes of the run so far: `samples` a list of Sample or an Aggregate."""
        width = bin_width(self.limits["time"])
        good, bad, _ = latency_points(samples, width, now_s)
        _, rates = metrics.throughput_over_time(samples, width, until_s=max(now_s, width))
        times, counts = zip(*in_flight_history) if in_flight_history else ((), ())
        grown = [
            self._grow("time", now_s * 1.1),
            self._grow("latency", max([0.0, *good[:, 1], *bad[:, 1]]) * 1.1),
            self._grow("rate", max(rates, default=0) * 1.1),
            self._grow("flight", max(counts, default=0) * 1.1),
        ]
        if any(grown) or self._background is None:
            self._draw_axes()
            if grown[0]:  # a wider time axis means wider bins
                width = bin_width(self.limits["time"])
                _, rates = metrics.throughput_over_time(samples, width, until_s=max(now_s, width))
                good, bad, _ = latency_points(samples, width, now_s)
        self.canvas.restore_region(self._background)
        self.dots.set_offsets(good)
        self.crosses.set_offsets(bad)
        self.bars.set_data(rates, np.arange(len(rates) + 1) * width)
        self.flight.set_data(times, counts)
        self.heading.set_text(self.title + note)
        for axes, artist in zip(self.axes[[0, 0, 1, 2]], (self.dots, self.crosses, self.bars, self.flight)):
            axes.draw_artist(artist)
        self.figure.draw_artist(self.heading)
        image = PILImage.frombuffer("RGBA", self.canvas.get_width_height(), self.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        buffer = io.BytesIO()
        image.save(buffer, format="png", compress_level=1)  # speed over size: the frame is replaced in a moment
        return buffer.getvalue()


class Dashboard:
    """Redraws a running LoadRun at REFRESH_HZ in one display slot; the final frame stays as a static image.

    By default it draws into the cell's output through a display handle. Given an
    ipywidgets.Image it draws there instead: display handles cannot be updated
    from inside a widget's Output area, an Image widget's value can.
    """

    def __init__(
        self,
        title: str,
        bound_rps: Bounds = None,
        image: Any = None,
        final_bounds: "Callable[[LoadResult], Bounds] | None" = None,
    ) -> None:
        self.title = title
        self.bound_rps = bound_rps
        # final_bounds(result) -> bounds for the last frame, once the run has measured what they need (its CPU).
        self.final_bounds = final_bounds
        self.image = image
        self.frames = 0
        self.frame_times: list[float] = []  # when each live frame was shown, for checking the refresh rate
        self._handle: Any = None

    def _show(self, png: bytes) -> None:
        if self.image is not None:
            self.image.value = png
        elif self._handle is None:
            self._handle = display(Image(data=png, format="png"), display_id=True)
        else:
            self._handle.update(Image(data=png, format="png"))
        self.frames += 1

    def follow(self, run: "LoadRun") -> "LoadResult":
        """Draw `run` until it ends, then draw its final frame and return its LoadResult."""
        figure = LiveFigure(self.title, self.bound_rps, concurrency=run.spec.concurrency, aggregated=run.spec.aggregated)
        history: list[tuple[float, int]] = []
        period = 1 / REFRESH_HZ
        while not run.done():
            began = time.monotonic()
            samples = run.samples()
            now = run.client_time_s
            history.append((now, run.in_flight))
            self._show(figure.frame(samples, now, history, note=f" — {len(samples)} done, running"))
            self.frame_times.append(time.monotonic())
            time.sleep(max(0.0, period - (time.monotonic() - began)))
        result = run.wait()
        self.show(result)
        return result

    def show(self, result: "LoadResult") -> None:
        """The finished run, with exact in-flight counts and its headline figures in the title."""
        summary = metrics.summarize(result)
        note = f" — {summary.rps:.2f} req/s, mean {summary.mean_ms:.0f} ms, {summary.errors} errors"
        warnings = summary.warnings()
        # First, where nobody can miss it: the figures may describe errors, or the client rather than the server.
        heading = ("WARNING: " + "; ".join(warnings) + "\n" if warnings else "") + self.title + note
        bounds = self.final_bounds(result) if self.final_bounds else self.bound_rps
        samples = cast("Aggregate | list[Sample]", result.samples)  # load.LoadResult says: one or the other
        self._show(render(dashboard_figure(samples, heading, bounds)).data)


def follow(
    run: "LoadRun", title: str, bound_rps: Bounds = None, final_bounds: "Callable[[LoadResult], Bounds] | None" = None
) -> "LoadResult":
    """Shorthand: a new Dashboard following `run`; returns the LoadResult. Bounds are a number or {label: req/s}."""
    return Dashboard(title, bound_rps, final_bounds=final_bounds).follow(run)
