"""Lesson 06's parameters: refused by name, and quick mode's sizes."""

from pathlib import Path

import nbformat
import pytest

from iolab import params
from iolab.lessons.workers import parameters

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "06-workers-threads-processes.ipynb"


def test_the_plan_reads_every_parameter_of_the_notebooks_cell():
    """The parameters cell and DEFAULTS name the same parameters, in the same order, and the Plan holds each."""
    cell = next(c for c in nbformat.read(NOTEBOOK, as_version=4).cells if "parameters" in c.metadata.get("tags", []))
    names = [line.split("=")[0].strip() for line in cell.source.splitlines() if "=" in line]
    assert names == list(parameters.DEFAULTS)
    assert set(names) <= set(parameters.Plan.__dataclass_fields__)


def test_quick_keeps_two_points_per_sweep_and_shorter_runs():
    plan = parameters.Plan.from_cell({**parameters.DEFAULTS, "quick": True})
    assert (plan.thread_counts, plan.worker_counts, plan.matrix_threads) == ([1, 4], [1, 2], [1, 4])
    assert (plan.usl_workers, plan.gil_busy, plan.gil_probes) == ([1, 2, 3, 4], [0, 1, 2], 10)
    assert plan.run_seconds == 0.25 and plan.retries == 0
    full = parameters.Plan.from_cell(parameters.DEFAULTS)
    assert full.thread_counts == parameters.DEFAULTS["thread_counts"] and full.retries == 2


@pytest.mark.parametrize("name, value, said", [
    ("worker_counts", [1, 4], "include (1, 2)"),
    ("thread_counts", [4, 2], "rising order"),
    ("cpu_ms", 0, "cpu_ms"),
    ("gil_probes", 1000, "gil_probes"),
])
def test_a_bad_parameter_is_refused_by_name(name, value, said):
    with pytest.raises(params.ParameterError, match=name) as refused:
        parameters.Plan.from_cell({**parameters.DEFAULTS, name: value})
    assert said in str(refused.value)
