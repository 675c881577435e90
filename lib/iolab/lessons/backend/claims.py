"""Lesson 10's closing claims, each checked against this run's bounds and printed on a line of its own."""

from iolab.claims import Claims

from . import runs

TOLERANCE = 0.02  # how far past a law's bound a measurement may lie: the measuring's own error


def check_claims(lab, skipped=None):
    """Check every claim lesson 10 makes against what `lab` (an experiment.Lab) measured, print one line each, and
    raise iolab.claims.ClaimsFailed naming each that failed with its values; a part the run skipped is said so."""
    claims = Claims("10-slow-backend")
    if skipped:
        claims.skip("every claim of this lesson", skipped)
    else:
        cpu_bound(claims, lab.hello_rows + lab.forget_rows)
        sweep = (lab.sweep.rows + [lab.sweep.await_row]) if lab.sweep else []
        bottleneck_law(claims, lab.wait_rows + sweep)
        article(claims, lab.wait_rows, lab.forget_rows)
        queue(claims, lab.queue, lab.plan)
        bounded(claims, lab.bounded, lab.plan)
        faults(claims, lab.faults, lab.plan)
        memory_cap(claims, lab.cap, lab.plan)
    claims.report()
    return claims


def cpu_bound(claims, rows):
    """1. The utilization law: no front end answered faster than its CPU allows, with D measured in the same run."""
    for row in rows:
        name = f"{row.test}, {row.front_end}"
        ceiling = row.bound_rps * (1 + TOLERANCE)
        if not (row.summary.errors == 0 and set(row.statuses) == {200}):
            claims.check(f"{name}: every answer a 200, X ≤ min(w, cores) / D", False,
                         message=f"{(row.front_end, row.statuses)}: {row.summary.errors} errors")
            continue
        claims.check(f"{name}: every answer a 200, X ≤ min(w, cores) / D", row.rps <= ceiling,
                     f"{row.rps:.1f} req/s", f"[0, {ceiling:.1f}]",
                     f"{name}: {row.rps:.1f} req/s, over the bound min(w, cores) / D = {row.bound_rps:.1f}")


def bottleneck_law(claims, rows):
    """2. The bottleneck law: under the bound from T, and above its pessimistic side, built from this run: R and T_w
    measured alone, each tier's own way (R − T) counted twice, each tier's wait for a CPU in the run, and its
    threads' turns at their process's GIL, (slots − 1) × the tier's CPU per request (runs.gil_turns)."""
    for row in rows:
        name = f"{row.test}, {row.front_end}"
        claim = f"{name}: every answer a 200, X between the law's two sides"
        ceiling = row.bound_rps * (1 + TOLERANCE)
        bounds = f"[{row.low_rps:.1f}, {ceiling:.1f}]"
        if set(row.statuses) != {200}:
            claims.check(claim, False, message=str((row.test, row.front_end, row.statuses)))
        elif row.rps > ceiling:
            claims.check(claim, False, f"{row.rps:.1f} req/s", bounds,
                         f"{name}: {row.rps:.1f} req/s, over the law's bound min(N, F, c) / T = {row.bound_rps:.1f}")
        else:
            claims.check(claim, row.rps >= row.low_rps, f"{row.rps:.1f} req/s", bounds,
                         f"{name}: {row.rps:.1f} req/s, under the pessimistic side {row.low_rps:.1f}"
                         f" (predicted {row.predicted_rps:.1f}; waits for a CPU {row.waits_ms[0]:.1f} and"
                         f" {row.waits_ms[1]:.1f} ms)")


def article(claims, wait_rows, forget_rows):
    """3. With the article's one-slot worker pool, the worker pool limits all three front ends. 4. Fire and forget
    answers faster than waiting, on the same front end and backend."""
    if not wait_rows:
        claims.skip("the worker pool limits all three front ends", "test 2 did not run")
        return
    named = [row.bottleneck for row in wait_rows]
    claims.check("the article's tests: the worker pool limits all three front ends",
                 all("worker pool" in bottleneck for bottleneck in named), "; ".join(named), message=str(named))
    waits = {row.front_end: row.rps for row in wait_rows}
    forgets = {row.front_end: row.rps for row in forget_rows}
    claims.check("fire and forget answers faster than waiting, on each front end",
                 all(row.rps > waits[row.front_end] for row in forget_rows),
                 ", ".join(f"{name} {rps:.1f} against {waits[name]:.1f} req/s" for name, rps in forgets.items()),
                 message=str((forgets, waits)))


def queue(claims, run, plan):
    """5. The queue grows at λ − c / T_w: between the law's two sides with this run's arrivals and waits for a CPU,
    widened by the fitted slope's own standard error (its noise, measured in the same run)."""
    if not run:
        claims.skip("the queue grows at λ − c / T_w", "the queue's run did not run")
        return
    lowest, highest = run.slope_bounds(plan.task_s)
    slope = run.measured_slope()
    claims.within("the queue grows at λ − c / T_w", slope, lowest, highest, "tasks/s",
                  message=f"slope {slope:.1f} tasks/s, outside [{lowest:.1f}, {highest:.1f}]"
                          f" (predicted {run.predicted_slope:.1f}; arrivals sent {run.sent_rps():.1f}/s)")


