"""Lesson 06's closing claims on the results: a run on which every claim holds, one that names what broke."""

import json

import pytest

from iolab import params
from iolab.claims import ClaimsFailed
from iolab.lessons.workers import claims


def holding(**changes):
    """The results of a run on two quiet cores on which every claim holds, with `changes` made."""
    found = {
        "cores": 2.0, "demand_noise": {"cpu": 0.02, "hello": 0.10}, "faster_than_allowed": [],
        "demand_change_cpu_one_request_per_process": {"gunicorn 1 sync": 0.0, "gunicorn 2 sync": 0.03},
        "waiting": {"gthread": (380.0, 8, 300.0, "threads"), "threaded": (370.0, 8, 300.0, "threads")},
        "waiting_predicted_rps": {"gthread": 400.0, "threaded": 400.0},
        "bytecode_in_threads": {"gthread": (8, 0.95, 0.1), "threaded": (8, 0.97, 0.1)},
        "bytecode_cores_busy": 1.0, "in_c_cores_busy": 1.9, "in_c_others_share": 0.0,
        "predicted_cpu_rps": {1: 180.0, 2: 340.0, 4: 340.0}, "cores_used": {1: 0.95, 2: 1.8, 4: 1.8},
        "two_workers_others_share": 0.0, "threads_1_ms": 9.0, "fastest_beside_a_process_ms": 0.4,
        "beside_a_process_ms": [0.4, 0.5], "interval_ms": 5.0,
        "usl": {"quiet": True, "noise": 0.1, "checked_rps": 3000.0, "best_on_curve_rps": 3100.0,
                "best_at_check_speed_rps": 3050.0},
        "nginx_missing": None, "nginx_demand_ms": 0.01, "python_demands_ms": [0.3, 0.4], "nginx_rps": 20000.0,
        "best_gunicorn_rps": 3100.0, "nginx_quiet": True, "solutions": True,
        "exercises": {"q1": "correct", "q7": "correct"},
    }
    usl = {**found["usl"], **changes.pop("usl", {})}
    return {**found, **changes, "usl": usl}


def test_every_claim_holds_and_prints_a_line(capsys):
    checked = claims.check_claims(holding())
    out = capsys.readouterr().out
    assert len(checked.rows) == 18 and not checked.failed()
    assert "✓ Beside one busy thread, / waits at least one switch interval: median 9.00 ms within [5, ∞) ms" in out
    assert out.rstrip().endswith("All 18 of this lesson's claims hold on this run.")


def test_a_failed_claim_names_its_values_and_every_claim_still_prints(capsys):
    with pytest.raises(ClaimsFailed) as failed:
        claims.check_claims(holding(threads_1_ms=3.2, bytecode_cores_busy=1.4))
    message, out = str(failed.value), capsys.readouterr().out
    assert "2 of 18 claims failed" in message
    assert "/ beside one busy thread: 3.20 ms, interval 5.0 ms" in message
    assert "a Python loop in two threads kept 1.40 cores busy, more than 1.05" in message
    assert out.count("\n") == 18  # every claim printed, the failed ones with the rest


def test_what_a_run_could_not_check_is_skipped_with_its_reason(capsys):
    checked = claims.check_claims(holding(cores=1.0, nginx_missing="nginx is not installed", nginx_demand_ms=None,
                                          nginx_rps=None, usl={"quiet": False}, solutions=False,
                                          predicted_cpu_rps={1: 170.0, 2: 171.0, 4: 171.0}))
    out = capsys.readouterr().out
    assert len(checked.rows) == 18 and not checked.failed()
    assert "– nginx alone serves hello world faster than the best gunicorn: skipped, nginx did not run (nginx is not" \
           " installed)" in out
    assert "✓ On one core, more processes predict no more on /cpu" in out


def test_the_claims_read_the_results_file_as_written(tmp_path, capsys):
    """JSON keeps the worker counts as strings: the claims read them back as the run held them."""
    path = tmp_path / "06.json"
    params.write_results(str(path), holding())
    checked = claims.check_claims(json.loads(path.read_text()))
    assert len(checked.rows) == 18 and not checked.failed()
    assert "✓ On two cores, two processes predict more than one on /cpu: 340 req/s" in capsys.readouterr().out


def others(share):
    """A run's neighbours as the results keep them (iolab.neighbours.Neighbours.as_dict), others holding `share`."""
    return {"seconds": 1.0, "source": "host", "pressure_share": share, "own_wait_share": 0.0, "steal_share": 0.0,
            "throttled": 0, "throttled_s": 0.0, "others_cpu_share": share, "others_share": share}


SLOWED = {"waiting": {"gthread": (280.0, 8, 300.0, "threads"), "threaded": (370.0, 8, 300.0, "threads")}}  # 7% under


def test_threads_under_their_pessimistic_bound_on_a_quiet_run_still_fail(capsys):
    with pytest.raises(ClaimsFailed) as failed:
        claims.check_claims(holding(**SLOWED, waiting_neighbours={"gthread": others(0.0), "threaded": others(0.0)}))
    assert "gthread on /sync-sleep: 280 req/s with 8 threads, below the pessimistic bound 300" in str(failed.value)
    assert "⚠" not in capsys.readouterr().out


def test_threads_under_their_pessimistic_bound_while_others_held_the_cpus_are_excused_with_the_figures(capsys):
    checked = claims.check_claims(holding(**SLOWED, waiting_neighbours={"gthread": others(0.4), "threaded": others(0.0)}))
    out = capsys.readouterr().out
    assert not checked.failed() and "⚠ gthread: 8 threads serve /sync-sleep" in out
    assert "others held the CPUs 40% of this run" in out
