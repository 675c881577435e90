"""Lesson 10's closing claims, each checked against this run's bounds and printed on a line of its own."""

from iolab.claims import Claims

TOLERANCE = 0.02  # how far past a law's bound a measurement may lie: the measuring's own error


CPU_BOUND = ("hello", "forget")  # the tests whose front ends answer without waiting for the backend


def check_claims(found):
    """Check every claim of lesson 10 against `found` (the results: experiment.Lab.results), print one line each,
    and raise iolab.claims.ClaimsFailed naming each that failed with its values; a part the run skipped is said so."""
    claims = Claims("10-slow-backend")
    if found["skipped"]:
        claims.skip("every claim of this lesson", found["skipped"])
    else:
        plan, rows = found["parameters"], found["tests"]
        cpu_bound(claims, [row for row in rows if row["test"] in CPU_BOUND])
        bottleneck_law(claims, [row for row in rows if row["test"] not in CPU_BOUND])
        article(claims, [row for row in rows if row["test"] == "wait"], [row for row in rows if row["test"] == "forget"])
        queue(claims, found["queue_slope"])
        bounded(claims, found["backpressure"])
        faults(claims, found["faults"], plan)
        memory_cap(claims, found["memory_cap"], plan)
    claims.report()
    return claims


def _statuses(row):
    """The HTTP statuses a row's answers had, as numbers (a results file read back holds them as strings)."""
    return {int(status) for status in row["statuses"]}


def cpu_bound(claims, rows):
    """1. The utilization law: no front end answered faster than its CPU allows, with D measured in the same run."""
    for row in rows:
        name = f"{row['test']}, {row['front_end']}"
        ceiling = row["bound_rps"] * (1 + TOLERANCE)
        if not (row["errors"] == 0 and _statuses(row) == {200}):
            claims.check(f"{name}: every answer a 200, X ≤ min(w, cores) / D", False,
                         message=f"{(row['front_end'], row['statuses'])}: {row['errors']} errors")
            continue
        # A bound from above: others can only slow a run, so a miss here is never theirs (slower="below").
        claims.timing(f"{name}: every answer a 200, X ≤ min(w, cores) / D", row["rps"], 0.0, ceiling,
                      neighbours=row.get("neighbours"), unit="req/s", digits=1,
                      message=f"{name}: {row['rps']:.1f} req/s,"
                              f" over the bound min(w, cores) / D = {row['bound_rps']:.1f}",
                      slower="below")


def bottleneck_law(claims, rows):
    """2. The bottleneck law: under the bound from T, and above its pessimistic side, built from this run: R and T_w
    measured alone, each tier's own way (R − T) counted twice, each tier's wait for a CPU in the run and Redis's
    (on both tiers' way), and its threads' turns at their process's GIL, (slots − 1) × the tier's CPU per request
    (runs.gil_turns); and each user's fresh connection's start, measured alone (runs.started_late)."""
    for row in rows:
        name = f"{row['test']}, {row['front_end']}"
        claim = f"{name}: every answer a 200, X between the law's two sides"
        rps, low_rps, waits_ms = row["rps"], row["low_rps"], row["waits_ms"]
        ceiling = row["bound_rps"] * (1 + TOLERANCE)
        if _statuses(row) != {200}:
            claims.check(claim, False, message=str((row["test"], row["front_end"], row["statuses"])))
            continue
        if rps > ceiling:
            message = f"{name}: {rps:.1f} req/s, over the law's bound min(N, F, c) / T = {row['bound_rps']:.1f}"
        else:
            message = (f"{name}: {rps:.1f} req/s, under the pessimistic side {low_rps:.1f}"
                       f" (predicted {row['predicted_rps']:.1f}; waits for a CPU {waits_ms[0]:.1f}, {waits_ms[1]:.1f}"
                       f" and Redis's {waits_ms[2]:.1f} ms; each user's start {row.get('start_ms', 0.0):.1f} ms)")
        claims.timing(claim, rps, low_rps, ceiling, neighbours=row.get("neighbours"), unit="req/s", digits=1,
                      message=message, slower="below")


def article(claims, wait_rows, forget_rows):
    """3. With the article's one-slot worker pool, the worker pool limits all three front ends. 4. Fire and forget
    answers faster than waiting, on the same front end and backend."""
    if not wait_rows:
        claims.skip("the worker pool limits all three front ends", "test 2 did not run")
        return
    named = [row["bottleneck"] for row in wait_rows]
    claims.check("the article's tests: the worker pool limits all three front ends",
                 all("worker pool" in bottleneck for bottleneck in named), "; ".join(named), message=str(named))
    waits = {row["front_end"]: row["rps"] for row in wait_rows}
    forgets = {row["front_end"]: row["rps"] for row in forget_rows}
    claims.check("fire and forget answers faster than waiting, on each front end",
                 all(row["rps"] > waits[row["front_end"]] for row in forget_rows),
                 ", ".join(f"{name} {rps:.1f} against {waits[name]:.1f} req/s" for name, rps in forgets.items()),
                 message=str((forgets, waits)))


