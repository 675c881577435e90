"""Lesson 15's closing claims on plain data.

Lesson 15's closing claims on plain data: kept, broken (named), skipped (with its reason), and read back from JSON.
A run that keeps them prints a tick each; one that breaks one names it; the same results read back print the same.
"""

import json
import random

import pytest

from iolab import neighbours
from iolab.claims import ClaimsFailed
from iolab.lessons.service import claims, lag, leak, shutdown, upstreams, view

QUIET = {"others_share": 0.0}


def window(block_ms, period_ms, window_ms, rate=0, seed=1):
    """A window as lag.window returns it: beats at random moments, each late by its residual and a little more."""
    rng = random.Random(seed)
    starts = [k * period_ms for k in range(int(window_ms // period_ms))] if block_ms else []
    due = sorted(rng.uniform(0, window_ms) for _ in range(int(window_ms / 2)))

    def residual(t):
        return next((start + block_ms - t for start in starts if start <= t < start + block_ms), 0.0)

    arrivals = sorted(rng.uniform(0, window_ms) for _ in range(int(rate * window_ms / 1000)))
    return {"lateness_ms": [residual(t) + rng.uniform(0, 0.5) for t in due], "due_ms": due,
            "blocks_ms": [block_ms] * len(starts), "window_ms": window_ms,
            "latency_ms": [residual(t) + 1 + rng.uniform(0, 0.5) for t in arrivals], "errors": 0,
            "neighbours": QUIET}


def lag_figures():
    runs = {"quiet": window(0, 200, 3000, rate=100), "lag": window(50, 200, 3000),
            "served": window(50, 200, 3000, rate=100, seed=2)}
    return lag.predict(runs, 50, 200)


def shutdown_rows(failed_without=40):
    rows = []
    for drain, spared in ((0, (0.0, 10.0)), (800, (0.0, 10.0))):
        calls = [(k / 100, k / 100 + 0.4, True) for k in range(80)]
        if not drain:  # the last 40 sent were in flight at 0.8 s
            calls = [(sent, max(ended, 0.8), ended <= 0.8) for sent, ended, _ in calls]
            calls = [(sent, ended, ok or index < 80 - failed_without) for index, (sent, ended, ok) in enumerate(calls)]
        run = {"calls": calls, "signalled_s": 0.8, "exit_s": 0.01 if not drain else 0.4}
        rows.append(shutdown.summarize(f"service_app, --drain-ms {drain}", run, 100, 400, drain, spared))
    return rows


def upstream_rows():
    """At 100 a second, each taking 0.4 s: upstream 2 (every other request) restarted over 0.6-0.9 s, abruptly (the
    20 it held and the 15 sent to it meanwhile fail), then taken out first (none)."""
    calls = [(k / 100, k / 100 + 0.4, True) for k in range(200)]
    abrupt = [(sent, ended, not (k % 2 and 0.2 < sent <= 0.9)) for k, (sent, ended, _) in enumerate(calls)]
    return [upstreams.summarize("abrupt", {"calls": abrupt, "began_s": 0.6, "ended_s": 0.9}, 400),
            upstreams.summarize("taken out first", {"calls": calls, "began_s": 0.6, "ended_s": 1.6}, 400)]


def leak_rows(free_after=(4, 0)):
    rows = []
    for safe in (False, True):
        steps = [{"cancelled_so_far": 0, "free": 8, "answered": 48, "cancelled": 0, "rate": 150.0, "seconds": 0.32}]
        for done, free in zip((4, 8), free_after):
            free = 8 if safe else free
            rate = 48 / (48 / free * 0.04 + 0.08) if free else 0.0
            steps.append({"cancelled_so_far": done, "free": free, "answered": 48 if free else 0,
                          "cancelled": 0 if free else 48, "rate": rate, "seconds": 48 / rate if rate else 0.0})
        row = {"how": "async with" if safe else "release on the next line", "safe": safe, "slots": 8,
               "hold_ms": 40, "timeout_ms": 300, "steps": steps}
        leak.predict(row, 48)
        rows.append(row)
    return rows


def found(**changes):
    lost = [{"way": "fire and forget", "tasks": 100, "destroyed": 100, "alive": 0},
            {"way": "kept in a set", "tasks": 100, "destroyed": 0, "alive": 100},
            {"way": "in a TaskGroup", "tasks": 100, "destroyed": 0, "alive": 100}]
    return {"lag": lag_figures(), "lost_tasks": lost, "shutdown": shutdown_rows(), "leak": leak_rows(),
            "upstreams": upstream_rows(), "exercises": {}} | changes


def test_a_run_inside_its_bounds_keeps_every_claim(capsys):
    checked = claims.check_claims(found())
    out = capsys.readouterr().out
    assert not checked.failed() and "✗" not in out and out.count("✓") == len(checked.rows)


def test_a_lag_mean_above_its_bounds_is_named():
    figures = lag_figures()
    figures["mean_ms"] = figures["mean_high_ms"] + 5
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(lag=figures))
    assert "the mean lag is the residual life" in str(raised.value)


def test_a_kept_task_destroyed_is_named():
    lost = found()["lost_tasks"]
    lost[1] = lost[1] | {"destroyed": 3, "alive": 97}
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(lost_tasks=lost))
    assert "kept in a set: 3 destroyed and 97 alive of 100" in str(raised.value)


def test_too_few_failures_without_a_drain_are_named():
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(shutdown=shutdown_rows(failed_without=20)))
    assert "about L = X·R = 40 requests fail" in str(raised.value)


def test_a_slot_that_came_back_in_the_leaky_handler_is_named():
    with pytest.raises(ClaimsFailed) as raised:
        claims.check_claims(found(leak=leak_rows(free_after=(5, 0))))
    assert "after 4 cancelled: 4 of 8 slots free" in str(raised.value)


def test_a_section_that_did_not_run_is_skipped_with_its_reason(capsys):
    checked = claims.check_claims(found(shutdown=None))
    assert "shutdown: skipped, its section did not run" in capsys.readouterr().out and not checked.failed()


def test_the_claims_read_back_from_json_print_the_same_lines(tmp_path, capsys):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(found()))
    first = claims.check_claims(found()).lines()
    assert claims.check_claims(json.loads(path.read_text())).lines() == first


def test_each_table_of_runs_shows_the_share_others_held_the_cpus():
    busy = {"others_share": 0.38}
    figures = lag_figures()
    figures["neighbours"]["served"] = busy
    rows = shutdown_rows()
    rows[0]["neighbours"] = busy
    pair = upstream_rows()
    pair[1]["neighbours"] = busy
    leaky = leak_rows()
    leaky[0]["steps"][1]["neighbours"] = busy
    for table in (view.lag_table(figures), view.shutdown_table(rows), view.upstream_table(pair), view.leak_table(leaky)):
        text = table.data
        assert neighbours.COLUMN in text and "38%" in text and ("0%" in text or "unknown" in text), text
