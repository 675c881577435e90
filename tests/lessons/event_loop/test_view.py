"""iolab.lessons.event_loop.view draws a loop trace.

Long waits spread over the bins they cover, phases shaded, empty traces refused.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from helpers import trace_iteration
from iolab import figures
from iolab.lessons.event_loop import view
from iolab.neighbours import Neighbours

TRACE = [
    trace_iteration(100.0, 120.0, 5.0),
    trace_iteration(100.125, 0.0, 30.0, events=3, ready=2),
    trace_iteration(100.155, 45.0, 0.0),
]


def test_binned_shares_split_a_long_wait_across_its_bins():
    starts, select_ms, callbacks_ms = view.binned_shares(TRACE, 100.0, 0.05)
    assert starts == pytest.approx([0.0, 0.05, 0.1, 0.15])
    assert select_ms == pytest.approx([50.0, 50.0, 20.0, 45.0])
    assert callbacks_ms == pytest.approx([0.0, 0.0, 30.0, 5.0])
    assert sum(select_ms) == pytest.approx(sum(it["select_ms"] for it in TRACE))


def test_trace_figure_draws_two_panels_cut_to_the_phases():
    figure = view.trace_figure(TRACE, phases=[(100.12, 100.16, "busy")], margin_s=0.01)
    events_axes, time_axes = figure.axes[:2]
    assert "3 iterations" in events_axes.get_title()
    assert time_axes.get_xlim() == pytest.approx((0.0, 0.06))
    assert any(text.get_text() == "busy" for text in events_axes.texts)


def test_the_figure_is_shown_by_figures_show_not_by_pyplot():
    # Lesson 05 calls figures.show(trace_figure(...)): pyplot never sees the figure, so plt.show() would show nothing.
    before = plt.get_fignums()
    figure = view.trace_figure(TRACE)
    assert plt.get_fignums() == before
    assert figures.render(figure).data.startswith(b"\x89PNG")


def test_an_empty_trace_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="--trace"):
        view.trace_figure([])


def test_the_neighbours_column_shows_the_share_others_held_or_unknown():
    crowded = Neighbours(1.0, "host", None, 0.0, 0.0, 0, 0.0, 0.38).as_dict()  # as the profiles keep it
    assert view.others_held({"neighbours": crowded}) == "38%"
    assert view.others_held({"neighbours": None}) == view.others_held({}) == "unknown"