def bounded(claims, run, plan):
    """6. The bounded queue never holds more than its limit, and refuses the rest quickly: a refusal comes back
    before an accepted task would have left a full queue, limit / (c / T): it never waits behind the queue."""
    if not run:
        claims.skip("the bounded queue stays within its limit", "the bounded queue did not run")
        return
    longest = max(n for _, n in run.points)
    claims.check("the bounded queue never holds more than its limit", longest <= plan.queue_limit,
                 f"{longest} tasks", f"[0, {plan.queue_limit}]", str(run.points))
    refused = [sample.latency for sample in run.result.samples if sample.status == 503]
    full_queue_s = plan.queue_limit / run.drain_here()
    slowest_ms = max(refused, default=float("nan")) * 1000
    claims.check("a refusal comes back before a full queue would empty", bool(refused) and max(refused) < full_queue_s,
                 f"{len(refused)} refused, the slowest in {slowest_ms:.0f} ms", f"[0, {full_queue_s * 1000:.0f}) ms",
                 f"{len(refused)} refused, the slowest in {slowest_ms:.0f} ms; a full queue empties"
                 f" in {full_queue_s * 1000:.0f} ms")


def faults(claims, found, plan):
    """7. Nothing hangs: every request of the fault runs got an HTTP answer within the front end's timeout and a
    second; the worker's kill leaves its c running tasks unacked and loses none; Redis's death gives 503s."""
    if not found:
        reason = "run_faults is False" if not plan.run_faults else "the fault runs did not run"
        claims.skip("nothing hangs when the worker pool or Redis dies", reason)
        return
    limit_ms = plan.timeout_ms + 1000
    for name, fault in found.items():
        answers = fault["answers"]
        claims.check(f"{name}: every answer a 200, 503 or 504", set(answers) <= {"200", "503", "504"},
                     ", ".join(answers), message=str((name, answers)))
        slowest = max((v["slowest_ms"] for v in answers.values()), default=0.0)
        claims.check(f"{name}: every answer within the front end's timeout and a second",
                     all(v["slowest_ms"] <= limit_ms for v in answers.values()),
                     f"slowest {slowest:.0f} ms", f"[0, {limit_ms}] ms", str((name, answers)))
    worker = found["worker_killed"]
    timed_out = worker["answers"].get("504", {}).get("count", 0)
    claims.check("worker_killed: the requests after the kill get a 504", timed_out > 0, f"{timed_out} 504s",
                 message=str(worker["answers"]))
    left = worker["left_in_redis"]
    unacked = left["unacked (running when killed)"]
    claims.check("worker_killed: the c tasks running when it died stay unacked in Redis",
                 unacked == plan.queue_workers, f"{unacked} unacked, c = {plan.queue_workers}",
                 message=str((left, plan.queue_workers)))
    queued = left["queued (LLEN celery)"]
    claims.check("worker_killed: no task lost, unacked + queued = the 504s", unacked + queued == timed_out,
                 f"{unacked} unacked + {queued} queued, {timed_out} 504s", message=str((left, timed_out)))
    refused = found["redis_killed"]["answers"].get("503", {}).get("count", 0)
    claims.check("redis_killed: the front end answers 503 once Redis is gone", refused > 0, f"{refused} 503s",
                 message=str(found["redis_killed"]["answers"]))


def memory_cap(claims, cap, plan):
    """8. Redis's memory cap ends the growth: it holds the count at which this run's own readings of its memory
    reach the cap, within their scatter; after the first refusal every answer is a 503 with the reason (none
    hung: a hang would be the client's timeout, not a 503), and alone faster than with every user taking turns."""
    if not cap:
        reason = "quick mode skips the memory cap's run" if plan.quick else "the memory cap's run did not run"
        claims.skip("Redis's memory cap ends the queue's growth", reason)
        return
    fewest, most = cap.held_bounds()
    claims.within("Redis holds what its own readings of memory put at the cap", cap.held, fewest, most, "tasks", 0,
                  f"Redis held {cap.held} tasks; its readings put the cap at {fewest:.0f} to {most:.0f}"
                  f" ({cap.as_dict()})")
    taken = runs.statuses(cap.result).get(200)
    claims.check("every task Redis held was answered 200", cap.held == taken, f"{cap.held} held, {taken} 200s",
                 message=str(cap.as_dict()))
    refusals = cap.refusals()
    after = sorted({sample.status for sample in refusals})
    claims.check("after the first refusal every answer is a 503", bool(refusals) and after == [503],
                 f"{len(refusals)} answers: {after}", message=str(cap.as_dict()))
    claims.check("a 503 alone comes faster than with every user taking turns", cap.reason_ms <= cap.median_503_ms(),
                 f"alone {cap.reason_ms:.1f} ms, with every user {cap.median_503_ms():.1f} ms", "",
                 f"alone a 503 took {cap.reason_ms:.1f} ms, with {plan.forget_users} users {cap.median_503_ms():.1f} ms")
    claims.check("the 503 says the broker is full", cap.reason_status == 503 and cap.reason.startswith("503 broker full"),
                 cap.reason, message=cap.reason)
