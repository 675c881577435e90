"""Lesson 07's parameters: refused by name, and quick mode's sizes."""

import pytest

from iolab import params
from iolab.lessons.c10k import parameters

SIZES = dict(connections=10_000, probe_connections=500, fresh_requests=200, memory_share=0.5, wrk_connections=1000,
             wrk_duration_s=10, wrk_timeout_s=2, quick=False, solutions=False, results_path=None)


def test_the_defaults_are_the_notebooks_cell():
    assert parameters.DEFAULTS == SIZES


def test_quick_shrinks_the_sizes_and_full_keeps_them():
    assert parameters.Plan.from_cell(SIZES).connections == 10_000
    quick = parameters.Plan.from_cell({**SIZES, "quick": True})
    assert (quick.connections, quick.probe_connections, quick.wrk_timeout_s, quick.wrk_duration_s) == (1000, 100, 1, 2)


def test_a_probe_as_large_as_the_run_is_refused_by_name():
    with pytest.raises(params.ParameterError, match="probe_connections=500 must be smaller than connections=400"):
        parameters.Plan.from_cell({**SIZES, "connections": 400})


@pytest.mark.parametrize("name, value, said", [
    ("memory_share", 0.95, "memory_share must be between 0.05 and 0.9"),
    ("wrk_duration_s", 3, "wrk_duration_s must be between 4 and 120"),  # twice the timeout at least
])
def test_a_bad_parameter_is_refused_by_name(name, value, said):
    with pytest.raises(params.ParameterError, match=said):
        parameters.Plan.from_cell({**SIZES, name: value})
