"""Lesson 10's parameters: the Plan the notebook and the benchmark share, refused by name, and its quick sizes."""

import ast
import dataclasses
from pathlib import Path

import nbformat
import pytest

from iolab import params
from iolab.lessons.backend import parameters

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "10-slow-backend.ipynb"


def notebook_parameters():
    """The values the notebook's parameters cell assigns, by name."""
    cell = next(c for c in nbformat.read(NOTEBOOK, as_version=4).cells if "parameters" in c.metadata.get("tags", []))
    return {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(cell.source).body
            if isinstance(node, ast.Assign)}


def test_the_plans_defaults_are_the_notebooks_parameters():
    """The benchmark runs Plan()'s sizes: they must be the ones a student runs."""
    notebook = notebook_parameters()
    plan = parameters.Plan()
    for size in dataclasses.fields(plan):
        if size.name != "quick":
            assert notebook[size.name] == getattr(plan, size.name), size.name
    assert not plan.check().quick


@pytest.mark.parametrize("size, value, message", [
    ("task_ms", 20, "task_ms must be between 50 and 1000"),
    ("users", 1, "users must be between 2 and 200"),
    ("sweep_threads", (1, 2), "parameter sweep_threads=(1, 2) must be a list of 1 to 8 thread counts"),
    ("sweep_threads", [1, 100], "each of sweep_threads must be between 1 and 64"),
    ("sweep_users", 4, "sweep_users must be between 8 and 200"),  # at least the largest k
    ("arrival_rps", 15, "parameter arrival_rps=15 must be at least twice what the workers drain, queue_workers"
                        " / task_ms = 10/s"),
    ("arrival_rps", 50.5, "arrival_rps must be between 1 and 1000, a whole number"),
    ("timeout_ms", 300, "timeout_ms must be between 400 and 30000"),  # at least twice T
    ("run_faults", "yes", "run_faults must be True or False"),
    ("blocking_requests", 10, "parameter blocking_requests=10 must be at least users=20"),
])
def test_a_size_the_lesson_cannot_run_is_refused_by_name(size, value, message):
    with pytest.raises(params.ParameterError) as refused:
        dataclasses.replace(parameters.Plan(), **{size: value}).check()
    assert message in str(refused.value)


def test_quick_sizes_are_small_and_send_at_least_three_times_the_drain():
    for workers in (1, 2, 8):
        quick = parameters.Plan(queue_workers=workers, arrival_rps=100 * workers).check().quick_sizes()
        assert quick.quick and quick.task_ms == 50 and quick.fault_lead_s == 1
        assert quick.arrival_rps >= 3 * quick.drain_rps and quick.arrival_rps >= 60
        assert quick.queue_workers == workers  # the workers stay the student's
    assert parameters.Plan().fault_lead_s == 2
