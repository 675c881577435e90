"""Lesson 14's parameters: quick mode's sizes, and each value out of range refused by its name."""

import pytest

from iolab.lessons.network import model, parameters
from iolab.params import ParameterError


def cell(**changes):
    return parameters.DEFAULTS | changes


def test_the_defaults_are_accepted_as_they_are():
    plan = parameters.Plan.from_cell(cell())
    assert (plan.rtt_ms, plan.loss_percent, plan.requests, plan.repeats) == (40, 2.0, 10, 5)
    assert not plan.quick and "40 ms" in plan.describe()


def test_quick_mode_shrinks_the_runs_but_keeps_the_link_and_a_smaller_size_asked_for():
    plan = parameters.Plan.from_cell(cell(quick=True, requests=3))
    assert plan.quick and plan.requests == 3 and plan.repeats == parameters.QUICK["repeats"]
    assert plan.loss_bytes == parameters.QUICK["loss_bytes"] and plan.connects == parameters.QUICK["connects"]
    assert plan.rtt_ms == 40 and plan.loss_percent == 2.0  # the link is the student's, quick or not
    assert plan.rate_mbit == 16 and plan.workers == 2 and plan.answer_bytes == parameters.QUICK["answer_bytes"]


@pytest.mark.parametrize(("name", "value"), [("rtt_ms", 2), ("rtt_ms", 40.5), ("loss_percent", 0.1),
                                             ("loss_percent", 20), ("requests", 1), ("repeats", 2),
                                             ("nagle_exchanges", 4), ("loss_bytes", 100), ("connects", 5000),
                                             ("rate_mbit", 0), ("rate_mbit", 100), ("answer_bytes", 1000),
                                             ("workers", 0), ("workers", 16)])
def test_a_value_out_of_range_is_refused_by_its_name(name, value):
    with pytest.raises(ParameterError, match=f"^{name} must be"):
        parameters.Plan.from_cell(cell(**{name: value}))


def test_a_flag_that_is_not_a_bool_is_refused_by_its_name():
    with pytest.raises(ParameterError, match="^quick must be True or False"):
        parameters.Plan.from_cell(cell(quick="yes"))


def test_section_4_transfers_what_was_asked_where_it_fits_in_time():
    for quick in (False, True):
        plan = parameters.Plan.from_cell(cell(quick=quick))
        assert plan.transfer_bytes == plan.loss_bytes and "not " not in plan.describe()


@pytest.mark.parametrize("quick", [False, True])
def test_a_slow_lossy_link_shortens_section_4s_transfer_and_says_why(quick):
    plan = parameters.Plan.from_cell(cell(quick=quick, rtt_ms=200, loss_percent=10))
    rate = model.padhye_rate(0.2, 0.1)
    assert plan.transfer_bytes < plan.loss_bytes
    assert plan.transfer_bytes / rate <= parameters.LOSS_TRANSFER_MOST_S
    # Its second half still expects its losses: one in ten of its segments.
    assert plan.transfer_bytes / 2 / model.MSS_BYTES * 0.1 >= parameters.LOSS_TRANSFER_LEAST_LOSSES
    assert f"not {plan.loss_bytes:,}" in plan.describe() and "kB/s" in plan.describe()
