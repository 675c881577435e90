"""Lesson 06's proof module: parameters refused by name, quick sizes, and the closing claims on plain data."""

import dataclasses
from pathlib import Path

import nbformat
import pytest

from iolab import params
from iolab.claims import ClaimsFailed
from iolab.lessons.workers import lesson

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "06-workers-threads-processes.ipynb"
DEFAULTS = dict(wait_ms=20, cpu_ms=5, users=16, run_seconds=0.5, thread_counts=[1, 2, 4, 8], worker_counts=[1, 2, 4],
                matrix_workers=[1, 2, 4], matrix_threads=[1, 2, 4, 8], usl_workers=[1, 2, 3, 4, 6, 8, 12, 16],
                gil_busy=[0, 1, 2, 4], gil_probes=40)


def test_the_plan_takes_the_parameters_in_the_notebooks_order():
    """The notebook passes its parameters to Plan by position: the two lists must stay in step."""
    cell = next(c for c in nbformat.read(NOTEBOOK, as_version=4).cells if "parameters" in c.metadata.get("tags", []))
    names = [line.split("=")[0].strip() for line in cell.source.splitlines() if "=" in line]
    assert names == [f.name for f in dataclasses.fields(lesson.Plan)][:len(names)]


def test_quick_keeps_two_points_per_sweep_and_shorter_runs():
    plan = lesson.Plan(**DEFAULTS, quick=True).check(quiet=True)
    assert (plan.thread_counts, plan.worker_counts, plan.matrix_threads) == ([1, 4], [1, 2], [1, 4])
    assert (plan.usl_workers, plan.gil_busy, plan.gil_probes) == ([1, 2, 3, 4], [0, 1, 2], 10)
    assert plan.run_seconds == 0.25 and plan.retries == 0
    full = lesson.Plan(**DEFAULTS).check(quiet=True)
    assert full.thread_counts == DEFAULTS["thread_counts"] and full.retries == 2


@pytest.mark.parametrize("name, value, said", [
    ("worker_counts", [1, 4], "include (1, 2)"),
    ("thread_counts", [4, 2], "rising order"),
    ("cpu_ms", 0, "cpu_ms"),
    ("gil_probes", 1000, "gil_probes"),
])
def test_a_bad_parameter_is_refused_by_name(name, value, said):
    with pytest.raises(params.ParameterError, match=name) as refused:
        lesson.Plan(**{**DEFAULTS, name: value}).check(quiet=True)
    assert said in str(refused.value)


def holding(**changes):
    """Evidence of a run on two quiet cores on which every claim holds."""
    evidence = lesson.Evidence(
        cores=2.0, noise_cpu=0.02, noise_hello=0.10, faster_than_allowed=[],
        one_request_change={"gunicorn 1 sync": 0.0, "gunicorn 2 sync": 0.03},
        waiting={"gthread": (380.0, 8, 300.0, "threads"), "threaded": (370.0, 8, 300.0, "threads")},
        bytecode_in_threads={"gthread": (8, 0.95, 0.1), "threaded": (8, 0.97, 0.1)},
        bytecode_cores_busy=1.0, in_c_cores_busy=1.9, in_c_others_share=0.0,
        predicted_cpu={1: 180.0, 2: 340.0, 4: 340.0}, cores_used={1: 0.95, 2: 1.8, 4: 1.8},
        two_workers_others_share=0.0, threads_1_ms=9.0, fastest_beside_a_process_ms=0.4,
        beside_a_process_ms=[0.4, 0.5], interval_ms=5.0, usl_quiet=True, usl_noise=0.1, checked_rps=3000.0,
        best_on_curve_rps=3100.0, best_at_check_speed_rps=3050.0, nginx_missing=None, nginx_demand_ms=0.01,
        python_demands_ms=[0.3, 0.4], nginx_rps=20000.0, best_gunicorn_rps=3100.0, nginx_quiet=True, solutions=True,
        statuses={"q1": "correct", "q7": "correct"},
    )
    return dataclasses.replace(evidence, **changes)


def test_every_claim_holds_and_prints_a_line(capsys):
    claims = lesson.check_claims(holding())
    out = capsys.readouterr().out
    assert len(claims.rows) == 18 and not claims.failed()
    assert "✓ Beside one busy thread, / waits at least one switch interval: median 9.00 ms within [5, ∞) ms" in out
    assert out.rstrip().endswith("All 18 of this lesson's claims hold on this run.")


def test_a_failed_claim_names_its_values_and_every_claim_still_prints(capsys):
    with pytest.raises(ClaimsFailed) as failed:
        lesson.check_claims(holding(threads_1_ms=3.2, bytecode_cores_busy=1.4))
    message, out = str(failed.value), capsys.readouterr().out
    assert "2 of 18 claims failed" in message
    assert "/ beside one busy thread: 3.20 ms, interval 5.0 ms" in message
    assert "a Python loop in two threads kept 1.40 cores busy, more than 1.05" in message
    assert out.count("\n") == 18  # every claim printed, the failed ones with the rest


def test_what_a_run_could_not_check_is_skipped_with_its_reason(capsys):
    claims = lesson.check_claims(holding(cores=1.0, nginx_missing="nginx is not installed", nginx_demand_ms=None,
                                         nginx_rps=None, usl_quiet=False, solutions=False,
                                         predicted_cpu={1: 170.0, 2: 171.0, 4: 171.0}))
    out = capsys.readouterr().out
    assert len(claims.rows) == 18 and not claims.failed()
    assert "– nginx alone serves hello world faster than the best gunicorn: skipped, nginx did not run (nginx is not" \
           " installed)" in out
    assert "✓ On one core, more processes predict no more on /cpu" in out
