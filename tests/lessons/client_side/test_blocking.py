"""Lesson 11's blocking call against real servers.

Each run's claims hold, debug mode's warning is caught, nothing is left.
"""

import asyncio

import pytest

from iolab.claims import Claims, ClaimsFailed
from iolab.lessons.client_side import blocking
from iolab.params import ParameterError

from .test_timeouts import run_clean

T_MS = 100


def claims_of(**parts):
    claims = Claims("11-the-client-side")
    blocking.add_claims(claims, parts)
    return claims


def test_requests_get_in_an_async_def_runs_one_call_at_a_time():
    run = run_clean(blocking.in_async_def(calls=3, T_ms=T_MS))
    sent = [row[0] for row in run["blocking"]["rows"]]
    # Each call is sent only when the one before has answered: the loop was held the whole time.
    assert all(later >= 0.9 * T_MS / 1000 * i for i, later in enumerate(sent)), sent
    assert claims_of(gather=run).report() == 2


def test_debug_mode_names_the_blocking_coroutine_and_is_silent_for_the_awaiting_one(capfd):
    run = run_clean(blocking.debug_mode(calls=2, T_ms=T_MS))
    warned = run["blocking"]["warnings"]
    assert [w["coroutine"] for w in warned] == ["fetch_with_time_sleep"] * 2, warned
    assert all(w["took_s"] >= T_MS / 1000 * 0.99 for w in warned), warned
    assert run["awaiting"]["warnings"] == []
    out, err = capfd.readouterr()
    assert out == "" and err == "", f"the debug demo's thread printed: {out!r} {err!r}"
    assert claims_of(debug=run).report() == 3


def test_fastapi_def_endpoints_share_the_pool_and_a_blocking_async_def_serves_one_at_a_time():
    run = run_clean(blocking.fastapi_endpoints(calls=3, pool_calls=8, T_ms=T_MS, threads=4))
    assert run["threads"] == 4 and run["def_in_pool"]["rounds"] == 2 and run["async_def_blocking"]["rounds"] == 3
    assert claims_of(fastapi=run).report() == 4


def test_a_blocking_call_that_did_not_block_fails_its_claim_with_the_figures():
    run = {"calls": 5, "T_ms": 200, "overhead_s": 0.004, "blocking": {"s": 0.21, "predicted_s": 1.0},
           "awaiting": {"s": 0.2, "predicted_s": 0.2}}
    with pytest.raises(ClaimsFailed, match="take n x Z: measured 0.210 s, predicted 1.004 s"):
        claims_of(gather=run).report()


def test_bad_parameters_are_refused_by_name():
    with pytest.raises(ParameterError, match="T_ms must be between 50 and 2000"):
        asyncio.run(blocking.debug_mode(T_ms=10))
    with pytest.raises(ParameterError, match="threads must be between 1 and 200"):
        asyncio.run(blocking.fastapi_endpoints(threads=0))
