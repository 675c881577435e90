"""Lesson 11's parameters: the defaults and quick mode pass; one out of range is named with its value and range."""

from pathlib import Path

import nbformat
import pytest

from iolab.lessons.client_side import parameters
from iolab.params import ParameterError

CELL = parameters.DEFAULTS


def test_the_defaults_and_quick_mode_pass():
    assert parameters.Plan.from_cell(CELL).calls == 40
    quick = parameters.Plan.from_cell(CELL | {"quick": True})
    assert (quick.calls, quick.call_ms, quick.rounds) == (20, 100, 2) and quick.threads < quick.calls


@pytest.mark.parametrize("name, value, words", [
    ("calls", 101, "between 4 and 100"), ("call_ms", 10, "between 50 and 2000"), ("threads", 11, "between 2 and 10"),
    ("limit_ms", 50, "between 100 and 2000"), ("rounds", 1, "between 2 and 5"), ("fastapi_threads", 101, "between 1 and 100"),
    ("semaphore", 40, "less than calls (40)"), ("quick", "yes", "True or False"),
    ("timeout_ms", 151, "at most slow_ms / 2 (150)"), ("retry_seconds", 0.5, "above retries × timeout + slow"),
    ("pool_calls", 40, "above fastapi_threads (40)"), ("retry_seconds", 31.0, "between 0.1 and 30.0"),
])
def test_a_value_out_of_range_is_named(name, value, words):
    with pytest.raises(ParameterError) as raised:
        parameters.Plan.from_cell(CELL | {name: value})
    assert name in str(raised.value) and repr(value) in str(raised.value) and words in str(raised.value)


def test_the_notebooks_parameters_cell_is_the_defaults():
    # benchmarks/client_limits.py and these tests run the lesson at DEFAULTS: they must be what the student runs.
    notebook = nbformat.read(Path(__file__).parents[3] / "notebooks" / "11-the-client-side.ipynb", as_version=4)
    cell = next(cell for cell in notebook.cells if "parameters" in cell.metadata.get("tags", []))
    values = {}
    exec(cell.source, values)  # noqa: S102 -- our own notebook's assignments
    assert {name: values[name] for name in parameters.DEFAULTS} == parameters.DEFAULTS
