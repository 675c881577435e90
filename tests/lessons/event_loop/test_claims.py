"""Lesson 05's claims on plain data: the claims of a run as the lesson draws it hold, a broken one is named with its values."""

from types import SimpleNamespace

import pytest

from iolab.claims import ClaimsFailed
from iolab.lessons.event_loop import claims, parameters
from iolab.params import ParameterError


def profile(half_sent_ms, waits_ms, idle_cpu, queued=0.0):
    return {"half_sent_wait_ms": half_sent_ms, "waits_ms": waits_ms, "idle_cpu_percent": idle_cpu,
            "idle_queued_percent": queued}


def run_results(repetitions=3, solutions=True):
    """A run as the lesson draws it: only step 1 waits for the dawdler, only step 2 burns a core."""
    profiles = {"step 1 (blocking)": profile(503, None, 0.1), "step 2 (busy-wait)": profile(1, 212, 97.0, 2.0),
                "step 3 (callbacks)": profile(1, 210, 0.0), "step 4 (event loop)": profile(1, 209, 0.2),
                "step 5 (coroutines)": profile(1, 211, 0.1)}
    phases = {"hello burst": {"select_ms": 40, "callbacks_ms": 400, "select_share": 0.09, "mean_events_when_woken": 7.1},
              "40 users waiting": {"select_ms": 240, "callbacks_ms": 10, "select_share": 0.96,
                                   "mean_events_when_woken": 3.0},
              "sync-sleep": {"select_ms": 1, "callbacks_ms": 301, "select_share": 0.003, "mean_events_when_woken": 1}}
    return {
        "scratch_rps": 9000.0, "tornado_rps": 4000.0, "ratio": 2.25, "async_sleep_rps": 39.8, "bound_rps": 40.0,
        "async_sleep_demand_ms": 0.05, "async_sleep_errors": 0,
        "async_sleep_bounds": {"optimistic": 40.0, "in step": 39.8, "pessimistic": 39.4},
        "step_profiles": profiles,
        "trace": {"finish_after_s": 0.5, "phases": phases, "phase_ms": {"40 users waiting": 255, "sync-sleep": 305},
                  "waits_throttled_s": 0.0, "cores": 2, "wait_statuses": [200] * 40, "longest_callback_ms": 301.2,
                  "warnings": [["BufferedStream._on_events GET /sync-sleep?ms=300", 301]], "blocked_ms": 252,
                  "pipelined_ms": 302},
        "race": {"step4_event_loop": [8900.0, 9100.0, 9000.0][:repetitions],
                 "tornado_app": [3950.0, 4050.0, 4000.0][:repetitions]},
        "exercises": {"q1": "correct", "q2": "correct"}, "solutions": solutions,
    }


def test_the_results_keep_the_runs_figures_and_the_plans_solutions():
    race = {"step4_event_loop": [8900.0, 9100.0], "tornado_app": [3950.0, 4050.0]}
    asleep = SimpleNamespace(rps=39.8, demand_ms=0.05, errors=0)
    bounds = SimpleNamespace(lines=lambda: {"optimistic": 40.0, "in step": 39.8, "pessimistic": 39.4})
    found = claims.results(parameters.Plan.from_cell({**parameters.DEFAULTS, "solutions": True}), profiles={},
                           race=race, asleep=asleep, asleep_theory=bounds, ceiling_rps=40.0, exercises={},
                           finish_after_s=0.5)
    assert found["ratio"] == 9000.0 / 4000.0 and found["solutions"] is True and found["trace"] == {"finish_after_s": 0.5}


def test_the_claims_of_a_run_as_the_lesson_draws_it_hold(capsys):
    assert claims.check_claims(run_results()) == 28
    out = capsys.readouterr().out
    assert "✓ step 1 waits for the half-sent request (ms): 503 within (250, ∞), nearer the predicted 500 than 0" in out
    assert "All 28 of this lesson's claims hold on this run." in out


def test_one_repetition_skips_the_race_and_no_solutions_drops_their_claim(capsys):
    assert claims.check_claims(run_results(repetitions=1, solutions=False)) == 26
    assert "– step4_event_loop at least as fast as tornado_app: skipped" in capsys.readouterr().out


def test_a_blocking_step_that_held_nobody_up_fails_and_names_its_figures(capsys):
    results = run_results()
    results["step_profiles"]["step 1 (blocking)"]["half_sent_wait_ms"] = 2.0
    results["async_sleep_rps"] = 30.0
    with pytest.raises(ClaimsFailed) as failure:
        claims.check_claims(results)
    assert "✗ step 1 waits for the half-sent request (ms)" in capsys.readouterr().out
    assert "step 1 waits for the half-sent request (ms): measured 2, predicted 500, the opposite 0" in str(failure.value)
    assert "async sleep gave 30.00 req/s, outside 39.40 .. 40.00" in str(failure.value)


def test_an_async_sleep_others_slowed_is_excused_with_their_figures(capsys):
    results = run_results()
    results["async_sleep_rps"] = 30.0  # 22 % under its lowest bound, 38.61 req/s; the band is 2.6 % wide
    results["async_sleep_neighbours"] = {"others_share": 0.3}
    assert claims.check_claims(results) == 27
    out = capsys.readouterr().out
    assert "⚠ async sleep within theory's bounds (2% for the measuring), without errors: not judged:" in out
    assert "others held the CPUs 30% of this run, more than the claim's margin of 3%, enough to explain a miss of 22%" in out


def test_the_same_async_sleep_on_a_quiet_run_still_fails():
    results = run_results()
    results["async_sleep_rps"] = 30.0
    results["async_sleep_neighbours"] = {"others_share": 0.01}
    with pytest.raises(ClaimsFailed, match="async sleep gave 30.00 req/s, outside 39.40 .. 40.00"):
        claims.check_claims(results)


def test_parameters_are_refused_by_name_and_shrunk_when_quick():
    def plan(**values):
        return parameters.Plan.from_cell({**parameters.DEFAULTS, **values})

    quick = plan(quick=True)
    assert (quick.quick, quick.hello_requests, quick.repetitions, quick.async_requests, quick.idle_seconds) == (
        True, 1000, 2, 120, 0.2)
    with pytest.raises(ParameterError, match="async_requests=10 must be at least async_concurrency=40"):
        plan(async_requests=10)
