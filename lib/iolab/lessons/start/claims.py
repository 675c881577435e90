"""Lesson 00's results file and its closing claims, one line each."""

from iolab import theory
from iolab.claims import Claims

LESSON = "00 Start here"
MOST_BUSY = 0.5  # the non-blocking run keeps the server idle most of the time: busy under half of it
# How far past a bound a measurement may lie before it counts as outside: the bounds' own measuring error.
TOLERANCE = 0.02
FIGURES = ("rps", "mean_ms", "errors", "error_kinds", "demand_ms", "utilization")


def results(plan, *, environment, problems, sync, asynchronous, exercises):
    """The lesson's results, as the results file keeps them: the machine, and each handler's figures and bounds."""
    return {
        "environment": environment,
        "problems": problems,
        "first_experiment": {
            "users": plan.users, "delay_ms": plan.delay_ms,
            "sync": {"name": sync.name, **sync.summary.as_dict(*FIGURES)},
            "async": {"name": asynchronous.name, **asynchronous.summary.as_dict(*FIGURES)},
            "bounds": {"sync": sync.prediction.lines(), "async": asynchronous.prediction.lines()},
        },
        "solutions": plan.solutions,
        "exercises": exercises,
    }


def most_busy(found):
    """The busiest the server can be in the non-blocking run: U = X·D, with X at most the optimistic bound, and 2%
    for the bounds' own measuring error."""
    run = found["first_experiment"]
    return run["bounds"]["async"]["optimistic"] * run["async"]["demand_ms"] / 1000 * (1 + TOLERANCE)


def check_claims(found):
    """Check what lesson 00 claims of this run (`found`, the results), print one line per claim, and raise
    ClaimsFailed if any failed; return the number that held."""
    claims = Claims(LESSON)
    problems, run = found["problems"], found["first_experiment"]
    claims.check("the machine has what the lessons need", not problems, "; ".join(problems) or "nothing missing",
                 message=f"the environment lacks what the lessons need: {problems}")
    handlers = (run["sync"], run["async"])
    claims.check("every request of both runs was answered", not any(h["errors"] for h in handlers),
                 ", ".join(f"{h['name']} {h['errors']} errors" for h in handlers),
                 message=f"requests failed: {run['sync']['error_kinds']}, {run['async']['error_kinds']}")
    for key in ("sync", "async"):
        h, bounds = run[key], run["bounds"][key]
        low, high = bounds["pessimistic"], bounds["optimistic"]
        claims.check(f"the {h['name']} run lies within what theory allows from its CPU",
                     theory.within(h["rps"], low, high, TOLERANCE), f"{h['rps']:.2f} req/s",
                     f"[{low:.2f}, {high:.2f}] req/s", f"{h['name']}: {h['rps']:.2f} req/s, outside {low:.2f} .. {high:.2f}")
    idle(claims, found)
    if found["solutions"]:
        exercises = found["exercises"]
        claims.check("every exercise accepts its solution", set(exercises.values()) == {"correct"},
                     ", ".join(f"{name} {status}" for name, status in exercises.items()),
                     message=f"with solutions, not every exercise is correct: {exercises}")
    return claims.report()


def idle(claims, found):
    """The server was idle most of the non-blocking run, where the optimistic bound keeps it under MOST_BUSY."""
    # Past MOST_BUSY, which short waits and many users allow, the CPU becomes the limit: lesson 02 shows where.
    ceiling, s, users = most_busy(found), found["first_experiment"]["async"], found["first_experiment"]["users"]
    claim = f"the server was idle most of the non-blocking run ({users} requests waiting)"
    if ceiling < MOST_BUSY:
        claims.check(claim, s["utilization"] < MOST_BUSY, f"busy {s['utilization']:.1%}", f"[0%, {MOST_BUSY:.0%})",
                     f"the server was busy {s['utilization']:.1%} of the non-blocking run; with D ="
                     f" {s['demand_ms']:.3f} ms the optimistic bound keeps it under {ceiling:.1%}")
    else:
        claims.skip(claim, f"with D = {s['demand_ms']:.3f} ms, {users} users may keep the server busy up to"
                           f" {ceiling:.0%} of the time: the CPU, not the wait, is close to the limit (lesson 02)")
