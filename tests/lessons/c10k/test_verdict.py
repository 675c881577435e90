"""Lesson 07's parameters and closing claims, on plain data: a run that holds, and one that names what broke."""

from types import SimpleNamespace

import pytest

from iolab import params
from iolab.claims import ClaimsFailed
from iolab.lessons.c10k import parameters, verdict

SIZES = dict(connections=10_000, probe_connections=500, fresh_requests=200, memory_share=0.5, wrk_connections=1000,
             wrk_duration_s=10, wrk_timeout_s=2, quick=False, solutions=False, results_path=None)


def test_quick_shrinks_the_sizes_and_full_keeps_them():
    assert parameters.check(**SIZES).connections == 10_000
    quick = parameters.check(**{**SIZES, "quick": True})
    assert (quick.connections, quick.probe_connections, quick.wrk_timeout_s, quick.wrk_duration_s) == (1000, 100, 1, 2)


def test_a_probe_as_large_as_the_run_is_refused_by_name():
    with pytest.raises(params.ParameterError, match="probe_connections=500 must be smaller than connections=400"):
        parameters.check(**{**SIZES, "connections": 400})


def scene(max_ms, timeouts=10, serves_at_once=True):
    lab = SimpleNamespace(rps=100.0)
    return SimpleNamespace(server="gunicorn, 4 sync workers", skipped=None, timeout_s=2, serves_at_once=serves_at_once,
                           wrk={"max_ms": max_ms, "timeouts": timeouts}, lab=lab, bound_rps=100.0,
                           lab_over_timeout=300, lab_latencies_ms=[0.0] * 400, row=lambda: {"wrk_max_ms": max_ms})


def test_the_wrk_scene_claims_hold_on_a_run_that_bears_them_out(capsys):
    claims = verdict.Claims("07")
    verdict._scenes(claims, [scene(1990.0)])
    assert claims.report() == 4
    assert "within [0, 2020] ms" in capsys.readouterr().out


def test_a_wrk_latency_past_its_timeout_fails_and_names_the_value():
    claims = verdict.Claims("07")
    verdict._scenes(claims, [scene(2500.0, timeouts=0)])
    with pytest.raises(ClaimsFailed) as failed:
        claims.report()
    assert "2 of 4 claims failed" in str(failed.value) and "'wrk_max_ms': 2500.0" in str(failed.value)
