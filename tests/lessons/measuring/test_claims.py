"""Lesson 09's closing claims on plain data: a quick run's figures pass, and a broken one is named with its values."""

import copy
import json
import math
from types import SimpleNamespace

import pytest

from iolab.claims import ClaimsFailed
from iolab.lessons.measuring import claims, parameters, view
from iolab.neighbours import Neighbours
from iolab.params import ParameterError

# A quick run's figures as claims.results writes them (rounded; the parts no claim reads left out).
QUICK_RUN = json.loads("""
{"stall": {"closed_p99_ms": 8.823, "wrk_p99_ms": 471.892, "open_p99_ms": 488.59, "predicted_open_p99_ms": 477.369,
  "open_p99_bounds_ms": [468.963, 493.425], "open_bounds": {"m": 7, "due_in_stall": 101}, "corrected_p99_ms": 470.242,
  "corrected_p99_floor_ms": 453.894, "stall_s": 0.502, "rate_rps": 200, "duration_s": 3, "stall_asked_s": 0.5,
  "users": 3, "open_requests": 600, "open_stop_reason": "completed", "open_stall_from_s": 0.719, "open_run_s": 2.995,
  "open_stall_cut_short": false, "closed_requests": 481, "closed_stalled_share": 0.006, "closed_send_lag_s": 0.004,
  "closed_calm_p99_ms": 8.823, "wrk": {"requests": 475, "rps": 157.86, "max_ms": 502.04, "stall_s": 0.5}},
 "ab": {"rps": 32.49, "line_one_ms": 307.787, "line_two_ms": 30.779, "implied_concurrency": 10.0,
  "lone_first_duration_s": 0.404, "wait_ms": 200, "concurrency": 10, "lone_completed": 10, "lone_rps": 24.73,
  "keep_alive_requests": 20, "keep_alive_completed": 20},
 "wrk_timeout": {"wrk_max_ms": 1.13, "wrk_timeouts": 3, "lab_max_ms": 2581.065, "stall_s": 2.5, "lab_stall_s": 2.5,
  "wrk_stall_s": 2.5},
 "errors_run": {"lab_headline": "WARNING: 200 of 200 answers were not 2xx (200 × 404): the rate counts errors.",
  "lab_rps": 2849.01, "lab_non_2xx": 200, "lab_completed": 200, "wrk_rps": 5175.72, "wrk_non_2xx": 5188,
  "wrk_requests": 5188, "bottle_wrk_rps": 4210.4, "bottle_wrk_non_2xx": 4215, "bottle_wrk_requests": 4215},
 "open_vs_closed": [
  {"load": 0.3, "closed_ms": 4.537, "open_ms": 5.798, "predicted_closed_ms": 5.41, "predicted_open_ms": 5.843,
   "open_errors": 0, "closed_errors": 0, "band_open_ms": [5.605, 7.695], "band_closed_ms": [4.488, 5.41],
   "noise_open_ms": 0.338, "noise_closed_ms": 0.038},
  {"load": 1.3, "closed_ms": 13.44, "open_ms": 151.867, "predicted_closed_ms": 19.337, "predicted_open_ms": Infinity,
   "open_errors": 0, "closed_errors": 0, "band_open_ms": [Infinity, Infinity], "band_closed_ms": [4.256, 19.337],
   "noise_open_ms": 36.038, "noise_closed_ms": 0.12}],
 "cpu_ms": 4, "growth_past_1_over_D": {"load": 1.3, "first_third_ms": 72.139, "last_third_ms": 236.394,
  "predicted_first_ms": 60.2, "predicted_last_ms": 178.4, "service_ms": 5.32, "noise_ms": 36.038},
 "percentiles": {"averaged_window_p99_ms": 250.51, "merged_p99_ms": 488.59,
  "windows_p99_ms": [512.026, 483.595, 3.579, 2.839], "calm_p99_ms": 3.477},
 "client_bottleneck": {"client_demand_ms": 0.909, "demand_ms": 0.304}}
""")
SIZES = dict(rate_rps=200, duration_s=20, stall_s=1.0, users=10, ab_requests=200, ab_concurrency=40, ab_wait_ms=1000,
             slow_stall_s=3.0, cpu_ms=4, loads=[0.2, 0.4, 0.6, 0.8, 1.3], point_s=4)


