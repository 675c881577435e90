"""Lesson 05's results file and its closing claims, one line each.

Claims between two predictions are judged as lesson 03 judges them: a request behind the half-sent one
answered after the dawdler finished, or at once; 8 waits of 200 ms took one wait (they overlapped) or eight
(one after another). The measurement must sit nearer the claim's prediction than the opposite one.
"""

import statistics

from iolab import theory
from iolab.claims import Claims

LESSON = "05-event-loop-from-scratch"
STEPS_THAT_SLEEP = ("step 1 (blocking)", "step 3 (callbacks)", "step 4 (event loop)", "step 5 (coroutines)")
SYNC_SLEEP_MS, SYNC_SLEEP_GAP_MS = 300, 50  # the blocking callback of phase 3, and when / follows it
PIPELINED_WAIT_MS = 300  # what / is pipelined behind


def results(plan, *, profiles, race, asleep, asleep_theory, ceiling_rps, exercises, asleep_others=None,
            race_others=None, trace_others=None, **trace):
    """This run's figures as plain data: what the results file holds and what the claims are checked on.
    `asleep_others`, `race_others`, `trace_others`: what else held the CPUs while the async sleep, the race and the
    traced phases ran (each a Neighbours, None where not read).

    `trace` holds the traced phases' figures: finish_after_s, phases (their summaries), phase_ms (their lengths),
    waits_throttled_s, cores, wait_statuses, longest_callback_ms, warnings, blocked_ms and pipelined_ms.
    """
    scratch_rps, tornado_rps = statistics.median(race["step4_event_loop"]), statistics.median(race["tornado_app"])
    return {
        "scratch_rps": scratch_rps,
        "tornado_rps": tornado_rps,
        "ratio": scratch_rps / tornado_rps,
        "async_sleep_rps": asleep.rps,
        "bound_rps": ceiling_rps,
        "async_sleep_demand_ms": asleep.demand_ms,
        "async_sleep_bounds": asleep_theory.lines(),
        "async_sleep_errors": asleep.errors,
        "async_sleep_neighbours": asleep_others.as_dict() if asleep_others else None,
        "race_neighbours": race_others.as_dict() if race_others else None,
        "trace_neighbours": trace_others.as_dict() if trace_others else None,
        "step_profiles": profiles,
        "trace": trace,
        "race": race,
        "exercises": exercises,
        "solutions": plan.solutions,
    }


def _check_steps(claims, profiles, dawdle_ms):
    """Step 1 makes everyone wait for a dawdling client, the others do not; step 2 burns a core, the rest sleep."""
    step1_p, step2_p = profiles["step 1 (blocking)"], profiles["step 2 (busy-wait)"]
    claims.nearer("step 1 waits for the half-sent request (ms)", step1_p["half_sent_wait_ms"], dawdle_ms, 0)
    for name, p in list(profiles.items())[1:]:
        claims.nearer(f"{name} does not wait for the half-sent request (ms)", p["half_sent_wait_ms"], 0, dawdle_ms)
        claims.nearer(f"{name}: 8 waits of 200 ms overlap (ms)", p["waits_ms"], 200, 8 * 200)
    # Step 2 wants a whole core with no client at all (its demand: CPU plus time queued for one, nearer 100% than
    # none); the selectors sleep. What a sleeping server uses is this run's noise floor: the four sleepers' idle
    # CPU, their highest plus three of their standard deviations. Step 2 must have had more than that, and each
    # sleeper must sit nearer none than step 2's demand.
    step2_demand = step2_p["idle_cpu_percent"] + (step2_p["idle_queued_percent"] or 0)
    claims.nearer("step 2's demand while idle (%)", step2_demand, 100, 0)
    asleep_cpu = [profiles[name]["idle_cpu_percent"] for name in STEPS_THAT_SLEEP]
    floor = max(asleep_cpu) + 3 * statistics.pstdev(asleep_cpu)
    claims.check("step 2 uses more CPU while idle than the sleepers' noise floor", step2_p["idle_cpu_percent"] > floor,
                 f"{step2_p['idle_cpu_percent']:.1f}%", f"({floor:.1f}, ∞)%",
                 f"step 2 used {step2_p['idle_cpu_percent']:.1f}% of a CPU while idle, not above the sleepers' noise"
                 f" floor {floor:.1f}%")
    for name in STEPS_THAT_SLEEP:
        claims.nearer(f"{name}: CPU while idle (%)", profiles[name]["idle_cpu_percent"], 0, step2_demand)


