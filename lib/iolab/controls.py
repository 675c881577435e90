"""Sliders and a Run button that replay an experiment live.

Each run draws on the live dashboard; the panel is inert, and harmless, under papermill.
"""

import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

import ipywidgets as widgets
from IPython import get_ipython
from IPython.display import display

from . import live, load, metrics, registry, servers, theory

LIMITS = {"concurrency": (1, 200), "requests": (1, 2000), "delay_ms": (0, 3000)}


def run_panel(
    experiment: Callable[..., object],
    concurrency: int = 40,
    requests: int = 200,
    delay_ms: int = 1000,
    modes: Iterable[str] | None = None,
    note: str = "",
) -> widgets.VBox:
    """Show sliders for concurrency, requests and delay (and a mode menu if `modes`), and a Run button.

    Pressing Run calls `experiment(concurrency=, requests=, delay_ms=, mode=, image=)`,
    where `image` is an ipywidgets.Image for a live.Dashboard to draw into. The
    sliders' ranges bound every run a student can start; requests is raised to at
    least concurrency so every simulated user sends one.
    """
    sliders = {
        name: widgets.IntSlider(
            value=min(max(value, LIMITS[name][0]), LIMITS[name][1]),
            min=LIMITS[name][0],
            max=LIMITS[name][1],
            description=name,
            continuous_update=False,
            style={"description_width": "initial"},
        )
        for name, value in (("concurrency", concurrency), ("requests", requests), ("delay_ms", delay_ms))
    }
    mode = widgets.Dropdown(options=list(modes), description="handler") if modes else None
    button = widgets.Button(description="Run", button_style="primary", icon="play")
    status = widgets.HTML(note)
    # Hidden until its first frame: an Image widget with no bytes shows the browser's broken-image icon.
    image = widgets.Image(format="png", layout=widgets.Layout(display="none"))
    image.observe(lambda _: setattr(image.layout, "display", None), names="value")

    gate = RunGate()

    def on_run(_: object) -> None:
        if not gate.try_start(click_sent_at()):
            return  # pressed again while the last run went: that press is spent
        values = {name: slider.value for name, slider in sliders.items()}
        values["requests"] = max(values["requests"], values["concurrency"])
        button.disabled = True
        status.value = "running…"
        try:
            summary = experiment(**values, mode=mode.value if mode else None, image=image)
            status.value = f"done: {summary}" if summary else "done"
        except Exception as error:  # a student's run must end in a message, not a dead button
            status.value = f"<b>run failed:</b> {type(error).__name__}: {error}"
        finally:
            gate.end()
            button.disabled = False

    button.on_click(on_run)
    top = [*sliders.values()] + ([mode] if mode else [])
    panel = widgets.VBox([widgets.HBox(top[:2]), widgets.HBox(top[2:] + [button]), status, image])
    display(panel)
    return panel


class RunGate:
    """Lets one run start at a time, and no press that the page sent while the last run went.

    A run goes in the kernel's own thread, so a second press that leaves the page
    before the page has heard that the button is disabled (a double click) waits
    in the kernel's queue and is handled only once the run has ended. By the
    page's clock it was sent before `start press + the run's duration`; a real new
    press comes after the page saw the run end, so later than that. Both times are
    read on the page's clock, which therefore need not agree with the kernel's.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.running = False
        self.started: float | None = None  # kernel clock
        self.start_sent: float | None = None  # page clock, seconds since the epoch; None when unknown
        self.busy_until: float | None = None  # page clock: a press sent before this was sent while the last run went

    def try_start(self, sent_at: float | None) -> bool:
        """Whether a press sent at `sent_at` (page clock, or None if unknown) starts a run now."""
        if self.running or (sent_at is not None and self.busy_until is not None and sent_at < self.busy_until):
            return False
        self.running, self.started, self.start_sent = True, self.clock(), sent_at
        return True

    def end(self) -> None:
        self.running = False
        if self.start_sent is not None:
            self.busy_until = self.start_sent + (self.clock() - self.started)  # type: ignore[operator]  # set with it


def click_sent_at() -> float | None:
    """When the page sent the message the kernel is handling (seconds since the epoch, by the page's clock), or None."""
    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is None or not hasattr(kernel, "get_parent"):
        return None  # not in a kernel (a plain Python session, a test)
    date = kernel.get_parent().get("header", {}).get("date")
    if isinstance(date, str):  # jupyter_client parses dates; a message it could not parse keeps its text
        try:
            date = datetime.fromisoformat(date)
        except ValueError:
            return None
    # A date without a zone is read as local time: the same for every press from one page, which is all that counts.
    return date.timestamp() if isinstance(date, datetime) else None


def load_experiment(
    server_name: str = "tornado_app", workers_by_mode: Mapping[str, int | None] | None = None, max_duration_s: float = 600
) -> Callable[..., str]:
    """An `experiment` for run_panel: a fresh server per press, a bounded load run, the dashboard in the panel.

    `workers_by_mode` maps each route to how many requests the server can wait on
    at once (None for a wait that holds no thread). By default the registry says:
    a blocking handler is served as many at a time as the server serves at once,
    a wait without blocking has no such limit. While the run goes the dashboard
    draws the ceiling that ignores the CPU (users / wait); once it ends, the
    bounds and the in-step prediction from the CPU the server was measured to
    spend on each request.
    """
    workers_by_mode = workers_by_mode or {"async-sleep": None, "sync-sleep": registry.get(server_name).at_once()}

    def experiment(concurrency: int, requests: int, delay_ms: int, mode: str, image: Any) -> str:
        service_s = max(delay_ms, 1) / 1000
        workers = workers_by_mode.get(mode)
        blocking = workers is not None
        ceiling = metrics.little_bound(concurrency, service_s, workers=workers)

        def predicted(result: load.LoadResult) -> theory.Prediction:
            # Over the seconds the CPU counters were open, as the lessons predict, so that the
            # optimistic bound is not made tight by the start and end of the run.
            window_s = getattr(result.usage, "wall_s", None)
            return theory.predict_run(metrics.summarize(result), delay_ms, blocking, threads=workers or 1, window_s=window_s)

        def measured_bounds(result: load.LoadResult) -> live.Bounds:
            return predicted(result).lines()

        with servers.serve(server_name) as server:
            run = load.start_load(
                f"{server.url}/{mode}?ms={delay_ms}",
                server=server,
                requests=requests,
                concurrency=concurrency,
                timeout_s=min(requests * service_s + 30, 600),
                max_duration_s=max_duration_s,
            )
            dashboard = live.Dashboard(
                f"{server_name} /{mode}", {"ceiling (no CPU)": ceiling}, image=image, final_bounds=measured_bounds
            )
            result = dashboard.follow(run)
        summary = metrics.summarize(result)
        prediction = predicted(result)
        warnings = summary.warnings()
        return ("WARNING: " + "; ".join(warnings) + ". " if warnings else "") + (
            f"{summary.rps:.2f} req/s; theory from the measured {summary.demand_ms:.2f} ms of server CPU per request:"
            f" {prediction.low_rps:.2f} to {prediction.high_rps:.2f}, {prediction.in_step_rps:.2f} with users in step;"
            f" mean latency {summary.mean_ms:.0f} ms; {summary.errors} errors ({result.stop_reason})"
        )

    return experiment
