"""Lesson 08's results and closing claims, each checked against this run's own figures, on a line of its own.

Nothing here compares with a figure from another machine.
"""

from iolab import environment, servers
from iolab.claims import ClaimFirst

from . import exercises, frameworks, hol, runs

LESSON = "08 Pipelining"
CORE_SERVERS = ("tornado_app", "aiohttp_app", "raw asyncio", "uvloop + httptools")
SOLUTION_Q1 = (("tornado_app", "aiohttp_app", "uvloop + httptools"), 16)  # the notebook's solution cell for q1


def results(plan, *, cores, client, ladder_rows, depth_rows, japronto_like, python_pair, reach, order_checks,
            timings, throttled, batch_alone, batch_pair):
    """The run's figures, as the results file keeps them and the claims read them: every run's row whole, each
    answer's arrival in the head-of-line batches, `throttled` (times, seconds) the CPU quota stopped those batches."""
    found = {
        "cores": cores,
        "client": client,
        "ladder": [_with_cpus(row) for row in ladder_rows],
        "depth": [_with_cpus(row) for row in depth_rows],
        "japronto_conditions": {"rps": japronto_like.rps, "demand_us": japronto_like.demand_us},
        "python_client": {"rps": python_pair.rps, "demand_us": python_pair.demand_us},
        "reach_rps": reach,
        "order_checks": [check.row() for check in order_checks],
        "order_errors": sum(check.out_of_order + check.other_errors for check in order_checks),
        "order_checked": sum(check.checked for check in order_checks),
        "hol": {label: {"arrived_ms": timing.arrived_ms, "last_ms": timing.last_ms} for label, timing in timings.items()},
        "hol_ms": timings["the wait first"].last_ms,
        "hol_throttled": {"times": throttled[0], "seconds": throttled[1]},
        "per_batch": {"demand_us": batch_alone.demand_us, "client_us": batch_pair.client_us, "rps": batch_pair.rps,
                      "pair_demand_us": batch_pair.demand_us, "per_request_rps": python_pair.rps,
                      "per_request_client_us": python_pair.client_us},
        "pairs": {"batch_alone": batch_alone.row(), "batch_pair": batch_pair.row(), "python_pair": python_pair.row()},
        "exercises": exercises.statuses(),
        "servers_left_running": servers.running(),
        "plan": plan.as_dict(),
    }
    four = frameworks.four_times(ladder_rows, cores)
    found["four_times"] = four.row() if four else None
    return found


def _with_cpus(row):
    """A run's row with the CPU its window could get here (environment.cpus_within), for the claims' reach."""
    return {**row, "cpus_within": environment.cpus_within(row["window_s"])}


def check_claims(found):
    """Check every claim of lesson 08 against `found` (the results), print one line each, and raise
    iolab.claims.ClaimsFailed naming each that failed with its values."""
    claims = ClaimFirst(LESSON)
    ladder_rows, depth_rows, cores = found["ladder"], found["depth"], found["cores"]
    at = {(row["depth"], row["batched"]): row for row in depth_rows}
    _counts(claims, ladder_rows, depth_rows)
    _ladder_reach(claims, ladder_rows)
    _four_times(claims, ladder_rows, cores)
    _depth(claims, at)
    _reach(claims, at[16, True])
    _order(claims, found["order_checks"], found["plan"]["order_requests"])
    _head_of_line(claims, found["hol"], found["plan"]["wait_ms"], found["hol_throttled"])
    _per_batch(claims, at, found["pairs"], cores)
    running = found["servers_left_running"]
    claims.check("no server left running", not running, str(running) if running else "none", message=str(running))
    if found["plan"]["solutions"]:
        statuses = found["exercises"]
        if not claims.check("with the solutions, every exercise is correct", set(statuses.values()) == {"correct"},
                            ", ".join(f"{q} {s}" for q, s in statuses.items()), message=str(statuses)):
            _excuse_the_ladders_ratio(claims, statuses, ladder_rows)
    return claims.report()


