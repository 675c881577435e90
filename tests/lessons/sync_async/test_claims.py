"""Lesson 02's proof on plain data: parameters refused by name, and the claims printed and failed with their values."""

from types import SimpleNamespace

import pytest

from iolab import params
from iolab.claims import ClaimsFailed
from iolab.lessons.sync_async import proof

USERS, REQUESTS, WAIT_S, DEMAND_S = 4, 8, 0.1, 0.001


def measured(mode, p50_ms, in_flight, ab_ms, mean_ms):
    """One handler's run as check_claims reads it: its summary, the prediction from its D, and whether it is in band."""
    prediction = SimpleNamespace(low_rps=1.0, high_rps=40.0, in_step_rps=9.0, blocking=mode == "sync", wait_s=WAIT_S,
                                 demand_s=DEMAND_S, users=USERS, path_s=2 * DEMAND_S)
    summary = SimpleNamespace(errors=0, error_kinds={}, rps=9.0, demand_ms=1000 * DEMAND_S, p50_ms=p50_ms, p99_ms=p50_ms,
                              in_flight=in_flight, concurrency=USERS, ab_time_per_request_ms=ab_ms, mean_ms=mean_ms,
                              completed=REQUESTS)
    return SimpleNamespace(mode=mode, summary=summary, prediction=prediction, in_band=True, off_in_step=0.0)


KNOCKED = SimpleNamespace(connected_ms=[10.0, 40.0, 70.0], answered_ms=500.0, most_waiting=3, waiting_after=0,
                          readings=[])


def test_every_claim_holds_on_a_run_that_keeps_them(capsys):
    runs = measured("sync", 300, 3.0, 400, 350), measured("async", 101, 3.9, 103, 102)
    assert proof.check_claims(*runs, KNOCKED, [], USERS) == 12
    printed = capsys.readouterr().out
    assert "✓ every connect() returned while A slept" in printed and "the sweep: skipped" in printed


def test_a_claim_that_breaks_names_its_values(capsys):
    # 4 users over 8 requests leave one wait apart: L is at most 4 - 4 x 3 / 16 = 3.25, not 3.9.
    runs = measured("sync", 300, 3.9, 400, 350), measured("async", 101, 3.9, 103, 102)
    with pytest.raises(ClaimsFailed, match=r"\(3\.9, 3\.25\)"):
        proof.check_claims(*runs, KNOCKED, [], USERS)
    assert "✗ blocking: L falls short of the users" in capsys.readouterr().out


def test_parameters_out_of_range_are_refused_by_name():
    with pytest.raises(params.ParameterError, match="sweep_delay_ms must be between 5 and 200"):
        proof.check_parameters(False, False, None, 200, 40, 1000, "async", True, True, 2)
    with pytest.raises(params.ParameterError, match="requests=10 must be at least concurrency=40"):
        proof.check_parameters(False, False, None, 10, 40, 1000, "async", True, True, 20)
    assert proof.check_parameters(True, False, None, 200, 40, 1000, "async", True, True, 20) == (True, 10, 5, 400)
