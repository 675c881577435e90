"""Lesson 13's closing claims.

Lesson 13's closing claims, each checked against this run's bounds and printed on a line of its own.
"""

from iolab.claims import Claims, others_explain

from . import model

LESSON = "13-a-real-database"
# The prediction a run must land nearer to than to its opposite: what each way would give if its limit were not there.
OPPOSITE = {"blocking": "as if it awaited", "executor": "one slot per user", "pool": "no pool limit",
            "asyncpg": "no pool limit", "def": "one at a time", "async def": "no pool limit"}


def opposite_rps(row):
    """What the way would give without the limit the lesson names: the blocking call as if it awaited (the pool's
    P), a thread pool as one thread, a pool as if every user had a connection."""
    T = row["T_ms"] / 1000
    if row["how"] == "blocking":
        return min(row["users"], row["pool"]) / T
    if row["how"] == "def":
        return 1 / T
    return row["users"] / T


def nearer_rate(claims, claim, row, right, wrong):
    """claims.nearer for a throughput (req/s): `row`'s X nearer `right` than `wrong`. A run below the midpoint while
    others held the CPUs is excused with the figures where they explain the miss: the claim's band is the
    prediction ± half the gap to the opposite (iolab.claims.others_explain); on a quiet run it is judged as ever."""
    if claims.nearer(claim, row["rps"], right, wrong, "req/s", ".1f") or right <= wrong:
        return
    middle = (right + wrong) / 2
    reason = others_explain((row.get("neighbours") or {}).get("others_share"), row["rps"], middle,
                            2 * right - middle, slower="below")
    if reason:
        _, claim, measured, bounds, failure = claims.rows.pop()
        claims.excused(claim, measured, bounds, f"{failure}; {reason}")


def drivers(claims, rows):
    """Section 1: every request answered; no run above its ceiling ⌈n / slots⌉ rounds of Z; each nearer its
    bottleneck law's prediction than its opposite; Little's law on each pool, L between X·Z and P."""
    for row in rows:
        name = f"{row['driver']} ({row['front_end']})"
        claims.check(f"{name}: every request answered", row["errors"] == 0,
                     f"{row['completed'] - row['errors']} of {row['completed']}", "",
                     f"{name}: {row['errors']} of {row['completed']} requests failed: {row['error_kinds']}")
        claims.within(f"{name}: X at most ⌈n / {row['at_once']}⌉ rounds of Z allow", row["rps"], 0,
                      row["ceiling_rps"], unit="req/s", digits=1)
        nearer_rate(claims, f"{name}: X nearer the law ({row['bottleneck']}) than {OPPOSITE[row['how']]}", row,
                    row["predicted_rps"], opposite_rps(row))
        pool = row.get("pool_stats")
        if isinstance(pool, dict) and pool.get("requests_num"):
            little(claims, name, row, pool)


def little(claims, name, row, pool):
    """Little's law on the pool: every answered request held a connection at least Z, and no more than P were out."""
    L = model.pool_in_use(pool["usage_ms"], row["duration_s"])
    XT = row["rps"] * row["T_ms"] / 1000
    claims.within(f"{name}: the pool's L = usage / time lies in [X·Z, P] (Little)", L, XT, row["pool"],
                  unit="connections", digits=2)
    if row["users"] > row["pool"]:
        held_s = pool["usage_ms"] / 1000 / pool["requests_num"]
        predicted = model.pool_wait_s(row["users"], row["pool"], held_s)
        waited = pool["requests_wait_ms"] / pool["requests_num"]
        claims.nearer(f"{name}: past P, the wait for a connection is a closed system's with P servers", waited,
                      predicted * 1000, 0.0, "ms", ".1f")


def acquire(claims, result):
    """Section 2: asyncpg's acquire() without a timeout waits as long as the holders hold; with one, 503 at it."""
    forever, bounded = result["forever"], result["bounded"]
    claims.check("asyncpg, no acquire timeout: the extra request waits, then is served", forever["status"] == 200,
                 f"status {forever['status']}")
    claims.nearer("asyncpg, no acquire timeout: it waited about as long as the holders held", forever["waited_ms"],
                  forever["hold_ms"], 0.0, "ms", ".0f")
    timeout_ms = bounded["acquire_timeout_s"] * 1000
    claims.check("asyncpg, an acquire timeout: the extra request gets a 503", bounded["status"] == 503,
                 f"status {bounded['status']}")
    claims.within("asyncpg, an acquire timeout: it gave up at the timeout, before the holders were done",
                  bounded["waited_ms"], timeout_ms, bounded["hold_ms"], unit="ms", digits=0)