def _excuse_the_ladders_ratio(claims, statuses, ladder_rows):
    """q1's solution judged against a ratio of D that others moved: where q1 alone failed, in the right order, and
    the others that held the CPUs during its servers' runs explain how far the ratio passed the solution's factor
    (stretch o / (1 − o), as iolab.claims reads a time), the claim is not judged and says why, with the figures."""
    wrong = [q for q, status in statuses.items() if status != "correct"]
    demands = {row["server"]: row["demand_us"] for row in ladder_rows}
    exercise = exercises.LadderOrder()
    if wrong != ["q1"] or not set(exercise.servers) <= set(demands):
        return
    order, ratio = exercise.measure(demands)
    if order != list(SOLUTION_Q1[0]):
        return
    most = SOLUTION_Q1[1] * exercise.factor
    others = max((row.get("neighbours") or {}).get("others_share") or 0.0 for row in ladder_rows
                 if row["server"] in exercise.servers)
    miss = ratio / most - 1
    if 0 < miss <= others / max(1e-9, 1 - others):
        mark, claim, measured, bounds, failure = claims.rows.pop()
        claims.excused(claim, measured, bounds,
                       f"q1's measured ratio of D, {ratio:.3g}, passed the solution's {SOLUTION_Q1[1]} times"
                       f" {exercise.factor:g} by {miss:.0%}; others held the CPUs {others:.0%} of its servers' runs,"
                       f" enough to explain it: rerun it when the machine is quieter")


def _counts(claims, ladder_rows, depth_rows):
    ran = {row["server"] for row in ladder_rows}
    claims.check("every core server ran", set(CORE_SERVERS) <= ran, ", ".join(sorted(ran)),
                 message=f"a core server did not run: {sorted(ran)}")
    broken = [row for row in ladder_rows + depth_rows if not (row["errors"] == 0 and row["requests"] > 0)]
    claims.check("every timed run answered, without an error", not broken,
                 f"{len(ladder_rows + depth_rows) - len(broken)} of {len(ladder_rows + depth_rows)} runs",
                 message=str(broken))
    # Counts per request are judged give or take what the edges of strace's window can add or take
    # (runs.counted_at_edges: a batch in flight per connection at each edge, each connection's own setup).
    counted = [row for row in ladder_rows if row["syscalls_per_request"] is not None]
    # Readiness IO, unpipelined: every request costs at least a read and a write, whatever the server is written in.
    below = [row for row in counted if row["syscalls_per_request"] < 2 - runs.counted_at_edges(row, 2)]
    if counted:
        fewest = min(row["syscalls_per_request"] for row in counted)
        claims.check("at depth 1, every server makes at least a read and a write per request", not below,
                     f"fewest {fewest:.2f} system calls per request", "[2, ∞), less the window's edges",
                     message=str(below))
    else:
        claims.skip("at depth 1, every server makes at least a read and a write per request",
                    "strace could not count system calls here")
    # One thread: the utilization law, X·D <= 1 for the loop's thread, read over this run's windows (CPU over
    # window_s, requests over seconds: `edges` is their ratio, so X·D may read that much over 1 and no more).
    # D here is the thread's own CPU per request: the process's D also holds its watchdog thread.
    over = [row for row in depth_rows if not row["rps"] * row["thread_us"] / 1e6 <= row["edges"]]
    busiest = max(depth_rows, key=lambda row: row["rps"] * row["thread_us"])
    claims.check("the utilization law holds for the loop's thread at every depth (U = X·D ≤ 1)", not over,
                 f"U at most {busiest['rps'] * busiest['thread_us'] / 1e6:.2f}",
                 f"[0, {busiest['edges']:.3f}], 1 and the window's edges", message=str(over))
    writes = [row for row in depth_rows if row["writes_per_request"] is not None]
    batched_over = [row for row in writes if row["batched"] and not
                    row["writes_per_request"] <= 1 / row["depth"] + runs.counted_at_edges(row, 1 / row["depth"])]
    per_answer_under = [row for row in writes if not row["batched"] and not
                        row["writes_per_request"] >= 1 - runs.counted_at_edges(row, 1)]
    if writes:
        claims.check("one write per batch: at most 1 / depth writes per request", not batched_over,
                     f"{len(batched_over)} depths over", "[0, 1 / depth], plus the window's edges",
                     message=str(batched_over))
        claims.check("one write per answer: at least one write per request", not per_answer_under,
                     f"{len(per_answer_under)} depths under", "[1, ∞), less the window's edges",
                     message=str(per_answer_under))
    else:
        for claim in ("one write per batch: at most 1 / depth writes per request",
                      "one write per answer: at least one write per request"):
            claims.skip(claim, "strace could not count writes here")


