"""Lesson 15's closing claims.

Lesson 15's closing claims, each checked against this run's bounds and printed on a line of its own.
"""

import math

from iolab.claims import Claims

from . import leak

LESSON = "15-running-a-service"


def results(plan, *, lag, lost_tasks, shutdown, leak, exercises, upstreams=None):
    """The lesson's results, as the results file keeps them: figures only (the samples drew the figures)."""
    return {"lag": lag, "lost_tasks": lost_tasks, "shutdown": shutdown, "leak": leak, "exercises": exercises,
            "upstreams": upstreams,
            "plan": {"block_ms": plan.block_ms, "period_ms": plan.period_ms, "lag_seconds": plan.lag_seconds,
                     "tasks": plan.tasks, "hold_ms": plan.hold_ms, "drain_ms": plan.drain_ms, "pool": plan.pool,
                     "quick": plan.quick}}


def check_claims(found):
    """Check every claim of lesson 15 against `found` (the results), print one line each, and raise
    iolab.claims.ClaimsFailed naming each that failed with its values."""
    claims = Claims(LESSON)
    for name, check in (("lag", lag_claims), ("lost_tasks", lost_task_claims), ("shutdown", shutdown_claims),
                        ("upstreams", upstream_claims), ("leak", leak_claims)):
        if isinstance(found.get(name), str):  # the reason it could not run here
            claims.skip(name.replace("_", " "), found[name])
        elif found.get(name) is None:
            claims.skip(name.replace("_", " "), f"its section did not run ({name} is missing from the results)")
        else:
            check(claims, found[name])
    claims.report()
    return claims


def lag_claims(claims, lag):
    """1. The heartbeat's mean lag is the residual life Σb²/2W, plus at most the loop's own lateness; its p99 the
    residual's 99th percentile, about b − Δ/100, within what the beats' count allows. A request's p99 is the same
    residual's, plus at most its own latency and the requests that came in during the same block."""
    others = lag["neighbours"]
    claims.timing(f"the mean lag is the residual life Σb²/2W = {lag['predicted_mean_ms']:.2f} ms",
                  lag["mean_ms"], lag["mean_low_ms"], lag["mean_high_ms"], neighbours=others["lag"], unit="ms",
                  digits=2)
    claims.timing(f"the lag's p99 is the residual's, {lag['predicted_p99_ms']:.1f} ms (about b − Δ/100)",
                  lag["p99_ms"], lag["p99_low_ms"], lag["p99_high_ms"], neighbours=others["lag"], unit="ms", digits=1)
    claims.timing(f"a request's p99 comes from the lag: {lag['predicted_request_p99_ms']:.1f} ms",
                  lag["request_p99_ms"], lag["request_p99_low_ms"], lag["request_p99_high_ms"],
                  neighbours=others["served"],
                  unit="ms", digits=1)
    claims.check("every request of the windows answered", lag["request_errors"] == 0,
                 f"{lag['request_errors']} errors", "0")


def lost_task_claims(claims, rows):
    """2. Tasks nobody holds are all destroyed pending by a collection; kept in a set or a TaskGroup, none."""
    for row in rows:
        lost = row["way"] == "fire and forget"
        expected = row["tasks"] if lost else 0
        claims.check(f"{row['way']}: {expected} of {row['tasks']} tasks destroyed pending",
                     row["destroyed"] == expected and row["alive"] == row["tasks"] - expected,
                     f"{row['destroyed']} destroyed, {row['alive']} alive", f"{expected} destroyed",
                     f"{row['way']}: {row['destroyed']} destroyed and {row['alive']} alive of {row['tasks']},"
                     f" expected {expected} destroyed")


def shutdown_bounds(row):
    """The failures predicted without a drain: X·(R − spared), one either side, R up to the longest request."""
    soonest, latest = row["spared_ms"]
    low = max(0, math.floor(row["rate"] * (row["hold_ms"] - latest) / 1000) - 1)
    high = math.ceil(row["rate"] * (row["longest_ms"] - soonest) / 1000) + 1
    return low, high


