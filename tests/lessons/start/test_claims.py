"""Lesson 00's parameters refused by name, its results file, and its claims on plain data."""

import json
from types import SimpleNamespace

import pytest

from iolab import params
from iolab.claims import ClaimsFailed
from iolab.lessons.start import claims, experiment, parameters
from iolab.params import ParameterError


def handler(name, rps=40.0, low=38.0, high=41.0, errors=0, demand_ms=0.5, utilization=0.02):
    figures = {"rps": rps, "mean_ms": 1.0, "errors": errors, "error_kinds": {"status 500": errors} if errors else {},
               "demand_ms": demand_ms, "utilization": utilization}
    summary = SimpleNamespace(**figures, as_dict=lambda *keys: {key: figures[key] for key in keys})
    prediction = SimpleNamespace(low_rps=low, high_rps=high,
                                 lines=lambda: {"optimistic": high, "in step": high, "pessimistic": low})
    return experiment.Handler(name, summary, prediction)


def cell(**values):
    return {**parameters.DEFAULTS, **values}


PLAN = parameters.Plan(users=20, delay_ms=500, quick=False)


def found(sync, asynchronous, problems=(), solutions=False, exercises=None):
    plan = parameters.Plan(users=20, delay_ms=500, quick=False, solutions=solutions)
    return claims.results(plan, environment={"cpus": 2}, problems=list(problems), sync=sync, asynchronous=asynchronous,
                          exercises=exercises or {})


def test_the_plan_keeps_the_defaults_and_quick_mode_makes_them_smaller():
    assert parameters.Plan.from_cell(cell()) == PLAN
    quick = parameters.Plan.from_cell(cell(quick=True))
    assert (quick.users, quick.delay_ms, quick.sync_requests, quick.async_requests) == (5, 200, 10, 25)
    assert PLAN.sync_timeout_s == 40 * 0.5 + 30


@pytest.mark.parametrize("users, delay_ms, named", [(0, 500, "users"), (20, 10, "delay_ms"), (20.5, 500, "users")])
def test_a_value_out_of_range_is_refused_by_name(users, delay_ms, named):
    with pytest.raises(ParameterError, match=named):
        parameters.Plan.from_cell(cell(users=users, delay_ms=delay_ms))


def test_every_claim_that_holds_prints_a_tick(capsys):
    held = claims.check_claims(found(handler("blocking", 1.99, 1.9, 2.0), handler("non-blocking"),
                                     solutions=True, exercises={"q0": "correct", "q1": "correct"}))
    out = capsys.readouterr().out
    assert held == 6 and out.count("✓") == 6 and "All 6 of this lesson's claims hold" in out


def test_a_run_outside_its_bounds_fails_naming_its_value(capsys):
    with pytest.raises(ClaimsFailed) as failed:
        claims.check_claims(found(handler("blocking", 2.5, 1.9, 2.0), handler("non-blocking")))
    assert "blocking: 2.50 req/s, outside 1.90 .. 2.00" in str(failed.value)
    assert capsys.readouterr().out.count("✗") == 1


def test_a_busy_server_fails_naming_its_share_and_a_cpu_bound_run_skips_the_claim(capsys):
    busy = handler("non-blocking", utilization=0.6, demand_ms=0.5, high=41.0)
    with pytest.raises(ClaimsFailed, match=r"busy 60\.0% of the non-blocking run; with D = 0\.500 ms"):
        claims.check_claims(found(handler("blocking", 2.0, 1.9, 2.0), busy))
    cpu_bound = handler("non-blocking", demand_ms=20.0, utilization=0.9)
    assert claims.check_claims(found(handler("blocking", 2.0, 1.9, 2.0), cpu_bound)) == 4
    assert "skipped, with D = 20.000 ms" in capsys.readouterr().out


def test_errors_missing_tools_and_wrong_exercises_each_fail(capsys):
    with pytest.raises(ClaimsFailed) as failed:
        claims.check_claims(found(handler("blocking", 2.0, 1.9, 2.0, errors=3), handler("non-blocking"),
                                  problems=["wrk is missing"], solutions=True, exercises={"q1": "incorrect"}))
    message = str(failed.value)
    assert "3 of 6 claims failed" in message
    assert "wrk is missing" in message and "status 500" in message and "'q1': 'incorrect'" in message


def test_results_are_written_only_when_asked_and_the_claims_read_them_back(tmp_path, capsys):
    results = found(handler("blocking", 1.99, 1.9, 2.0), handler("non-blocking"), exercises={"q0": "correct"})
    params.write_results(None, results)
    path = tmp_path / "00.json"
    params.write_results(str(path), results)
    written = json.loads(path.read_text())
    assert written["first_experiment"]["users"] == 20 and written["exercises"] == {"q0": "correct"}
    assert set(written["first_experiment"]) == {"users", "delay_ms", "sync", "async", "bounds"}
    assert claims.check_claims(written) == 5