def _depth(claims, at):
    # Batches divide the fixed costs: at depth 16 a request costs less than alone (a sixteenth of a read, a write and
    # a wake-up each), and less than with a write per answer (the other fifteen writes). How much less is this
    # machine's.
    d1, d16, d16_each = at[1, True]["demand_us"], at[16, True]["demand_us"], at[16, False]["demand_us"]
    claims.check("depth 16 costs a request less CPU than depth 1", d16 < d1, f"D {d16:.2f} µs",
                 f"[0, {d1:.2f}) µs", message=str((at[16, True], at[1, True])))
    claims.check("one write per batch costs less than one per answer, at depth 16", d16 < d16_each,
                 f"D {d16:.2f} µs", f"[0, {d16_each:.2f}) µs", message=str((at[16, True], at[16, False])))
    calls = at[16, True]["syscalls_per_request"]
    if calls is None:
        claims.skip("at depth 16, at most a read, a write and an epoll_wait per batch",
                    "strace could not count system calls here")
        return
    # A read, a write and at most one epoll_wait per batch of 16 (fewer when connections share a wake-up)...
    most = 3 / 16 + runs.counted_at_edges(at[16, True], 3 / 16, setup=True)
    claims.check("at depth 16, at most a read, a write and an epoll_wait per batch", calls <= most,
                 f"{calls:.3f} system calls per request", f"[0, {most:.3f}]", message=str(at[16, True]))
    # ... so all of them together are fewer than the writes alone of the server that writes each answer.
    each_writes = at[16, False]["writes_per_request"]
    if each_writes is not None:
        claims.check("at depth 16, all system calls per batch are fewer than the writes per answer",
                     calls < each_writes, f"{calls:.3f}", f"[0, {each_writes:.3f})", message=str(at))


def _reach(claims, best):
    # The prediction from D, the client's threads and the cores bounds what the machine measured. Under a CPU quota a
    # run's window may also catch the unused rest of the quota period before it, so the cores' term is what a window
    # that long can get (environment.cpus_within, kept in the results); without a quota it is the cores themselves.
    most = min(runs.ceilings(best["demand_us"], best["client_us"], best["cpus_within"],
                             best["client_threads"], best["thread_us"]).values())
    # A ceiling: others can only slow a run, so a run above it is never theirs to explain (slower="below").
    claims.timing("depth 16 stays under the reach predicted from D, the client and the cores", best["rps"], 0.0,
                  most * best["edges"], neighbours=best.get("neighbours"), unit="req/s", digits=0,
                  message=str((f"{best['rps']:,.0f} req/s above the ceiling {most:,.0f}"
                       f" x {best['edges']:.3f} for the requests at the window's edges", best)), slower="below")


def _ladder_reach(claims, ladder_rows):
    # Every rung, one process or many: the utilization law for its busiest thread, the client's threads, and the
    # cores they share, from the rung's own D and client CPU, over the run's windows (as _reach at depth 16).
    over = []
    for row in ladder_rows:
        most = min(runs.ceilings(row["demand_us"], row["client_us"], row["cpus_within"],
                                 row["client_threads"], row["thread_us"]).values())
        if not row["rps"] <= most * row["edges"]:
            over.append((row["server"], row["rps"], most * row["edges"]))
    claims.check("at depth 1, every rung stays under the reach predicted from its D, the client and the cores",
                 not over, f"{len(ladder_rows) - len(over)} of {len(ladder_rows)} rungs",
                 message=f"(rung, req/s, reach x edges): {over}")


def _four_times(claims, ladder_rows, cores):
    # The seed's 4x: Tornado's rate over the second fastest rival's can be no more than Tornado's reach from its own
    # D (the utilization law) over the rival's measured rate: behind nginx with four processes where that ran, else
    # one process.
    four = frameworks.four_times(ladder_rows, cores)
    claim = "Tornado's lead over the seed's second fastest stays under what its D allows"
    if four is None:
        claims.skip(claim, "Tornado or none of the seed's rivals (Django, CherryPy) ran")
        return
    if four.four_ran:
        measured, most, what = four.measured_ratio, four.most_ratio, "four processes behind nginx"
    else:
        row = next(row for row in ladder_rows if row["server"] == frameworks.TORNADO)
        reach = min(runs.ceilings(row["demand_us"], row["client_us"], row["cpus_within"],
                                  row["client_threads"], row["thread_us"]).values())
        measured, most, what = four.tornado_rps / four.second_rps, reach * row["edges"] / four.second_rps, "one process"
    claims.check(claim, measured <= most, f"{what}: {measured:.2f} times {four.second}",
                 f"[0, {most:.2f}] times, from D", message=str(four.row()))