def plan(quick=False, **sizes):
    return parameters.Plan.from_cell({**parameters.DEFAULTS, **sizes, "quick": quick})


def test_a_quick_runs_figures_hold_every_claim_one_line_each(capsys):
    checked = claims.check_claims(copy.deepcopy(QUICK_RUN))
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == f"All {len(checked.rows)} of this lesson's claims hold on this run."
    assert len(checked.rows) == 24 and len(lines) == 25, lines  # 2 loads: 3 claims at 0.3, 1 at 1.3, 2 past 1 / D
    assert "✓ the open loop's p99 lies where the stall and the drain put it: 488.6 ms within [469.0, 493.4] ms" in lines


def test_growth_is_judged_against_the_runs_noise_and_skipped_where_the_queue_fed_its_sends_would_not_grow(capsys):
    # A run that grew less than its own noise fails, naming what a queue fed its sends predicted.
    flat = copy.deepcopy(QUICK_RUN)
    flat["growth_past_1_over_D"]["last_third_ms"] = 100.0
    with pytest.raises(ClaimsFailed, match=r"up 28 ms\), not above the run's noise ± 36 ms, though a queue fed"):
        claims.check_claims(flat)
    # Where the queue fed this run's sends at its own service time would not grow beyond the noise either, the run
    # was not far enough past 1/D: the claim is skipped with its figures, not passed.
    near = copy.deepcopy(QUICK_RUN)
    near["growth_past_1_over_D"].update(last_third_ms=80.0, predicted_last_ms=90.0)
    checked = claims.check_claims(near)
    assert [row[0] for row in checked.rows].count("–") == 1 and not checked.failed()
    out = capsys.readouterr().out
    assert ("load 1.3: the open loop's latency grows through the run: skipped, a queue fed this run's sends at 5.32 ms"
            " each predicts 60 → 90 ms, within the run's noise ± 36 ms: not far enough past 1/D to show it") in out


def test_a_p99_outside_its_bounds_fails_naming_its_values_after_every_claim_is_printed(capsys):
    broken = copy.deepcopy(QUICK_RUN)
    broken["stall"]["open_p99_ms"] = 520.0
    with pytest.raises(ClaimsFailed, match=r"open loop p99 520\.0 ms, expected 469\.0 to 493\.4 ms") as failure:
        claims.check_claims(broken)
    assert "1 of 24 claims failed" in str(failure.value)
    out = capsys.readouterr().out
    assert "✗ the open loop's p99 lies where the stall and the drain put it: 520.0 ms, outside [469.0, 493.4] ms" in out
    assert "✓ the threaded client costs more CPU per request than the server" in out  # the claims after it still ran


def test_a_p99_others_stretched_is_excused_with_their_figures(capsys):
    slowed = copy.deepcopy(QUICK_RUN)
    slowed["stall"]["open_p99_ms"] = 520.0  # 5 % past its highest bound; the band is 2.5 % wide
    slowed["stall"]["open_neighbours"] = {"others_share": 0.3}
    checked = claims.check_claims(slowed)
    assert [row[0] for row in checked.rows].count("⚠") == 1
    out = capsys.readouterr().out
    assert "⚠ the open loop's p99 lies where the stall and the drain put it: not judged: open loop p99 520.0 ms" in out
    assert "others held the CPUs 30% of this run, more than the claim's margin of 3%, enough to explain a miss of 5%" in out


def test_the_same_p99_on_a_quiet_run_still_fails():
    quiet = copy.deepcopy(QUICK_RUN)
    quiet["stall"]["open_p99_ms"] = 520.0
    quiet["stall"]["open_neighbours"] = {"others_share": 0.01}
    with pytest.raises(ClaimsFailed, match=r"1 of 24 claims failed(.|\n)*open loop p99 520\.0 ms, expected 469\.0"):
        claims.check_claims(quiet)


