"""Lesson 08's parameters and closing claims, on plain data: a run that holds, and one that names what broke."""

from types import SimpleNamespace

import pytest

from iolab import params
from iolab.claims import ClaimsFailed
from iolab.lessons.pipelining import parameters, verdict

SIZES = dict(connections=64, duration_s=3, depths=[1, 2, 4, 8, 16, 32], wait_ms=300, batch_size=8,
             order_requests=32_000, quick=False, solutions=False, results_path=None)


def test_quick_shrinks_the_sizes_and_full_keeps_them():
    assert parameters.check(**{**SIZES, "depths": [16, 1, 16]}).depths == [1, 16]
    quick = parameters.check(**{**SIZES, "quick": True})
    assert (quick.duration_s, quick.depths, quick.order_requests) == (1, [1, 4, 16], 4000)


def test_depths_without_16_are_refused_by_name():
    with pytest.raises(params.ParameterError, match=r"depths=\[1, 8\] must be a list of depths that includes 1 and 16"):
        parameters.check(**{**SIZES, "depths": [1, 8]})


def row(depth, batched, demand_us, calls=None, writes=None):
    return {"depth": depth, "batched": batched, "demand_us": demand_us, "syscalls_per_request": calls,
            "writes_per_request": writes, "connections": 64, "counted_requests": 100_000}


def test_the_depth_claims_hold_when_batches_divide_the_costs(capsys):
    at = {(1, True): row(1, True, 20.0), (16, True): row(16, True, 4.0, calls=0.15),
          (16, False): row(16, False, 9.0, writes=1.0)}
    claims = verdict.Claims("08")
    verdict._depth(claims, at)
    assert claims.report() == 4
    assert "D 4.00 µs within [0, 20.00) µs" in capsys.readouterr().out


def test_a_batch_that_costs_more_than_one_request_fails_and_names_both():
    at = {(1, True): row(1, True, 3.0), (16, True): row(16, True, 4.0), (16, False): row(16, False, 9.0)}
    claims = verdict.Claims("08")
    verdict._depth(claims, at)
    with pytest.raises(ClaimsFailed) as failed:
        claims.report()
    assert "1 of 3 claims failed" in str(failed.value) and "'demand_us': 3.0" in str(failed.value)


def timing(arrived_ms):
    return SimpleNamespace(arrived_ms=arrived_ms, last_ms=max(arrived_ms))


def test_head_of_line_claims_skip_what_a_quota_stall_would_decide():
    timings = {"the wait first": timing([301.0] * 8), "the wait last": timing([1.0] * 7 + [301.0]),
               "no wait": timing([1.0] * 8)}
    checks = [SimpleNamespace(out_of_order=0, other_errors=0, checked=4000, row=lambda: {})]
    claims = verdict.Claims("08")
    verdict._order(claims, checks, 4000, timings, 300, throttled=3, throttled_s=0.2)
    assert claims.report() == 4 and sum(mark == "–" for mark, *_ in claims.rows) == 2
    claims = verdict.Claims("08")
    verdict._order(claims, checks, 4000, {**timings, "the wait first": timing([2.0] + [301.0] * 7)}, 300, 0, 0.0)
    with pytest.raises(ClaimsFailed, match="with the wait first, no answer left before the wait ended"):
        claims.report()