def _order(claims, order_checks, order_requests):
    errors = sum(check["out_of_order"] + check["other_errors"] for check in order_checks)
    checked = sum(check["checked"] for check in order_checks)
    # Every answer in its place, and every one of them checked.
    claims.check("every pipelined answer came back in its place", errors == 0,
                 f"{errors} out of place or missing of {checked:,}", message=str(order_checks))
    first_checked = order_checks[0]["checked"]
    claims.check("the lab's client checked every request it was asked to", first_checked == order_requests,
                 f"{first_checked:,}", f"[{order_requests:,}, {order_requests:,}]", message=str(order_checks[0]))


def _head_of_line(claims, timings, wait_ms, throttled):
    # Head-of-line blocking: nothing behind the wait leaves before it ends (a timer fires at most its clock's
    # resolution early) ...
    first, last, none = timings["the wait first"], timings["the wait last"], timings["no wait"]
    early = wait_ms - hol.TIMER_EARLY_AT_MOST_MS
    claims.check("with the wait first, no answer left before the wait ended", min(first["arrived_ms"]) >= early,
                 f"first answer at {min(first['arrived_ms']):.0f} ms", f"[{early}, ∞) ms", message=str(first))
    claims.check("with the wait last, the last answer came after the wait", last["last_ms"] >= early,
                 f"{last['last_ms']:.0f} ms", f"[{early}, ∞) ms", message=str(last))
    if throttled["times"]:
        reason = (f"this container's CPU quota stopped it {throttled['times']} times ({throttled['seconds']:.2f} s)"
                  " while the batches ran: a stall that delays answers whether or not they wait")
        claims.skip("with the wait last, the answers ahead of it did not wait", reason)
        claims.skip("with no wait, no answer waited that long", reason)
        return
    # ... and without a wait ahead of them, no answer waits that long.
    ahead = max(last["arrived_ms"][:-1])
    claims.check("with the wait last, the answers ahead of it did not wait", ahead < early,
                 f"latest at {ahead:.0f} ms", f"[0, {early}) ms", message=str(last))
    claims.check("with no wait, no answer waited that long", none["last_ms"] < early, f"{none['last_ms']:.0f} ms",
                 f"[0, {early}) ms", message=str(none))


def _pair_reach(pair, cores):
    """runs.pair_reach for a pair's results row: the smallest of runs.ceilings() from its D, client CPU and threads."""
    return min(runs.ceilings(pair["demand_us"], pair["client_us"], cores, pair["client_threads"],
                             pair["thread_us"]).values())


def _per_batch(claims, at, pairs, cores):
    # The last rung: per batch, the server and the client each spend less per request, measured with the same clients.
    batch_alone, batch_pair, python_pair = pairs["batch_alone"], pairs["batch_pair"], pairs["python_pair"]
    claims.check("the per-batch runs answered, without an error",
                 batch_alone["errors"] == 0 and batch_pair["errors"] == 0 and batch_pair["requests"] > 0,
                 f"errors {batch_alone['errors']} and {batch_pair['errors']}, {batch_pair['requests']:,} requests",
                 message=str((batch_alone, batch_pair)))
    claims.check("per batch, the server spends less CPU per request than pipeline_app at depth 16",
                 batch_alone["demand_us"] < at[16, True]["demand_us"], f"D {batch_alone['demand_us']:.2f} µs",
                 f"[0, {at[16, True]['demand_us']:.2f}) µs", message=str((batch_alone, at[16, True])))
    claims.check("per batch, the client spends less per request than the lab's client",
                 batch_pair["client_us"] < python_pair["client_us"], f"{batch_pair['client_us']:.2f} µs",
                 f"[0, {python_pair['client_us']:.2f}) µs", message=str((batch_pair, python_pair)))
    for pair in (python_pair, batch_pair):
        # The utilization law bounds both Python pairs, from their own D, client CPU and threads, over their windows.
        reach = _pair_reach(pair, cores)
        claims.timing(f"{pair['label']}: under the pair's reach from D", pair["rps"], 0.0, pair["edges"] * reach,
                      neighbours=pair.get("neighbours"), unit="req/s", digits=0, message=str(pair), slower="below")
