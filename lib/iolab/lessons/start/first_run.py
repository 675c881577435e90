"""Lesson 00's first experiment: its parameters, what theory allows each run, its results file and its claims."""

from dataclasses import dataclass

from iolab import metrics, params, theory
from iolab.claims import Claims

MOST_BUSY = 0.5  # the non-blocking run keeps the server idle most of the time: busy under half of it
# How far past a bound a measurement may lie before it counts as outside: the bounds' own measuring error.
TOLERANCE = 0.02


@dataclass(frozen=True)
class Plan:
    """The first experiment's sizes, checked: `users` in flight against handlers that wait `delay_ms`."""

    users: int
    delay_ms: int
    quick: bool

    @property
    def wait_s(self):
        return self.delay_ms / 1000

    # Sized so that the whole experiment takes about half a minute at the defaults.
    @property
    def sync_requests(self):
        return self.users * 2

    @property
    def async_requests(self):
        return self.users * 5

    @property
    def sync_timeout_s(self):
        return self.sync_requests * self.wait_s + 30


def check_parameters(users, delay_ms, quick, solutions, results_path):
    """The Plan for the parameters cell's values, or a ParameterError naming the one that is wrong."""
    quick = params.check_common(quick, solutions, results_path)
    params.check_range("users", users, 1, 200)
    params.check_range("delay_ms", delay_ms, 50, 2000)
    if quick:
        users, delay_ms = min(users, 5), min(delay_ms, 200)
    return Plan(users, delay_ms, quick)


@dataclass
class Handler:
    """One handler's run: its summary (with the server's CPU) and what theory allows from that CPU."""

    name: str
    summary: metrics.Summary
    prediction: theory.Prediction


def window_s(result):
    # The CPU counters stay open until the clients have gone: what the server does then, or waits for a CPU
    # under a container's quota, falls after the last answer (lesson 02 explains the window).
    return getattr(result.usage, "wall_s", None)


def bounds_from_cpu(delay_ms, blocking):
    """For a dashboard's last frame: the bounds from the CPU the server spent on each request of that run."""
    return lambda result: theory.predict_run(metrics.summarize(result), delay_ms, blocking,
                                             window_s=window_s(result)).lines()


def finish(name, result, delay_ms, blocking):
    """The Handler for a finished run: its summary, and what theory allows from the CPU it measured."""
    summary = metrics.summarize(result)
    return Handler(name, summary, theory.predict_run(summary, delay_ms, blocking=blocking, window_s=window_s(result)))


def write_results(results_path, found, plan, sync, asynchronous, exercises):
    """Write the run's figures to `results_path` as JSON (nothing without one)."""
    if not results_path:
        return
    figures = ("rps", "mean_ms", "errors", "demand_ms", "utilization")
    results = {
        "environment": found,
        "first_experiment": {
            "users": plan.users, "delay_ms": plan.delay_ms,
            "sync": sync.summary.as_dict(*figures), "async": asynchronous.summary.as_dict(*figures),
            "bounds": {"sync": sync.prediction.lines(), "async": asynchronous.prediction.lines()},
        },
        "exercises": exercises,
    }
    params.write_results(results_path, results)


def most_busy(asynchronous):
    """The busiest the server can be in the non-blocking run: U = X·D, with X at most the optimistic bound.

    Returned with 2% for the bounds' own measuring error."""
    return asynchronous.prediction.high_rps * asynchronous.summary.demand_ms / 1000 * (1 + TOLERANCE)


def check_claims(problems, plan, sync, asynchronous, solutions=False, exercises=None):
    """Check what lesson 00 claims of this run, print one line per claim, and raise ClaimsFailed if any failed."""
    claims = Claims("00 Start here")
    claims.check("the machine has what the lessons need", not problems, "; ".join(problems) or "nothing missing",
                 message=f"the environment lacks what the lessons need: {problems}")
    errors = {handler.name: handler.summary.errors for handler in (sync, asynchronous)}
    claims.check("every request of both runs was answered", not any(errors.values()),
                 ", ".join(f"{name} {count} errors" for name, count in errors.items()),
                 message=f"requests failed: {sync.summary.error_kinds}, {asynchronous.summary.error_kinds}")
    for handler in (sync, asynchronous):
        s, p = handler.summary, handler.prediction
        claims.check(f"the {handler.name} run lies within what theory allows from its CPU",
                     p.contains(s.rps, TOLERANCE), f"{s.rps:.2f} req/s", f"[{p.low_rps:.2f}, {p.high_rps:.2f}] req/s",
                     f"{handler.name}: {s.rps:.2f} req/s, outside {p.low_rps:.2f} .. {p.high_rps:.2f}")
    # Past MOST_BUSY, which short waits and many users allow, the CPU becomes the limit: lesson 02 shows where.
    ceiling, s = most_busy(asynchronous), asynchronous.summary
    claim = f"the server was idle most of the non-blocking run ({plan.users} requests waiting)"
    if ceiling < MOST_BUSY:
        claims.check(claim, s.utilization < MOST_BUSY, f"busy {s.utilization:.1%}", f"[0%, {MOST_BUSY:.0%})",
                     f"the server was busy {s.utilization:.1%} of the non-blocking run; with D = {s.demand_ms:.3f} ms"
                     f" the optimistic bound keeps it under {ceiling:.1%}")
    else:
        claims.skip(claim, f"with D = {s.demand_ms:.3f} ms, {plan.users} users may keep the server busy up to"
                           f" {ceiling:.0%} of the time: the CPU, not the wait, is close to the limit (lesson 02)")
    if solutions:
        claims.check("every exercise accepts its solution", set(exercises.values()) == {"correct"},
                     ", ".join(f"{name} {status}" for name, status in exercises.items()),
                     message=f"with solutions, not every exercise is correct: {exercises}")
    return claims.report()
