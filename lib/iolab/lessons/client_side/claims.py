"""Lesson 11's closing claims.

Lesson 11's closing claims, each checked against this run's bounds and printed on a line of its own.
"""

from iolab.claims import EXCUSED, Claims

from . import blocking, timeouts
from .limits import HTTPX_KEEPALIVE, limit_read_back

LESSON = "11-the-client-side"
READ_BACK_TOLERANCE = 0.15  # L read back within 15 % of P · Z / (Z + P · D): the rounds' edges, the CPU's timing


def results(plan, *, fanouts, limit_rows, timeouts_result, blocking_result, exercises):
    """The lesson's results, as the results file keeps them: each call's times left out (the figures drew them)."""
    def kept(row):
        return {key: value for key, value in row.items() if key != "calls_timed"}

    return {"fanout": [kept(row) for row in fanouts.values()], "limits": [kept(row) for row in limit_rows],
            "timeouts": timeouts_result, "blocking": blocking_result, "exercises": exercises,
            "plan": {"calls": plan.calls, "call_ms": plan.call_ms, "threads": plan.threads,
                     "semaphore": plan.semaphore, "limit_ms": plan.limit_ms, "rounds": plan.rounds,
                     "fastapi_threads": plan.fastapi_threads, "quick": plan.quick}}


def check_claims(found):
    """Check every claim of lesson 11 against `found` (the results), print one line each, and raise
    iolab.claims.ClaimsFailed naming each that failed with its values."""
    claims = Claims(LESSON)
    for row in found["fanout"]:
        rounds(claims, row, row["how"])
    for row in found["limits"]:
        library(claims, row)
    if found.get("timeouts") is not None:
        timeouts.add_claims(claims, found["timeouts"])
    else:
        claims.skip("timeouts and cancellation", "section 3 did not run")
    if found.get("blocking") is not None:
        blocking.add_claims(claims, found["blocking"])
    else:
        claims.skip("the blocking call", "section 4 did not run")
    claims.report()
    return claims


def rounds(claims, row, name):
    """1. n calls of Z, at most P at once, take ⌈n/P⌉ rounds of Z: no less (each round waits Z), and no more than
    the run's own CPU and waits for a CPU on top. 2. Only the first round is answered within 2Z of the start: a
    call of the second waited for one of the first; every call of the first is answered within Z and the run's
    work. So P lies between the calls answered within 2Z and those answered within Z + work."""
    rounds_ = f"{row['rounds']} round{'s' if row['rounds'] != 1 else ''}"
    claims.timing(f"{name}: {row['calls']} calls take ⌈n/P⌉ = {rounds_} of Z",
                  row["measured_s"] * 1000, row["low_s"] * 1000, row["high_s"] * 1000,
                  neighbours=row.get("neighbours"), unit="ms", digits=0,
                  message=f"{name}: {row['measured_s'] * 1000:.0f} ms for {row['calls']} calls of {row['T_ms']:.0f} ms,"
                  f" outside [{row['low_s'] * 1000:.0f}, {row['high_s'] * 1000:.0f}] ms: {row['rounds']} rounds at"
                  f" P = {row['limit']}, plus this run's CPU and waits {row['work_ms']:.0f} ms")
    slowed = claims.rows[-1]  # the rounds claim just made: excused where the neighbours slowed this run
    first = min(row["limit"], row["calls"])
    early, late = row["answered_in_two_T"], row["answered_in_T_and_work"]
    if slowed[0] == EXCUSED and early <= first and late < first:
        # The slow side of the same run: its first round came late for the reason the rounds claim gives.
        claims.excused(f"{name}: the limit read back, {first} calls in the first round",
                       f"{early} answered within 2Z, {late} within Z + work", f"{early} ≤ {first} ≤ {late}",
                       f"the first round came late, as its run did: {slowed[4].split('; ')[-1]}")
        return
    claims.check(f"{name}: the limit read back, {first} calls in the first round", early <= first <= late,
                 f"{early} answered within 2Z, {late} within Z + work", f"{early} ≤ {first} ≤ {late}",
                 f"{name}: {early} calls answered within 2Z and {late} within Z + this run's work"
                 f" ({row['work_ms']:.0f} ms): the first round's {first} is not between them")


def library(claims, row):
    """3. Every call of a library's fan-out answered; its rounds as above; its connections as it keeps them
    (limits.connections_predicted, made before the run)."""
    name = row["library"]
    claims.check(f"{name}: every call answered", row["errors"] == 0 and row["completed"] == row["expected_calls"],
                 f"{row['completed']} of {row['expected_calls']}, {row['errors']} errors", "",
                 f"{name}: {row['completed']} of {row['expected_calls']} calls done, {row['errors']} errors")
    if row["errors"] or not row["completed"]:
        return
    rounds(claims, row, name)
    P, T = row["limit"], row["T_ms"]
    claims.within(f"{name}: its limit binds before its CPU, P × D_c under Z", P * row["client_cpu_ms_per_call"], 0,
                  T, unit="ms", digits=0)
    # Each round's P calls take their CPU one after another, D each: a round lasts Z + P · D (limits.limit_read_back).
    predicted = limit_read_back(row)
    burst_cpus = row.get("burst_cpus", row["cpus"])
    burst = limit_read_back(row, cpus=burst_cpus)
    if burst_cpus > row["cpus"] and burst > predicted:
        # A quota of one CPU lets a round's short burst run client and server side by side: D may be the larger
        # of the two, not their sum. Between the two, a bound, and the claim says so.
        cpus = "one CPU" if row["cpus"] == 1 else f"{row['cpus']:g} CPUs"
        claims.timing(f"{name}: the limit read back, L = X · Z between P · Z / (Z + P · D) on {cpus} and on"
                      f" {burst_cpus:g}, as a quota lets a burst this short: {predicted:.1f} to {burst:.1f}",
                      row["measured_rps"] * T / 1000, (1 - READ_BACK_TOLERANCE) * predicted,
                      (1 + READ_BACK_TOLERANCE) * burst, neighbours=row.get("neighbours"), unit="calls", digits=1,
                      slower="below")
    else:
        claims.timing(f"{name}: the limit read back, L = X · Z within 15% of P · Z / (Z + P · D) = {predicted:.1f}",
                      row["measured_rps"] * T / 1000, (1 - READ_BACK_TOLERANCE) * predicted,
                      (1 + READ_BACK_TOLERANCE) * predicted, neighbours=row.get("neighbours"), unit="calls",
                      digits=1, slower="below")
    if row["overhead_ms"] >= row["T_ms"]:
        # Its own CPU is the limit then: one thread spends D_c a call, so X ≤ 1 / D_c (the utilization law).
        ceiling = 1000 / row["client_cpu_ms_per_call"]
        claims.within(f"{name}: X ≤ 1 / D_c, its own CPU a call", row["measured_rps"], 0, ceiling, unit="calls/s",
                      digits=0)
    opened, predicted = row["connections_opened"], row.get("connections_predicted")
    if opened is None or predicted is None:
        return
    low, high = predicted
    said = {"requests": f"past its pool of {row['default_limit']} it opens more connections than that, not waits",
            "httpx": f"past {HTTPX_KEEPALIVE} kept connections, each call opens its own",
            "tornado": "it keeps no connection: each call opens its own",
            "executor": "urllib keeps no connection: each call opens its own"}
    claims.within(f"{name}: {said.get(row['option'], 'never more connections than its limit')}", opened, low, high,
                  unit="connections", digits=0)