def _check_trace(claims, trace):
    """A burst keeps the loop in callbacks; waiting keeps it in select(); the sync sleep blocks one callback."""
    phases = trace["phases"]
    waiting, burst, blocked = (phases[label] for label in ("40 users waiting", "hello burst", "sync-sleep"))
    # A CPU quota can stop the loop in the middle of a callback: that stall is the kernel's, not callback work.
    # The kernel adds it up per core, so divided by the cores it is the least the loop can have lost.
    stalled_ms = min(waiting["callbacks_ms"], 1000 * trace["waits_throttled_s"] / trace["cores"])
    working_ms = waiting["callbacks_ms"] - stalled_ms
    # Waiting, the loop sleeps in select() (a share of 1), not works as it did in the burst measured just before.
    claims.nearer(f"share in select() while 40 users wait ({stalled_ms:.0f} ms stalled by a quota taken off)",
           waiting["select_ms"] / (waiting["select_ms"] + working_ms), 1.0, burst["select_share"])
    claims.check("less of the burst than of the waiting is spent in select()",
                 burst["select_share"] < waiting["select_share"],
                 f"{burst['select_share']:.0%} in the burst", f"[0%, {waiting['select_share']:.0%}), the waiting's share",
                 f"the burst spent {burst['select_share']:.1%} in select(), the waiting {waiting['select_share']:.1%}:"
                 f" {phases}")
    # select() hands back several ready sockets at once in a burst: a loop woken once per socket would show 1.
    ready = burst["mean_events_when_woken"]
    claims.check("select() hands back several sockets per wakeup in the burst", ready > 1, f"{ready:.2f}", "(1, ∞)",
                 f"{ready:.2f} sockets per wakeup in the burst")
    # The sync sleep holds the loop for its 300 ms in a callback: the share left to select() is the rest.
    blocked_phase_ms = trace["phase_ms"]["sync-sleep"]
    claims.nearer(f"share in select() during the {blocked_phase_ms:.0f} ms sync-sleep phase", blocked["select_share"],
           max(0.0, 1 - SYNC_SLEEP_MS / blocked_phase_ms), 1.0)
    # 40 waits of 200 ms overlap: all done in about one wait, not forty in turn.
    statuses = trace["wait_statuses"]
    claims.check("every one of the 40 waits was answered 200", all(status == 200 for status in statuses),
                 f"{sum(status == 200 for status in statuses)} of {len(statuses)}", "", str(statuses))
    claims.nearer("40 waits of 200 ms took (ms)", trace["phase_ms"]["40 users waiting"], 200, 40 * 200)
    # time.sleep(0.3) never returns early, and both the trace (0.1 µs) and the warning (whole ms) round no
    # lower: facts of the system, not tunings.
    longest_ms = trace["longest_callback_ms"]
    claims.check("the longest callback lasted the whole sync sleep", longest_ms >= SYNC_SLEEP_MS - 1e-4,
                 f"{longest_ms:.1f} ms", f"[{SYNC_SLEEP_MS}, ∞) ms",
                 f"the longest callback ran {longest_ms:.1f} ms, under the {SYNC_SLEEP_MS} ms sleep")
    warnings = trace["warnings"]
    warned = bool(warnings) and warnings[-1][1] >= SYNC_SLEEP_MS and "/sync-sleep?ms=300" in warnings[-1][0]
    claims.check("the loop warned of the slow /sync-sleep?ms=300 callback", warned,
                 f"{warnings[-1][1]} ms" if warnings else "no warning", f"[{SYNC_SLEEP_MS}, ∞) ms",
                 f"expected a warning of a /sync-sleep?ms=300 callback of at least 300 ms, got {warnings}")
    # / sent 50 ms after the sync sleep waits out its rest (q5); pipelined behind a 300 ms wait it waits that (q6).
    claims.nearer("/ behind the sync sleep waited (ms)", trace["blocked_ms"], SYNC_SLEEP_MS - SYNC_SLEEP_GAP_MS, 0)
    claims.nearer("/ pipelined behind /async-sleep?ms=300 waited (ms)", trace["pipelined_ms"], PIPELINED_WAIT_MS, 0)


def check_claims(results):
    """Check the lesson's claims on `results`, print one line each, and raise ClaimsFailed naming any that failed."""
    claims = Claims(LESSON)
    trace, race = results["trace"], results["race"]
    _check_steps(claims, results["step_profiles"], trace["finish_after_s"] * 1000)
    _check_trace(claims, trace)
    # Our loop is at least as fast as Tornado at hello world, as far as this machine can tell: runs of one server
    # differ, and the least error any one figure has against each server's own runs (theory.least_error) is how
    # far apart two medians may lie by noise alone. One repetition measures no noise: then nothing is checked.
    ratio, scratch_rps, tornado_rps = results["ratio"], results["scratch_rps"], results["tornado_rps"]
    if min(len(runs) for runs in race.values()) >= 2:
        noise = max(theory.least_error(race[name]) for name in race)
        claims.check("step4_event_loop at least as fast as tornado_app, within their runs' noise", ratio >= 1 - noise,
                     f"{ratio:.3f} x", f"[{1 - noise:.3f}, ∞) x",
                     f"step4_event_loop reached only {ratio:.3f} x tornado_app ({scratch_rps:.0f} vs"
                     f" {tornado_rps:.0f} req/s), beyond the {noise:.1%} its runs differ by")
    else:
        claims.skip("step4_event_loop at least as fast as tornado_app",
                    f"step4_event_loop / tornado_app = {ratio:.2f} from one run each: no noise measured")
    # The article's experiment on our loop lies within the bounds from the CPU it measured (lesson 02 derives them).
    rps, bounds, errors = results["async_sleep_rps"], results["async_sleep_bounds"], results["async_sleep_errors"]
    low, high = bounds["pessimistic"], bounds["optimistic"]
    claim = "async sleep within theory's bounds (2% for the measuring), without errors"
    if errors:
        claims.check(claim, False, f"{rps:.2f} req/s, {errors} errors", f"[{low * 0.98:.2f}, {high * 1.02:.2f}] req/s",
                     f"async sleep gave {rps:.2f} req/s, outside {low:.2f} .. {high:.2f}")
    else:  # a rate: others that held the CPUs can only have cut it
        claims.timing(claim, rps, low * 0.98, high * 1.02, neighbours=results.get("async_sleep_neighbours"),
                      unit="req/s", digits=2,
                      message=f"async sleep gave {rps:.2f} req/s, outside {low:.2f} .. {high:.2f}", slower="below")
    if results["solutions"]:
        statuses = results["exercises"]
        claims.check("every exercise's solution is correct", set(statuses.values()) == {"correct"},
                     ", ".join(f"{q}: {s}" for q, s in statuses.items()), "", str(statuses))
    held = claims.report()
    print(f"step4_event_loop = {ratio:.2f} x tornado_app; async sleep at {rps / results['bound_rps']:.1%} of the"
          f" ceiling, {rps / bounds['in step'] - 1:+.1%} against users in step.")
    return held