def shutdown_claims(claims, rows):
    """3. SIGTERM without a drain fails the requests in flight (L = X·R by Little's law, less what the server still
    answers after the signal); with a drain of at least R, none of those sent before it. The bounds are built from
    this run's own request times and time to exit, so a neighbour that slows the run moves the bounds with it: the
    counts are judged whatever the neighbours (their share is in the section's table)."""
    for row in rows:
        if row["drain_ms"]:
            claims.check(f"{row['how']}: none of the {row['sent']} requests sent before SIGTERM fails",
                         row["failed"] == 0, f"{row['failed']} failed", "0")
        else:
            low, high = shutdown_bounds(row)
            claims.within(f"{row['how']}: about L = X·R = {row['little_L']:g} requests fail", row["failed"], low,
                          high, unit="requests", digits=0)


def upstream_bounds(row):
    """Restarted abruptly, the failures predicted: X·(R + the restart's time)/2, with R from the shortest request to
    the longest, and a request either side of each end of the two windows (nginx's turns, the LISTENING line read a
    moment late)."""
    low = max(0, math.floor(row["rate"] * (row["shortest_ms"] + row["procedure_ms"]) / 2000) - 3)
    high = math.ceil(row["rate"] * (row["longest_ms"] + row["procedure_ms"]) / 2000) + 2
    return low, high


def upstream_claims(claims, rows):
    """3, behind nginx. An upstream restarted while nginx sends to it fails its half of L = X·R and its half of
    what is sent to it while it is down; taken out first, waited for, and put back, it fails none. As in
    shutdown_claims, the bounds come from this run's own times: judged whatever the neighbours."""
    for row in rows:
        if row["how"] == "abrupt":
            low, high = upstream_bounds(row)
            claims.within(f"one of two upstreams restarted abruptly: about X·(R + the restart's time)/2 ="
                          f" {row['predicted']:.0f} requests fail", row["failed"], low, high, unit="requests", digits=0)
        else:
            claims.check(f"one of two upstreams taken out first: none of the {row['sent']} requests fails",
                         row["failed"] == 0, f"{row['failed']} failed", "0")


def leak_claims(claims, rows):
    """4. Each cancellation inside the leaky handler keeps a slot for good: c − cancelled are left, the rate falls
    to (c − cancelled)/T (the bottleneck law), then stops; with `async with` the pool keeps c and its rate."""
    for row in rows:
        for step in row["steps"]:
            done = step["cancelled_so_far"]
            name = f"{row['how']}, after {done} cancelled"
            claims.check(f"{name}: {step['predicted_free']} of {row['slots']} slots free",
                         step["free"] == step["predicted_free"], f"{step['free']} free",
                         f"{step['predicted_free']}")
            rate_claims(claims, row, step, name)


def rate_claims(claims, row, step, name):
    """A pool of s free slots serves n calls of T in no less than ⌈n/s⌉·T: X ≤ n/(⌈n/s⌉·T). With cancellations
    behind it, X lies nearer the prediction (those rounds and the ramp the first step measured) than the other
    way's; with no slot left, nothing is answered."""
    free, hold_s, calls = step["predicted_free"], row["hold_ms"] / 1000, step["answered"] + step["cancelled"]
    if free == 0:
        claims.check(f"{name}: the pool is empty, every request is cancelled waiting", step["answered"] == 0,
                     f"{step['answered']} answered of {calls}", "0")
        return
    # A ceiling: others holding the CPUs only lower a rate, so they never explain a miss of it.
    claims.within(f"{name}: X ≤ n/(⌈n/s⌉·T) with s = {free}", step["rate"], 0,
                  calls / (math.ceil(calls / free) * hold_s), unit="requests/s", digits=1)
    if step["cancelled_so_far"]:
        other = max(0, row["slots"] - step["cancelled_so_far"]) if row["safe"] else row["slots"]
        wrong = leak.rate_through(other, calls, hold_s, row["ramp_s"])
        claims.nearer(f"{name}: X = n/(⌈n/s⌉·T + ramp) with s = {free}, not {other}", step["rate"],
                      step["predicted_rate"], wrong, "requests/s", ".1f",
                      neighbours=step.get("neighbours"), slower="below")