def queue(claims, slope):
    """5. The queue grows at λ − c / T_w: between the law's two sides with this run's arrivals and waits for a CPU,
    widened by the fitted slope's own standard error (its noise, measured in the same run)."""
    if slope["measured"] is None:
        claims.skip("the queue grows at λ − c / T_w", "the queue's run did not run")
        return
    lowest, highest, measured = slope["lowest"], slope["highest"], slope["measured"]
    # Others slow the workers' drain, so the queue grows faster: its slow side is above.
    claims.timing("the queue grows at λ − c / T_w", measured, lowest, highest, neighbours=slope.get("neighbours"),
                  unit="tasks/s", message=f"slope {measured:.1f} tasks/s, outside [{lowest:.1f}, {highest:.1f}]"
                          f" (predicted {slope['predicted']:.1f}; arrivals sent {slope['sent_rps']:.1f}/s)")


def bounded(claims, run):
    """6. The bounded queue never holds more than its limit, and refuses the rest quickly: a refusal comes back
    before an accepted task would have left a full queue, limit / (c / T): it never waits behind the queue."""
    if not run:
        claims.skip("the bounded queue stays within its limit", "the bounded queue did not run")
        return
    longest, limit = run["longest_queue"], run["limit"]
    claims.check("the bounded queue never holds more than its limit", longest <= limit,
                 f"{longest} tasks", f"[0, {limit}]", str(run["points"]))
    refused, slowest_s = run["refused"], run["slowest_refusal_s"]
    full_queue_s = limit / run["drain_rps"]
    slowest_ms = (float("nan") if slowest_s is None else slowest_s) * 1000
    claims.check("a refusal comes back before a full queue would empty", bool(refused) and slowest_s < full_queue_s,
                 f"{refused} refused, the slowest in {slowest_ms:.0f} ms", f"[0, {full_queue_s * 1000:.0f}) ms",
                 f"{refused} refused, the slowest in {slowest_ms:.0f} ms; a full queue empties"
                 f" in {full_queue_s * 1000:.0f} ms")


def faults(claims, found, plan):
    """7. Nothing hangs: every request of the fault runs got an HTTP answer within the front end's timeout and a
    second; the worker's kill leaves its c running tasks unacked and loses none; Redis's death gives 503s."""
    if not found:
        reason = "run_faults is False" if not plan["run_faults"] else "the fault runs did not run"
        claims.skip("nothing hangs when the worker pool or Redis dies", reason)
        return
    limit_ms, workers = plan["timeout_ms"] + 1000, plan["queue_workers"]
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
                 unacked == workers, f"{unacked} unacked, c = {workers}",
                 message=str((left, workers)))
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
        reason = "quick mode skips the memory cap's run" if plan["quick"] else "the memory cap's run did not run"
        claims.skip("Redis's memory cap ends the queue's growth", reason)
        return
    (fewest, most), held = cap["held_bounds"], cap["measured_tasks"]
    claims.within("Redis holds what its own readings of memory put at the cap", held, fewest, most, unit="tasks",
                  digits=0,
                  message=f"Redis held {held} tasks; its readings put the cap at {fewest:.0f} to {most:.0f}"
                  f" ({cap})")
    taken = cap["answered_200"]
    claims.check("every task Redis held was answered 200", held == taken, f"{held} held, {taken} 200s",
                 message=str(cap))
    after_first = cap["after_first_503"]  # {status: answers}, from the first 503 on
    refusals, after = sum(after_first.values()), sorted(int(status) for status in after_first)
    claims.check("after the first refusal every answer is a 503", bool(refusals) and after == [503],
                 f"{refusals} answers: {after}", message=str(cap))
    alone, median = cap["alone_503_ms"], cap["median_503_ms"]
    claims.check("a 503 alone comes faster than with every user taking turns", alone <= median,
                 f"alone {alone:.1f} ms, with every user {median:.1f} ms", "",
                 f"alone a 503 took {alone:.1f} ms, with {plan['forget_users']} users {median:.1f} ms")
    reason = cap["reason"]
    claims.check("the 503 says the broker is full", cap["reason_status"] == 503 and reason.startswith("503 broker full"),
                 reason, message=reason)
