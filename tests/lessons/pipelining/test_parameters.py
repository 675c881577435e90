"""Lesson 08's parameters: refused by name, and quick mode's sizes."""

import pytest

from iolab import params
from iolab.lessons.pipelining import parameters

SIZES = dict(connections=64, duration_s=3, depths=[1, 2, 4, 8, 16, 32], wait_ms=300, batch_size=8,
             order_requests=32_000, quick=False, solutions=False, results_path=None)


def test_the_defaults_are_the_notebooks_cell():
    assert parameters.DEFAULTS == SIZES


def test_quick_shrinks_the_sizes_and_full_keeps_them():
    assert parameters.Plan.from_cell({**SIZES, "depths": [16, 1, 16]}).depths == [1, 16]
    quick = parameters.Plan.from_cell({**SIZES, "quick": True})
    assert (quick.duration_s, quick.depths, quick.order_requests) == (1, [1, 4, 16], 4000)


def test_depths_without_16_are_refused_by_name():
    with pytest.raises(params.ParameterError, match=r"depths=\[1, 8\] must be a list of depths that includes 1 and 16"):
        parameters.Plan.from_cell({**SIZES, "depths": [1, 8]})


@pytest.mark.parametrize("name, value, said", [
    ("connections", 2, "connections must be between 4 and 1000"),
    ("depths", [1, 16, 300], "each of depths must be between 1 and 256"),
])
def test_a_bad_parameter_is_refused_by_name(name, value, said):
    with pytest.raises(params.ParameterError, match=said):
        parameters.Plan.from_cell({**SIZES, name: value})
