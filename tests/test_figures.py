"""iolab.figures: figures built without pyplot's registry, and shown once, as a PNG that an executed notebook keeps."""

import base64
import struct

import matplotlib.pyplot as plt
import nbformat
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from nbclient import NotebookClient

from iolab import figures
from iolab.lessons.event_loop import view as event_loop_view
from iolab.lessons.io_models import blocking
from iolab.lessons.io_models import view as io_models_view

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(data):
    """(width, height) in pixels, from the PNG's header chunk."""
    assert data.startswith(PNG_SIGNATURE)
    return struct.unpack(">II", data[16:24])


@pytest.fixture(autouse=True)
def pyplot_registry_stays_empty():
    plt.close("all")
    yield
    assert plt.get_fignums() == [], "something drew through pyplot, whose figures outlive the cell that made them"


def test_figure_is_drawn_by_agg_and_unknown_to_pyplot():
    figure = figures.figure(figsize=(4, 2), layout="constrained")
    assert isinstance(figure, Figure) and isinstance(figure.canvas, FigureCanvasAgg)
    assert figure.get_layout_engine() is not None
    assert plt.get_fignums() == []


def test_subplots_answers_like_pyplot():
    figure, (top, bottom) = figures.subplots(2, 1, figsize=(5, 3), sharex=True)
    assert figure.axes == [top, bottom]
    top.set_xlim(0, 7)
    assert bottom.get_xlim() == (0, 7)
    _, single = figures.subplots()
    assert single.figure is not figure  # a new figure each time, never the "current" one


def test_render_is_a_png_of_the_figure_at_the_asked_resolution():
    figure, axes = figures.subplots(figsize=(4, 2))
    axes.plot([0, 1], [0, 1])
    assert png_size(figures.render(figure).data) == (4 * figures.DPI, 2 * figures.DPI)
    assert png_size(figures.render(figure, dpi=50).data) == (200, 100)
    assert figures.render(axes).data == figures.render(figure).data  # an Axes stands for its figure


def test_lesson_drawings_build_through_figures_without_pyplot():
    run = blocking.run(20)
    timeline = io_models_view.timeline(run)
    assert isinstance(timeline.canvas, FigureCanvasAgg) and run.model in timeline.axes[0].get_title(loc="left")
    axes = io_models_view.wait_cost_plot([{"fds": 1, "poll_us": 1.0}, {"fds": 100, "poll_us": 3.0}], {"poll": 20.0})
    assert isinstance(axes.figure.canvas, FigureCanvasAgg)
    trace = [{"t": 1.0, "select_ms": 10.0, "callbacks_ms": 2.0, "events": 1, "ready": 0, "timers": 0}]
    assert len(event_loop_view.trace_figure(trace).axes) == 2
    for figure in (timeline, axes, event_loop_view.trace_figure(trace)):
        assert png_size(figures.render(figure).data)[0] > 0


def test_show_leaves_exactly_one_png_in_an_executed_notebook():
    # A real kernel, as papermill runs it: the figure must appear once, as a static image,
    # and a figure that is built but not shown must not appear at all.
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "import matplotlib.pyplot\n"  # with pyplot loaded, its inline backend would show what it knows
            "from iolab import figures\n"
            "figure, axes = figures.subplots(figsize=(3, 2))\n"
            "axes.plot([0, 1], [1, 0])\n"
            "figures.show(figure)"
        ),
        nbformat.v4.new_code_cell("unshown, _ = figures.subplots()\nNone"),
    ]
    NotebookClient(notebook, timeout=60, kernel_name="python3").execute()
    shown, unshown = (cell.outputs for cell in notebook.cells)
    assert [output.output_type for output in shown] == ["display_data"], shown
    assert png_size(base64.b64decode(shown[0].data["image/png"])) == (3 * figures.DPI, 2 * figures.DPI)
    assert unshown == [], unshown
