"""Lesson 02's parameters refused by name, and its claims on plain data printed and failed with their values."""

from types import SimpleNamespace

import pytest

from iolab import params
from iolab.claims import Claims, ClaimsFailed
from iolab.lessons.sync_async import claims, experiment, parameters, view
from iolab.neighbours import Neighbours

USERS, REQUESTS, WAIT_S, DEMAND_S = 4, 8, 0.1, 0.001


def measured(mode, p50_ms, in_flight, ab_ms, mean_ms):
    """One handler's run as claims.results reads it: its summary, and the prediction from its D (in band)."""
    prediction = SimpleNamespace(low_rps=1.0, high_rps=40.0, in_step_rps=9.0, blocking=mode == "sync", wait_s=WAIT_S,
                                 demand_s=DEMAND_S, users=USERS, path_s=2 * DEMAND_S,
                                 contains=lambda rps, tolerance: 1.0 <= rps <= 40.0)
    summary = SimpleNamespace(errors=0, error_kinds={}, rps=9.0, demand_ms=1000 * DEMAND_S, p50_ms=p50_ms, p99_ms=p50_ms,
                              in_flight=in_flight, concurrency=USERS, ab_time_per_request_ms=ab_ms, mean_ms=mean_ms,
                              completed=REQUESTS, utilization=0.01, queued_ms=0.0, client_demand_ms=0.5, cores=2,
                              listen_drops=0)
    summary.as_dict = lambda *keys: {key: getattr(summary, key) for key in keys}
    return experiment.Measured(mode, int(WAIT_S * 1000), None, summary, prediction)


KNOCKED = SimpleNamespace(connected_ms=[10.0, 40.0, 70.0], answered_ms=500.0, most_waiting=3, waiting_after=0,
                          readings=[])


def cell(**values):
    return {**parameters.DEFAULTS, **values}


def check(sync, asynchronous):
    found = claims.results(parameters.Plan.from_cell(cell(requests=REQUESTS, concurrency=USERS)),
                           sync_measured=sync, async_measured=asynchronous, ceilings=(1.0, 40.0), sweeps=[],
                           ab_figures={}, knocked=KNOCKED, exercises={})
    return claims.check_claims(found)


def test_every_claim_holds_on_a_run_that_keeps_them(capsys):
    runs = measured("sync", 300, 3.0, 400, 350), measured("async", 101, 3.9, 103, 102)
    assert check(*runs) == 12
    printed = capsys.readouterr().out
    assert "✓ every connect() returned while A slept" in printed and "the sweep: skipped" in printed


def test_a_claim_that_breaks_names_its_values(capsys):
    # 4 users over 8 requests leave one wait apart: L is at most 4 - 4 x 3 / 16 = 3.25, not 3.9.
    runs = measured("sync", 300, 3.9, 400, 350), measured("async", 101, 3.9, 103, 102)
    with pytest.raises(ClaimsFailed, match=r"\(3\.9, 3\.25\)"):
        check(*runs)
    assert "✗ blocking: L falls short of the users" in capsys.readouterr().out


def test_parameters_out_of_range_are_refused_by_name():
    with pytest.raises(params.ParameterError, match="sweep_delay_ms must be between 5 and 200"):
        parameters.Plan.from_cell(cell(sweep_delay_ms=2))
    with pytest.raises(params.ParameterError, match="requests=10 must be at least concurrency=40"):
        parameters.Plan.from_cell(cell(requests=10))
    plan = parameters.Plan.from_cell(cell(quick=True))
    assert (plan.quick, plan.requests, plan.concurrency, plan.delay_ms) == (True, 10, 5, 400)
    assert plan.sweep == (60, 4, 3, 15) and parameters.Plan.from_cell(cell()).sweep == (200, 8, 10, 100)


def sweeps(knee_measured=30.0, cpu_bound=True):
    """Both sweeps' figures as claims.results keeps them: every run in band, the blocking thread held all the time."""
    row = {"errors": 0, "in_band": True}
    sync = {"points": [row] * 3, "lone_idle_ms": [0.1, 0.2],
            "held": [{"users": 4, "held": 0.99, "least": 0.95, "window": 1.0}], "knee_predicted": 1.0}
    asynchronous = {"points": [row] * 4, "users": [1, 10, 30, 60], "knee_predicted": 28.0,
                    "knee_measured": knee_measured, "knee_bounds": [20.0, 40.0], "listen_drops": 0,
                    "busiest_thread_busy": 0.7,
                    "cpu_bound": {"users": 60, "busy": 0.7, "least_busy": 0.5, "row": row} if cpu_bound else None}
    return sync, asynchronous


def test_the_sweeps_claims_hold_and_a_curve_that_bends_too_late_is_named():
    said, notes = Claims("02"), []
    claims.sweep_claims(said, notes, *sweeps())
    assert [row[0] for row in said.rows] == ["✓"] * 5 and "measured curve bends at 30" in notes[-1]
    said = Claims("02")
    claims.sweep_claims(said, [], *sweeps(knee_measured=50.0))
    assert said.failed()[0][-1] == ("the curve bends at 50.0 users, outside the 20.0 .. 40.0 the bounds from D allow;"
                                    " D predicted 28.0")
    said, notes = Claims("02"), []
    claims.sweep_claims(said, notes, *sweeps(cpu_bound=False))
    assert said.rows[-1][0] == "–" and "busy or waiting for a CPU 70%" in notes[-2]


def test_the_neighbours_column_shows_each_runs_share_and_a_sweeps_most():
    quiet, crowded = (Neighbours(2.0, "host", None, 0.0, 0.0, 0, 0.0, share) for share in (0.05, 0.38))
    run = measured("async", 100.0, 3.9, 100.0, 100.0)
    assert view.others_held(run) == "unknown"  # a run that did not read its neighbours
    run.others = crowded
    assert view.others_held(run) == "38%"
    sweep = SimpleNamespace(points=[SimpleNamespace(others=quiet), SimpleNamespace(others=None),
                                    SimpleNamespace(others=crowded)])
    assert view.most_others_held(sweep) == "38%"
    assert view.most_others_held(SimpleNamespace(points=[SimpleNamespace(others=None)])) == "unknown"
