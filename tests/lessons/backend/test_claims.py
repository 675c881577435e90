"""Lesson 10's closing claims on plain data: a run that keeps them prints a tick each, one that breaks one names it."""

import json
import math

import pytest

from iolab import params
from iolab.claims import ClaimsFailed
from iolab.lessons.backend import claims, parameters


def row(test, front_end, rps, bound, low=math.nan, bottleneck="worker pool", how="wait"):
    return {"test": test, "front_end": front_end, "how": how, "rps": rps, "predicted_rps": rps, "bound_rps": bound,
            "low_rps": low, "bottleneck": bottleneck, "statuses": {200: 10}, "errors": 0, "waits_ms": (0.0, 0.0, 0.0)}


def queue_run(slope=40.0, lowest=35.0, highest=45.0):
    return {"measured": slope, "predicted": 40.0, "lowest": lowest, "highest": highest, "sent_rps": 60.0}


def lab(**changes):
    """The results of a full run, every figure inside its bounds, with `changes` made."""
    plan = {**parameters.Plan(queue_workers=2, queue_limit=5, timeout_ms=400).as_dict(), "quick": False}
    bounded = {"points": [(0.0, 0), (0.5, 5)], "longest_queue": 5, "limit": 5, "refused": 3,
               "slowest_refusal_s": 0.004, "drain_rps": 40.0}
    faults = {"worker_killed": {"answers": {"200": {"count": 8, "slowest_ms": 60.0},
                                            "504": {"count": 4, "slowest_ms": 420.0}},
                                "left_in_redis": {"queued (LLEN celery)": 2, "unacked (running when killed)": 2}},
              "redis_killed": {"answers": {"200": {"count": 5, "slowest_ms": 60.0},
                                           "503": {"count": 20, "slowest_ms": 30.0}}}}
    found = {
        "parameters": plan, "skipped": None,
        "tests": [row("hello", "tornado_backend", 900.0, 1000.0, how="hello")]
        + [row("wait", name, 4.8, 5.0, 4.0) for name in ("tornado_backend", "gevent_flask")]
        + [row("k=2", "tornado_backend", 9.5, 10.0, 8.0), row("await", "tornado_backend", 9.7, 10.0, 8.0)]
        + [row("forget", name, 800.0, 820.0, how="forget") for name in ("tornado_backend", "gevent_flask")],
        "queue_slope": queue_run(), "backpressure": bounded, "faults": faults, "memory_cap": None}
    return {**found, **changes}


def rows(test, *changed):
    """The run's rows with those of `test` replaced by `changed`."""
    kept = lab()["tests"]
    return [r for r in kept if r["test"] != test] + list(changed)


def test_a_run_that_keeps_every_claim_prints_one_tick_each(capsys):
    checked = claims.check_claims(lab())
    out = capsys.readouterr().out
    assert not checked.failed() and "✗" not in out
    assert "✓ wait, gevent_flask: every answer a 200, X between the law's two sides: 4.8 req/s within [4.0, 5.1]" in out
    assert "✓ the queue grows at λ − c / T_w: 40.0 tasks/s within [35.0, 45.0] tasks/s" in out
    assert "– Redis's memory cap ends the queue's growth: skipped, the memory cap's run did not run" in out
    assert out.rstrip().endswith("claims hold on this run. (1 skipped)")


@pytest.mark.parametrize("changes, named", [
    ({"queue_slope": queue_run(slope=20.0)}, "slope 20.0 tasks/s, outside [35.0, 45.0] (predicted 40.0; arrivals sent 60.0/s)"),
    ({"tests": lab()["tests"] + [row("wait", "gunicorn_flask", 3.1, 5.0, 4.0)]},
     "wait, gunicorn_flask: 3.1 req/s, under the pessimistic side 4.0"),
    ({"tests": rows("hello", row("hello", "gunicorn_flask", 130.0, 100.0, how="hello"))},
     "hello, gunicorn_flask: 130.0 req/s, over the bound min(w, cores) / D = 100.0"),
])
def test_a_broken_claim_is_printed_and_the_failure_names_its_values(capsys, changes, named):
    with pytest.raises(ClaimsFailed) as failed:
        claims.check_claims(lab(**changes))
    assert named in str(failed.value)
    assert "✗" in capsys.readouterr().out  # every claim printed, the broken one marked