def held(claims, rows):
    """Section 3: held late, X = P / (T_db + T_other); released early, the law's figure; each nearer than the other."""
    by = {row["release"]: row for row in rows}
    for release, other in (("late", "early"), ("early", "late")):
        row = by[release]
        claims.check(f"held across, released {release}: every request answered", row["errors"] == 0,
                     f"{row['errors']} errors")
        nearer_rate(claims, f"held across, released {release}: X nearer the law ({row['bottleneck']}) than the other"
                    " way", row, row["predicted_rps"], by[other]["predicted_rps"])
    late = by["late"]
    ceiling = model.most_rps(late["requests"], late["pool"], (late["db_ms"] + late["other_ms"]) / 1000)
    claims.within("held across, released late: X at most P / (T_db + T_other) in whole rounds", late["rps"], 0,
                  ceiling, unit="req/s", digits=1)


def backends(claims, found):
    """Section 4: a backend process per connection; the connection past max_connections refused."""
    run = found.get("processes")
    if run:
        claims.check("a backend process per connection: each connection's pg_backend_pid() a child of the postmaster",
                     run["own_backends"] == run["connections"], f"{run['own_backends']} distinct backends",
                     f"= {run['connections']} connections")
    run = found.get("too_many")
    if run:
        refused = run["refused"] or {}
        holds = (run["opened"] == run["max_connections"] and refused.get("number") == run["max_connections"] + 1
                 and "too many clients" in refused.get("message", ""))
        claims.check(f"connection {run['max_connections'] + 1} refused: too many clients", holds,
                     f"{run['opened']} opened, refused: {refused.get('message', 'none')}")
    run = found.get("bouncer")
    if run:
        claims.check(f"pgbouncer: {run['clients']} clients all answered", run["answered"] == run["clients"],
                     f"{run['answered']} of {run['clients']}")
        claims.within("pgbouncer: the clients' queries ran on at most its pool of backends", run["backends"], 1, run["pool"],
                      unit="backends", digits=0)
        T, rounds = run["T_ms"] / 1000, -(-run["clients"] // run["pool"])
        claims.within(f"pgbouncer: no faster than ⌈{run['clients']} / {run['pool']}⌉ rounds of Z", run["seconds"],
                      rounds * T, float("inf"), unit="s", digits=2)
        claims.nearer("pgbouncer: the clients took turns, clients × Z / pool, not all at once", run["seconds"],
                      run["clients"] * T / run["pool"], T, "s", ".3f")



def rows_cpu(claims, rows):
    """Section 5: decoding rows costs each driver CPU per row."""
    for row in rows:
        claims.check(f"{row['driver']}: {row['rows']} rows cost more CPU than 1 row", row["cpu_us_per_row"] > 0,
                     f"{row['cpu_us_per_row']:.3f} µs per row")


def rows_on_the_loop(claims, rows):
    """Section 5 through the front end: X nearer the CPU law with R · D_row than with rows for free."""
    for row in rows:
        name = f"/rows?n={row['rows']} with {row['driver']}"
        claims.check(f"{name}: every request answered", row["errors"] == 0, f"{row['errors']} errors")
        nearer_rate(claims, f"{name}: X nearer the law with R · D_row ({row['bottleneck']}) than with rows for free",
                    row, row["predicted_rps"], row["rows_free_rps"])


def round_trips(claims, run):
    """Section 6: one by one costs n round trips; a pipeline and executemany about one, plus the CPU both sides
    spent and the time they waited for one (other programs', on a busy machine)."""
    n, rtt = run["statements"], run["rtt_ms"]
    claims.nearer(f"{n} statements one by one take n round trips", run["one_by_one"]["ms"], n * rtt, rtt, "ms", ".2f")
    for name in ("pipeline", "executemany"):
        part = run[name]
        label = f"{n} statements, {name}: one round trip and the CPU, not n round trips"
        predicted = rtt + pipelined_cpu_ms(part)
        if predicted >= n * rtt:
            claims.skip(label, f"its CPU and waits ({predicted - rtt:.2f} ms) take as long as n round trips"
                               f" ({n * rtt:.2f} ms) here: this run cannot tell them apart")
            continue
        claims.nearer(label, part["ms"], predicted, n * rtt, "ms", ".2f")


def pipelined_cpu_ms(part):
    """What a pipelined way spends besides its one round trip: our CPU, the server's, and both sides' waits for a
    CPU."""
    return part["client_cpu_ms"] + part["server_cpu_ms"] + part["waited_ms"]


def faults(claims, found):
    """Section 7: a client's timeout leaves the query running; statement_timeout stops it; a dead database, 503s."""
    run = found.get("timeout")
    if run:
        client, server = run["client"], run["statement_timeout"]
        claims.within("the client gave up at its timeout", client["gave_up_ms"], run["timeout_ms"], run["T_ms"],
                      unit="ms", digits=0)
        claims.check("after the client gave up, the query still ran on the server", client["running_after"] == 1
                     and client["outcome"] == "finished", f"{client['running_after']} running, {client['outcome']}")
        claims.within("the abandoned query ran at least its whole Z", client["ran_ms"], run["T_ms"], 10 * run["T_ms"],
                      unit="ms", digits=0)
        claims.check("statement_timeout cancelled the query on the server", server["outcome"].startswith("cancelled")
                     and server["running_after"] == 0, f"{server['outcome']}, {server['running_after']} running")
        claims.within("statement_timeout ended it at the timeout, before Z", server["ended_ms"], run["timeout_ms"],
                      run["T_ms"], unit="ms", digits=0)
    run = found.get("killed")
    if run:
        claims.check("PostgreSQL killed: every answer a 503", run["down"]["statuses"] == [503],
                     f"statuses {run['down']['statuses']}")
        # No error waits for a timeout: the last 503 comes within one query's Z and the CPU the front end and this
        # process spent on the errors (and their waits for a CPU), measured over the same calls.
        down = run["down"]
        claims.timing("PostgreSQL killed: the 503s came within one query's Z and the work on them",
                      down["max_ms"], 0, run["T_ms"] + down.get("work_ms", 0.0), neighbours=down.get("neighbours"),
                      unit="ms", digits=0)
        back = run["back_after_s"]
        claims.check("PostgreSQL back: the pool answers again", back is not None,
                     "never" if back is None else f"after {back:.2f} s", f"at most {run['deadline_s']:g} s")



def check_claims(found):
    """Check every claim of lesson 13 against `found` (the results), print one line each, and raise
    iolab.claims.ClaimsFailed naming each that failed with its values; a part the run skipped is said so."""
    claims = Claims(LESSON)
    skipped = found.get("skipped") or {}
    parts = (("drivers", drivers, "the front ends' runs (sections 1 and 2)"),
             ("acquire", acquire, "asyncpg's acquire() (section 2)"),
             ("held_across", held, "a connection held across another wait (section 3)"),
             ("backends", backends, "backends and max_connections (section 4)"),
             ("rows", rows_cpu, "the CPU per row (section 5)"),
             ("rows_on_the_loop", rows_on_the_loop, "rows decoded on the front end's loop (section 5)"),
             ("round_trips", round_trips, "round trips (section 6)"),
             ("faults", faults, "faults and timeouts (section 7)"))
    for key, add, what in parts:
        if found.get(key):
            add(claims, found[key])
        else:
            claims.skip(what, skipped.get(key, "not run"))
    # Two runs inside a section, each of which may be skipped on its own.
    if not (found.get("backends") or {}).get("bouncer"):
        claims.skip("pgbouncer lets many clients share a few backends (section 4)", skipped.get("bouncer", "not run"))
    if not (found.get("faults") or {}).get("killed"):
        claims.skip("PostgreSQL killed mid-run: 503s, then the pool recovers (section 7)",
                    skipped.get("killed", "not run"))
    claims.report()
    return claims
