"""Lesson 15's parameters: the defaults and quick mode pass; one out of range, or a broken rule, is named."""

from pathlib import Path

import nbformat
import pytest

from iolab.lessons.service import parameters
from iolab.params import ParameterError

CELL = parameters.DEFAULTS


def test_the_defaults_and_quick_mode_pass():
    assert parameters.Plan.from_cell(CELL).lag_seconds == 5.0
    quick = parameters.Plan.from_cell(CELL | {"quick": True})
    assert (quick.lag_seconds, quick.tasks, quick.pool_calls) == (2.0, 1000, 48)


def test_quick_mode_keeps_five_periods_in_a_window():
    quick = parameters.Plan.from_cell(CELL | {"quick": True, "block_ms": 100, "period_ms": 1000,
                                              "lag_seconds": 10.0})
    assert quick.lag_seconds == 5.0


@pytest.mark.parametrize("changes, name, words", [
    ({"block_ms": 4}, "block_ms", "between 5 and 200"), ({"period_ms": 2000}, "period_ms", "between 20 and 1000"),
    ({"period_ms": 90}, "period_ms", "at least 2 × block_ms (100)"),
    ({"block_ms": 10, "period_ms": 300}, "period_ms", "at most 20 × block_ms (200)"),
    ({"lag_seconds": 0.5}, "lag_seconds", "between 1.0 and 20.0"),
    ({"lag_seconds": 1.5, "period_ms": 400}, "lag_seconds", "at least 5 × period_ms (2 s)"),
    ({"hold_ms": 100}, "hold_ms", "between 300 and 2000"), ({"drain_ms": 900}, "drain_ms", "at least 2 × hold_ms"),
    ({"shutdown_seconds": 0.6}, "shutdown_seconds", "at least hold_ms + 0.2 s"),
    ({"cancelled": 5}, "cancelled", "at most pool / 2 (4)"),
    ({"pool_timeout_ms": 200}, "pool_timeout_ms", "at least 6 × pool_hold_ms (300)"),
    ({"pool_calls": 20}, "pool_calls", "at least 4 × pool (32)"), ({"quick": "yes"}, "quick", "True or False"),
])
def test_a_value_out_of_range_is_named(changes, name, words):
    with pytest.raises(ParameterError) as raised:
        parameters.Plan.from_cell(CELL | changes)
    assert name in str(raised.value) and repr(changes[name]) in str(raised.value) and words in str(raised.value)


def test_the_notebooks_parameters_cell_is_the_defaults():
    notebook = nbformat.read(Path(__file__).parents[3] / "notebooks" / "15-running-a-service.ipynb", as_version=4)
    cell = next(cell for cell in notebook.cells if "parameters" in cell.metadata.get("tags", []))
    values = {}
    exec(cell.source, values)  # noqa: S102 -- our own notebook's assignments
    assert {name: values[name] for name in parameters.DEFAULTS} == parameters.DEFAULTS
