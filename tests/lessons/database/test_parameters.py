"""Lesson 13's parameters: defaults pass, bad values are named.

The defaults and quick mode pass; a bad value is named with its value and range.
"""

from pathlib import Path

import nbformat
import pytest

from iolab.lessons.database import parameters
from iolab.params import ParameterError

CELL = parameters.DEFAULTS


def test_the_defaults_and_quick_mode_pass():
    assert parameters.Plan.from_cell(CELL).max_connections == 100
    quick = parameters.Plan.from_cell(CELL | {"quick": True})
    assert quick.query_ms == 50 and quick.pool < quick.users


@pytest.mark.parametrize("name, value, words", [
    ("query_ms", 5, "between 10 and 1000"), ("users", 1, "between 2 and 200"), ("pool", 30, "less than users (30)"),
    ("max_connections", 20, "at least 2 × pool + the executor's threads + 1"), ("run_s", 0.1, "between 0.2 and 30.0"),
    ("timeout_ms", 300, "at most slow_ms / 2 (250)"), ("backend_connections", 101, "at most max_connections"),
    ("quick", "yes", "True or False"), ("rows", 10, "between 100 and 100000"),
])
def test_a_value_out_of_range_is_named(name, value, words):
    with pytest.raises(ParameterError) as raised:
        parameters.Plan.from_cell(CELL | {name: value})
    assert name in str(raised.value) and repr(value) in str(raised.value) and words in str(raised.value)


def test_a_size_the_open_file_limit_cannot_hold_is_refused_with_the_reason():
    with pytest.raises(ParameterError) as raised:
        parameters.check_files(CELL, limit=1024)
    assert "1064 open files" in str(raised.value) and "only 1024" in str(raised.value)
    parameters.check_files(CELL | {"bouncer_clients": 900}, limit=1024)  # 964 fit


def test_the_notebooks_parameters_cell_is_the_defaults():
    notebook = nbformat.read(Path(__file__).parents[3] / "notebooks" / "13-a-real-database.ipynb", as_version=4)
    cell = next(cell for cell in notebook.cells if "parameters" in cell.metadata.get("tags", []))
    values = {}
    exec(cell.source, values)  # noqa: S102 -- our own notebook's assignments
    assert {name: values[name] for name in parameters.DEFAULTS} == parameters.DEFAULTS
