"""The live dashboard and the Run panel, driven by real load runs."""


import ipywidgets

from iolab import controls, live, load, servers

SLOWEST_MEDIAN_FRAME_GAP_S = 1 / 5  # the design's 5 Hz while a run goes; a late frame or two may not count
FEWEST_FRAME_GAPS = 5  # a run of about 2 s at 5 Hz shows twice as many frames; fewer means it stalled


def test_dashboard_refreshes_at_five_hertz_or_more():
    with servers.serve("tornado_app") as server:
        run = load.start_load(server.url + "/async-sleep?ms=200", requests=40, concurrency=4)
        image = ipywidgets.Image(format="png")
        dashboard = live.Dashboard("test", bound_rps=20, image=image)
        result = dashboard.follow(run)
    assert len(result.samples) == 40
    gaps = [b - a for a, b in zip(dashboard.frame_times, dashboard.frame_times[1:])]
    assert len(gaps) >= FEWEST_FRAME_GAPS, f"only {len(gaps) + 1} live frames in a {result.duration_s:.1f} s run"
    assert sorted(gaps)[len(gaps) // 2] <= SLOWEST_MEDIAN_FRAME_GAP_S, f"median frame gap {sorted(gaps)[len(gaps) // 2]:.3f} s"
    assert bytes(image.value[:8]) == b"\x89PNG\r\n\x1a\n", "the final frame stays in the image"


def test_live_frame_grows_its_axes_with_the_data():
    figure = live.LiveFigure("growth", bound_rps=10, concurrency=4)
    samples = [load.Sample(t / 10, t / 10 + 0.05, 200, 1, None, 0) for t in range(100)]
    png = figure.frame(samples, now_s=10.0, in_flight_history=[(0, 1), (10, 4)])
    assert png.startswith(b"\x89PNG")
    assert figure.limits["time"] >= 10.0
    assert figure.limits["latency"] >= 50


def test_run_panel_button_runs_a_bounded_experiment():
    panel = controls.run_panel(
        controls.load_experiment("tornado_app"), concurrency=3, requests=2, delay_ms=100, modes=["async-sleep"]
    )
    buttons = [w for w in _walk(panel) if isinstance(w, ipywidgets.Button)]
    status = next(w for w in _walk(panel) if isinstance(w, ipywidgets.HTML))
    image = next(w for w in _walk(panel) if isinstance(w, ipywidgets.Image))
    buttons[0].click()
    assert status.value.startswith("done: "), status.value
    # The bounds come from the server's CPU, measured on this very run.
    assert "ms of server CPU per request" in status.value and "with users in step" in status.value
    assert bytes(image.value).startswith(b"\x89PNG")
    assert not servers.running()


def test_run_panel_reports_a_failed_run_instead_of_raising():
    def broken(**values):
        raise RuntimeError("the server fell over")

    panel = controls.run_panel(broken)
    button = next(w for w in _walk(panel) if isinstance(w, ipywidgets.Button))
    button.click()
    status = next(w for w in _walk(panel) if isinstance(w, ipywidgets.HTML))
    assert "run failed" in status.value and "the server fell over" in status.value
    assert not button.disabled


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def test_dashboard_follows_an_aggregated_run(tornado):
    run = load.start_load(tornado.url + "/async-sleep?ms=100", requests=60, concurrency=6, record="aggregate")
    image = ipywidgets.Image(format="png")
    dashboard = live.Dashboard("aggregated", bound_rps=60, image=image)
    result = dashboard.follow(run)
    assert result.aggregated and result.completed == 60
    assert dashboard.frames >= 2, "live frames while the run went, and the final one"
    assert bytes(image.value[:8]) == b"\x89PNG\r\n\x1a\n"


def test_live_frame_draws_an_aggregate():
    from iolab.clients.aggregate import Aggregate

    samples = [load.Sample(t / 10, t / 10 + 0.05, 200 if t % 7 else 500, 1, None, 0) for t in range(100)]
    figure = live.LiveFigure("aggregate", bound_rps=10, concurrency=4, aggregated=True)
    png = figure.frame(Aggregate.of_samples(samples), now_s=10.0, in_flight_history=[(0, 1), (10, 4)])
    assert png.startswith(b"\x89PNG")
    assert figure.limits["latency"] >= 50, "the panel grew to the bins' mean latency of 50 ms"
    good, bad, _ = live.latency_points(Aggregate.of_samples(samples), 0.5, 10.0)
    assert len(good) == 20, "one point per 0.5 s bin"
    assert len(bad) == len({t // 5 for t in range(100) if t % 7 == 0}), "a cross on each bin that sent a failure"