def test_a_task_lost_in_the_worker_kill_is_named():
    faults = lab()["faults"]
    faults["worker_killed"]["left_in_redis"]["queued (LLEN celery)"] = 1
    with pytest.raises(ClaimsFailed) as failed:
        claims.check_claims(lab(faults=faults))
    assert "'queued (LLEN celery)': 1, 'unacked (running when killed)': 2}, 4)" in str(failed.value)  # 2 + 1 against 4 504s


def test_a_run_without_the_backend_skips_every_claim_and_says_why(capsys):
    claims.check_claims(lab(skipped="redis-server is not installed"))
    assert "skipped, redis-server is not installed" in capsys.readouterr().out


def test_the_claims_read_the_results_file_as_written(tmp_path, capsys):
    """JSON keeps the statuses as strings and the points as lists: the claims read them back as the run held them."""
    path = tmp_path / "10.json"
    params.write_results(str(path), lab())
    checked = claims.check_claims(json.loads(path.read_text()))
    assert not checked.failed()
    assert "✓ hello, tornado_backend: every answer a 200, X ≤ min(w, cores) / D: 900.0 req/s" in capsys.readouterr().out


def test_the_memory_caps_claims_read_its_figures_by_key(capsys):
    cap = {"measured_tasks": 120, "held_bounds": [110.0, 130.0], "answered_200": 120,
           "after_first_503": {"503": 40}, "alone_503_ms": 1.5, "median_503_ms": 9.0, "reason_status": 503,
           "reason": "503 broker full: Redis refused the task (OOM)"}
    checked = claims.check_claims(lab(memory_cap=cap))
    out = capsys.readouterr().out
    assert not checked.failed() and "✓ after the first refusal every answer is a 503: 40 answers: [503]" in out
    with pytest.raises(ClaimsFailed) as failed:
        claims.check_claims(lab(memory_cap={**cap, "after_first_503": {"503": 38, "200": 2}}))
    assert "1 of 25 claims failed" in str(failed.value) and "'after_first_503': {'503': 38, '200': 2}" in str(failed.value)
    assert "✗ after the first refusal every answer is a 503: 40 answers: [200, 503]" in capsys.readouterr().out


def others(share):
    """A run's neighbours as its results keep them (iolab.neighbours.Neighbours.as_dict), others holding `share`."""
    return {"seconds": 1.0, "source": "host", "pressure_share": share, "own_wait_share": 0.0, "steal_share": 0.0,
            "throttled": 0, "throttled_s": 0.0, "others_cpu_share": share, "others_share": share}


def test_a_run_under_its_pessimistic_side_while_others_held_the_cpus_is_excused_with_the_figures(capsys):
    slowed = {**row("wait", "gunicorn_flask", 3.8, 5.0, 4.0), "neighbours": others(0.38)}  # 5% under, margin 12%
    checked = claims.check_claims(lab(tests=lab()["tests"] + [slowed]))
    out = capsys.readouterr().out
    assert not checked.failed() and "✗" not in out
    assert ("⚠ wait, gunicorn_flask: every answer a 200, X between the law's two sides: not judged: wait,"
            " gunicorn_flask: 3.8 req/s, under the pessimistic side 4.0") in out
    assert "others held the CPUs 38% of this run, more than the claim's margin of 12%, enough to explain a miss of 5%" in out
    assert "1 could not be judged" in out


@pytest.mark.parametrize("changed", [
    {**row("wait", "gunicorn_flask", 3.8, 5.0, 4.0), "neighbours": others(0.0)},  # the same miss on a quiet run
    {**row("wait", "gunicorn_flask", 5.5, 5.0, 4.0), "neighbours": others(0.38)},  # faster than the law: never theirs
])
def test_the_same_miss_on_a_quiet_run_or_on_the_fast_side_still_fails(capsys, changed):
    with pytest.raises(ClaimsFailed) as failed:
        claims.check_claims(lab(tests=lab()["tests"] + [changed]))
    assert "wait, gunicorn_flask: " in str(failed.value) and "⚠" not in capsys.readouterr().out


def test_a_queue_growing_faster_than_its_bounds_while_others_held_the_cpus_is_excused(capsys):
    claims.check_claims(lab(queue_slope={**queue_run(slope=48.0), "neighbours": others(0.4)}))  # 7% over, margin 12%
    assert "⚠ the queue grows at λ − c / T_w: not judged: slope 48.0 tasks/s" in capsys.readouterr().out
    with pytest.raises(ClaimsFailed):
        claims.check_claims(lab(queue_slope={**queue_run(slope=48.0), "neighbours": others(0.01)}))
