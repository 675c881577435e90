"""Pictures of the bank.

Frames show who is where, strips have one row per bank, the player steps through time.
"""

from types import SimpleNamespace

import ipywidgets
import pytest
from matplotlib.figure import Figure

from iolab.lessons.bank import model as bank
from iolab.lessons.bank import view as bank_view
from iolab.neighbours import Neighbours


@pytest.fixture(scope="module")
def runs():
    return bank.simulate_all(12, 4, 100, threads=2, cpu_ms=4)


def dots_drawn(axes):
    return sum(len(collection.get_offsets()) for collection in axes.collections)


@pytest.mark.parametrize("name", bank.BANKS)
@pytest.mark.parametrize("moment", [0.01, 0.15, 0.5])
def test_frame_draws_every_customer_in_the_bank(runs, name, moment):
    run = runs[name]
    axes = Figure().subplots()
    bank_view.draw_bank(axes, run, moment)
    snapshot = run.at(moment)
    # one dot per customer in the hall or lounge, one per customer standing at a busy teller
    assert dots_drawn(axes) == snapshot.hall + snapshot.lounge + snapshot.tellers_busy
    assert f"done {snapshot.done}/12" in axes.get_xlabel()


def test_frame_times_fall_inside_the_run(runs):
    times = bank_view.frame_times(runs["sync"], 4)
    end = runs["sync"].timeline[-1].time
    assert len(times) == 4 and 0 < times[0] < times[-1] < end
    assert times[1] - times[0] == pytest.approx(end / 4)


def test_strip_has_a_row_per_bank(runs):
    figure = bank_view.strip_figure(runs, frames=3)
    assert len(figure.subfigs) == 3
    assert [len(band.axes) for band in figure.subfigs] == [3, 3, 3]
    assert "threaded bank (2 tellers)" in figure.subfigs[1]._suptitle.get_text()


def test_player_links_play_and_slider_and_redraws(runs):
    box = bank_view.player(runs["ticket"], frames=5)
    controls, image = box.children
    play, slider, label = controls.children
    assert isinstance(play, ipywidgets.Play) and play.max == slider.max == 4
    first = bytes(image.value)
    assert first.startswith(b"\x89PNG")
    slider.value = 4
    assert bytes(image.value) != first
    assert "t = " in label.value


def test_players_make_one_tab_per_bank(runs):
    tabs = bank_view.players(runs, frames=3)
    assert [tabs.get_title(i) for i in range(3)] == ["synchronous bank", "threaded bank", "ticket bank"]


def test_occupancy_draws_measured_in_flight_when_given(runs):
    figure = bank_view.occupancy_figure(runs, measured={"ticket": ([0.0, 0.1, 0.2], [4, 4, 0])})
    ticket_axes = figure.axes[2]
    assert any(line.get_label() == "measured in flight" for line in ticket_axes.get_lines())
    assert not figure.axes[0].get_lines()


def test_the_neighbours_column_shows_the_share_others_held_or_unknown():
    crowded = Neighbours(2.0, "host", None, 0.0, 0.0, 0, 0.0, 0.38)  # others' CPU: 38 % of the run
    assert bank_view.others_held(SimpleNamespace(others=crowded)) == "38%"
    assert bank_view.others_held(SimpleNamespace(others=None)) == "unknown"