def test_a_run_without_ab_or_wrk_skips_their_claims_and_says_why(capsys):
    bare = copy.deepcopy(QUICK_RUN)
    bare["ab"] = None
    bare["stall"]["wrk"] = bare["stall"]["wrk_p99_ms"] = None
    bare["wrk_timeout"] = {"lab_max_ms": 2581.065, "lab_stall_s": 2.5}
    bare["errors_run"].update(wrk_rps=None, wrk_non_2xx=None, wrk_requests=None, bottle_wrk_rps=None,
                              bottle_wrk_non_2xx=None, bottle_wrk_requests=None)
    checked = claims.check_claims(bare)
    assert sum(row[0] == "–" for row in checked.rows) == 8, checked.rows
    assert "– ab -k kept every connection: skipped, ab did not run" in capsys.readouterr().out


def test_the_band_claim_fails_below_the_cpu_a_request_burns():
    broken = copy.deepcopy(QUICK_RUN)
    broken["open_vs_closed"][0]["closed_ms"] = 3.9
    with pytest.raises(ClaimsFailed, match=r"load 0\.3: closed mean 3\.90 ms, expected 4\.00 to 5\.52 ms"):
        claims.check_claims(broken)


def test_parameters_out_of_range_are_refused_by_name_and_quick_sets_its_sizes():
    full = plan(**SIZES)
    assert full.sizes == tuple(SIZES.values()) and full.cores >= 1 and full.users == 10
    quick = plan(True, **SIZES)
    assert quick.quick and quick.duration_s == 3 and quick.loads == [0.3, 0.7, 1.3]
    with pytest.raises(ParameterError, match="users"):
        plan(**(SIZES | {"users": 30}))  # 1% of 4000 requests is 20
    with pytest.raises(ParameterError, match="loads"):
        plan(**(SIZES | {"loads": [0.2, 0.5]}))


def test_a_band_with_no_top_is_skipped_with_its_reason_never_passed(capsys):
    saturated = copy.deepcopy(QUICK_RUN)
    saturated["open_vs_closed"][0]["band_open_ms"] = [5.605, math.inf]  # this run's D filled the CPU at this rate
    saturated["open_vs_closed"][0]["open_ms"] = 900.0  # a mean that no band with a top would let through
    checked = claims.check_claims(saturated)
    out = capsys.readouterr().out
    assert not checked.failed() and "✓ load 0.3: the open loop's mean" not in out
    assert ("– load 0.3: the open loop's mean as a queue fed its own sends predicts: skipped, the CPU this run"
            " measured per request") in out


def test_the_open_loop_is_judged_against_its_own_schedules_queue_and_a_noisy_run_says_it_cannot_judge(capsys):
    slow = copy.deepcopy(QUICK_RUN)
    slow["open_vs_closed"][0]["open_ms"] = 9.5  # above the fed queue's 7.695 by more than three of its 0.338 ms
    with pytest.raises(ClaimsFailed, match=r"load 0\.3: open mean 9\.50 ms, expected 4\.59 to 8\.71 ms"):
        claims.check_claims(slow)
    noisy = copy.deepcopy(QUICK_RUN)
    noisy["open_vs_closed"][0]["noise_open_ms"] = 3.0  # three of them span more than the prediction itself
    noisy["open_vs_closed"][0]["open_ms"] = 30.0
    checked = claims.check_claims(noisy)
    out = capsys.readouterr().out
    assert not checked.failed()
    assert "the open loop's mean as a queue fed its own sends predicts: skipped, this run's noise makes the band" in out


def test_the_neighbours_column_shows_each_runs_share_or_unknown():
    crowded = Neighbours(1.0, "host", None, 0.0, 0.0, 0, 0.0, 0.38)
    assert view.others_held(SimpleNamespace(others=crowded)) == "38%"
    assert view.others_held(SimpleNamespace(others=None)) == "unknown"
    assert view.others_held_both(SimpleNamespace(others_closed=None, others_open=crowded)) == "unknown / 38%"
