"""Lesson 10's closing claims on plain data: a run that keeps them prints a tick each, one that breaks one names it."""

import math
from types import SimpleNamespace

import pytest

from iolab.claims import ClaimsFailed
from iolab.lessons.backend import claims, experiment, runs


def row(test, front_end, rps, bound, low=math.nan, bottleneck="worker pool", how="wait"):
    return runs.Row(test, front_end, how, 4, rps, rps, bound, bottleneck, {200: 10}, SimpleNamespace(errors=0), low)


def queue_run(slope=40.0, lowest=35.0, highest=45.0):
    return SimpleNamespace(measured_slope=lambda: slope, slope_bounds=lambda task_s: (lowest, highest),
                           predicted_slope=40.0, sent_rps=lambda: 60.0)


def lab(**changes):
    """A Lab as a full run leaves it, every figure inside its bounds, with `changes` made."""
    plan = experiment.Plan(queue_workers=2, queue_limit=5, timeout_ms=400)
    samples = [SimpleNamespace(status=503, latency=0.004)] * 3 + [SimpleNamespace(status=200, latency=0.002)] * 5
    bounded = SimpleNamespace(points=[(0.0, 0), (0.5, 5)], result=SimpleNamespace(samples=samples),
                              drain_here=lambda: 40.0)
    faults = {"worker_killed": {"answers": {"200": {"count": 8, "slowest_ms": 60.0},
                                            "504": {"count": 4, "slowest_ms": 420.0}},
                                "left_in_redis": {"queued (LLEN celery)": 2, "unacked (running when killed)": 2}},
              "redis_killed": {"answers": {"200": {"count": 5, "slowest_ms": 60.0},
                                           "503": {"count": 20, "slowest_ms": 30.0}}}}
    found = SimpleNamespace(
        plan=plan, hello_rows=[row("hello", "tornado_backend", 900.0, 1000.0, how="hello")],
        wait_rows=[row("wait", name, 4.8, 5.0, 4.0) for name in ("tornado_backend", "gevent_flask")],
        sweep=SimpleNamespace(rows=[row("k=2", "tornado_backend", 9.5, 10.0, 8.0)],
                              await_row=row("await", "tornado_backend", 9.7, 10.0, 8.0)),
        forget_rows=[row("forget", name, 800.0, 820.0, how="forget") for name in ("tornado_backend", "gevent_flask")],
        queue=queue_run(), bounded=bounded, faults=faults, cap=None)
    for name, value in changes.items():
        setattr(found, name, value)
    return found


def test_a_run_that_keeps_every_claim_prints_one_tick_each(capsys):
    checked = claims.check_claims(lab())
    out = capsys.readouterr().out
    assert not checked.failed() and "✗" not in out
    assert "✓ wait, gevent_flask: every answer a 200, X between the law's two sides: 4.8 req/s within [4.0, 5.1]" in out
    assert "✓ the queue grows at λ − c / T_w: 40.0 tasks/s within [35.0, 45.0] tasks/s" in out
    assert "– Redis's memory cap ends the queue's growth: skipped, the memory cap's run did not run" in out
    assert out.rstrip().endswith("claims hold on this run. (1 skipped)")


@pytest.mark.parametrize("changes, named", [
    ({"queue": queue_run(slope=20.0)}, "slope 20.0 tasks/s, outside [35.0, 45.0] (predicted 40.0; arrivals sent 60.0/s)"),
    ({"wait_rows": lab().wait_rows + [row("wait", "gunicorn_flask", 3.1, 5.0, 4.0)]},
     "wait, gunicorn_flask: 3.1 req/s, under the pessimistic side 4.0"),
    ({"hello_rows": [row("hello", "gunicorn_flask", 130.0, 100.0, how="hello")]},
     "hello, gunicorn_flask: 130.0 req/s, over the bound min(w, cores) / D = 100.0"),
])
def test_a_broken_claim_is_printed_and_the_failure_names_its_values(capsys, changes, named):
    with pytest.raises(ClaimsFailed) as failed:
        claims.check_claims(lab(**changes))
    assert named in str(failed.value)
    assert "✗" in capsys.readouterr().out  # every claim printed, the broken one marked


def test_a_task_lost_in_the_worker_kill_is_named():
    faults = lab().faults
    faults["worker_killed"]["left_in_redis"]["queued (LLEN celery)"] = 1
    with pytest.raises(ClaimsFailed) as failed:
        claims.check_claims(lab(faults=faults))
    assert "'queued (LLEN celery)': 1, 'unacked (running when killed)': 2}, 4)" in str(failed.value)  # 2 + 1 against 4 504s


def test_a_run_without_the_backend_skips_every_claim_and_says_why(capsys):
    claims.check_claims(lab(), skipped="redis-server is not installed")
    assert "skipped, redis-server is not installed" in capsys.readouterr().out
