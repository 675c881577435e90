"""Lesson 10's experiment: the Plan the notebook and the benchmark share, and the Lab's runs on a real backend.

Redis and Celery are real; the tests that need them skip, with the reason, where they are missing.
"""

import ast
import dataclasses
from pathlib import Path

import nbformat
import pytest

from iolab import params
from iolab.lessons.backend import experiment, runs, stack

MISSING = stack.missing()
needs_backend = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "10-slow-backend.ipynb"
# Small enough for a test, and still with arrivals past twice the drain: 2 slots of 50 ms drain 40 tasks/s.
SMALL = dict(task_ms=50, users=4, blocking_requests=8, sweep_threads=[1, 2], sweep_workers=2, sweep_users=4,
             sweep_requests=8, forget_users=10, forget_requests=50, queue_workers=2, arrival_rps=100, queue_seconds=2,
             queue_limit=5, timeout_ms=400)


def notebook_parameters():
    """The values the notebook's parameters cell assigns, by name."""
    cell = next(c for c in nbformat.read(NOTEBOOK, as_version=4).cells if "parameters" in c.metadata.get("tags", []))
    return {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(cell.source).body
            if isinstance(node, ast.Assign)}


def test_the_plans_defaults_are_the_notebooks_parameters():
    """The benchmark runs Plan()'s sizes: they must be the ones a student runs."""
    notebook = notebook_parameters()
    plan = experiment.Plan()
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
        dataclasses.replace(experiment.Plan(), **{size: value}).check()
    assert message in str(refused.value)


def test_quick_sizes_are_small_and_send_at_least_three_times_the_drain():
    for workers in (1, 2, 8):
        quick = experiment.Plan(queue_workers=workers, arrival_rps=100 * workers).check().quick_sizes()
        assert quick.quick and quick.task_ms == 50 and quick.fault_lead_s == 1
        assert quick.arrival_rps >= 3 * quick.drain_rps and quick.arrival_rps >= 60
        assert quick.queue_workers == workers  # the workers stay the student's
    assert experiment.Plan().fault_lead_s == 2


def test_before_the_queues_run_the_bounded_queue_is_predicted_from_t_alone():
    lab = experiment.Lab(experiment.Plan(**SMALL).check())
    assert lab.drain_rps == 2 / 0.05
    sent, accepted = lab.bounded_prediction()
    assert sent == 200 and accepted == 5 + 2 + 40 * 2
    assert lab.results()["tests"] == [] and lab.results()["queue_slope"]["measured"] is None


@pytest.fixture
def lab():
    lab = experiment.Lab(experiment.Plan(**SMALL).check())
    lab.start()
    try:
        yield lab
    finally:
        lab.stop()


@needs_backend
def test_a_failed_run_stops_every_front_end_planned(lab):
    planned = lab.plan_waits()
    assert [b.front.name for b in planned] == ["tornado_backend", "gevent_flask", "gunicorn_flask"]
    assert all(b.front.alive() and b.requests == 8 and b.tiers.users == 4 for b in planned)
    assert planned[0].slot_s == planned[1].slot_s == planned[2].slot_s > 0.05  # one T_w, measured awaiting

    def fail(run, blocking):
        run.wait()
        raise RuntimeError("the dashboard broke")

    with pytest.raises(RuntimeError, match="dashboard"):
        lab.waits(planned, fail)
    assert not any(b.front.alive() for b in planned)


def test_a_blocking_run_carries_its_own_figures():
    """R, T_w, T and the tiers travel together: the prediction reads them from the run itself."""
    tiers = runs.Tiers(users=16, front=2, workers=4, front_threads=True)
    blocking = runs.Blocking("k=2", None, "pool", tiers, trip_s=0.25, slot_s=0.21, task_ms=200, requests=40)
    assert blocking.law() == tiers.law(0.25, 0.21) == (8.0, "front end")
    assert blocking.predicted_rps == 8.0
