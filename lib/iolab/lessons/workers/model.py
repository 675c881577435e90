"""Lesson 06's model: the throughput a configuration can reach, from demands, threads, users and cores.

And the verdict on a run.

The demands are the CPU each request costs every party, measured.

Each request needs CPU in several places on the same cores: the application's
Python processes, nginx when it is in front, and the load client. It may also
wait (a sleep) while it holds a thread. Every limit below is one of the
operational bounds of iolab.theory applied to one of these places; the
prediction is the tightest of them, and the lesson names which one it is.
"""

import math
from dataclasses import dataclass, field, replace

LIMITS = {
    "users": "each user has one request out at a time: N / (Z + every party's CPU)",
    "GIL": "a Python process runs Python on one core at a time: processes x g / D",
    "threads": "c slots (processes x threads) each hold one request, its wait included: c / (Z + D / g)",
    "cores": "every party shares the cores: cores / (D + nginx's + the client's)",
    "nginx": "nginx's workers: workers / nginx's D",
    "client": "the load client, one process on one core: processes / the client's D",
}
TOLERANCE = 0.10  # a prediction this close to the measurement is a hit
# An explanation recomputes the bound with what the run measured; the spread of connections over the workers is
# read a few times during the run, not followed request by request, so it is allowed a little more.
EXPLAINED_TOLERANCE = 0.15
DISTURBED_SHARE = 0.05  # other programs took more than this of the cores: the run is reported, not judged
IDLE_SHARE = 0.10  # the cores idled more than this while the model expected them full
CHANGED = 0.05  # a demand that moved more than this between the first run and this one is named as the reason


@dataclass(frozen=True)
class Demands:
    """What one request costs, in CPU milliseconds per request in each place, plus the wait; and how many cores one
    application process kept busy when it was the bottleneck (1 for one thread; a little more with threads, whose
    system calls run while another thread holds the GIL)."""

    app_ms: float  # D: the processes running Python application code
    client_ms: float  # the load client
    nginx_ms: float = 0.0
    supervisor_ms: float = 0.0  # gunicorn's arbiter, the wrappers: almost nothing
    wait_ms: float = 0.0  # Z: the handler's sleep, during which it holds its thread but no CPU
    process_cores: float = 1.0  # g

    @property
    def cpu_ms(self):
        """Every party's CPU for one request: what the cores must find."""
        return self.app_ms + self.client_ms + self.nginx_ms + self.supervisor_ms

    @classmethod
    def of(cls, run, wait_ms=0.0, process_cores=1.0):
        """The demands a measure.Run showed."""
        return cls(
            app_ms=run.app_demand_ms, client_ms=run.client_demand_ms, nginx_ms=run.nginx_demand_ms,
            supervisor_ms=max(0.0, run.server_demand_ms - run.app_demand_ms - run.nginx_demand_ms),
            wait_ms=wait_ms, process_cores=process_cores,
        )


@dataclass(frozen=True)
class Setup:
    """A server configuration as the model sees it."""

    processes: int  # Python processes running the application, each with its own GIL
    threads: int | None  # requests each process holds at once; None: a thread per connection
    nginx_workers: int = 0
    client_processes: int = 1
    connections: tuple = ()  # client connections each process held, when measured; () assumes an even spread
    one_thread: bool = False  # each process does everything in one thread (sync workers, Tornado): g is 1


@dataclass(frozen=True)
class Prediction:
    rps: float
    limit: str  # the name (in LIMITS) of the tightest bound
    bounds: dict = field(default_factory=dict)  # every bound's rps, by name


def _holders_and_busy_processes(setup, users):
    """Requests held at once, and processes that can work, given how the connections were spread."""
    if setup.threads is None:
        return users, setup.processes
    if setup.connections:
        held = sum(min(setup.threads, n) for n in setup.connections)
        return max(held, 1), max(sum(1 for n in setup.connections if n), 1)
    return setup.processes * setup.threads, setup.processes


def _per(count, seconds):
    """`count` request-holders, each busy `seconds` per request: count / seconds requests per second (no bound
    when there is nothing to hold or nothing to spend)."""
    return count / seconds if count and seconds > 0 else math.inf


def predict(demands, setup, users, cores):
    """The tightest bound on the throughput of `users` closed-loop users on `cores` cores."""
    wait_s, app_s, cpu_s = demands.wait_ms / 1000, demands.app_ms / 1000, demands.cpu_ms / 1000
    holders, busy_processes = _holders_and_busy_processes(setup, users)
    bounds = {  # GIL before threads: on a tie (no wait, one thread) the requests queue for the core
        "users": users / (wait_s + cpu_s),
        "GIL": _per(busy_processes * demands.process_cores, app_s),
        "threads": _per(min(holders, users), wait_s + app_s / demands.process_cores),
        "cores": cores / cpu_s,
        "nginx": _per(setup.nginx_workers, demands.nginx_ms / 1000),
        "client": _per(setup.client_processes, demands.client_ms / 1000),
    }
    limit = min(bounds, key=bounds.get)
    return Prediction(bounds[limit], limit, bounds)


def process_cores(run, setup, users, cores, wait_ms=0.0):
    """g: the cores one application process kept busy in `run`, if the run was bound by its processes (else 1).

    One thread can never keep more than one core busy, so single-threaded processes get 1.
    """
    if setup.one_thread:
        return 1.0
    alone = predict(Demands.of(run, wait_ms), setup, users, cores)
    if alone.limit != "GIL":
        return 1.0
    return max(1.0, run.rps * run.app_demand_ms / 1000 / setup.processes)


@dataclass(frozen=True)
class Verdict:
    """'predicted' (within TOLERANCE of the prediction from the first run's demands, and the connections' spread
    where it was read before the run), 'explained' (within it once this run's own demands and spread are used,
    with the reason), 'reported' (slower, and not judged: the run was
    disturbed, the cores idled, or nothing it measured names the reason) or 'unexplained' (faster than its own
    measured demands allow, which no disturbance can cause: other programs may keep a core awake and so speed a
    hand-off up, but they cannot make a request cost less CPU)."""

    kind: str
    reason: str = ""

    @property
    def holds(self):
        return self.kind != "unexplained"


def error(measured, predicted):
    """measured / predicted − 1: +0.08 is 8% above the prediction."""
    return measured / predicted - 1 if predicted else math.inf


def _what_changed(first, own, setup):
    reasons = []
    for name, label in (("app_ms", "the application's"), ("client_ms", "the client's"), ("nginx_ms", "nginx's")):
        before, now = getattr(first, name), getattr(own, name)
        if before > 0 and abs(now / before - 1) > CHANGED:
            reasons.append(f"{label} CPU per request was {now:.3g} ms, not {before:.3g} ({now / before - 1:+.0%})")
    if setup.connections and setup.threads and len(set(setup.connections)) > 1:
        spread = ", ".join(map(str, setup.connections))
        reasons.append(f"the connections were not spread evenly over the workers: {spread}")
    return "; ".join(reasons) or "small changes in several demands"


def ceiling(run, own, setup, users, cores):
    """The most this run could have done with its own demands: the model's bounds with every request-holder
    working (an even spread) and g as high as the run itself kept its processes busy. Other programs and idle cores
    can push a run below it, never above it, since no one can make a request cost less CPU than it measured: a run
    above it means a measurement is wrong."""
    kept_busy = run.rps * run.app_demand_ms / 1000 / setup.processes if setup.processes and not setup.one_thread else 0.0
    loosest = replace(own, process_cores=max(own.process_cores, kept_busy))
    return predict(loosest, replace(setup, connections=()), users, cores)


def throttled(run):
    """A sentence if the container's CPU quota stopped the run (Binder, JupyterHub), else ''."""
    times, seconds = getattr(run, "throttled", 0), getattr(run, "throttled_s", 0.0)
    if not times:
        return ""
    return f"the CPU quota throttled this run {times} time{'s' if times != 1 else ''}, {seconds:.2f} s in all"


def judge(run, predicted, explained, first, own, setup, most):
    """The Verdict on one run: the prediction from the first demands, or else why it missed, measured.

    `most` is the run's ceiling (see ceiling()). A run the CPU quota throttled says so, with the time, whatever
    its verdict.
    """
    verdict = _judge(run, predicted, explained, first, own, setup, most)
    note = throttled(run)
    if note and note not in verdict.reason:
        return replace(verdict, reason=f"{verdict.reason}; {note}" if verdict.reason else note)
    return verdict


def _judge(run, predicted, explained, first, own, setup, most):
    if abs(error(run.rps, predicted.rps)) <= TOLERANCE:
        return Verdict("predicted")
    if run.rps > most.rps * (1 + TOLERANCE):  # faster than its own demands allow: nothing here excuses that
        return Verdict("unexplained", f"{error(run.rps, most.rps):+.0%} above the most its own demands allow ({most.limit})")
    if abs(error(run.rps, explained.rps)) <= (EXPLAINED_TOLERANCE if setup.connections else TOLERANCE):
        return Verdict("explained", _what_changed(first, own, setup))
    if run.rps > explained.rps * (1 + TOLERANCE) and explained.limit == "cores" and (
            most.bounds.get("cores", 0) > explained.bounds["cores"] * (1 + CHANGED)):
        return Verdict("explained", "above the cores' bound, within what a CPU quota allows a short run: the quota is"
                                    " handed out per period, and this run caught the unused rest of one")
    if run.rps > explained.rps * (1 + TOLERANCE):  # above the bound with the first g, within its ceiling
        busy = run.rps * run.app_demand_ms / 1000 / max(setup.processes, 1)
        return Verdict("explained", f"each process kept {busy:.2f} cores busy, where one thread kept "
                                    f"{own.process_cores:.2f}: its threads' system calls overlapped more")
    if throttled(run):
        return Verdict("reported", f"{throttled(run)}: stalls the model has no term for")
    if run.others_share > DISTURBED_SHARE:
        return Verdict("reported", f"other programs took {run.others_share:.0%} of the cores during this run")
    if run.idle_share > IDLE_SHARE and explained.limit in ("cores", "GIL"):
        return Verdict(
            "reported",
            f"the cores stood idle {run.idle_share:.0%} of the time while requests waited: "
            "the processes hand each request to each other, and waking an idle core takes time the model leaves out",
        )
    return Verdict(
        "reported",
        f"{error(run.rps, explained.rps):+.0%} from the bound with this run's own demands, and nothing this run "
        f"measured names why (other programs took {run.others_share:.0%} of the cores, they idled "
        f"{run.idle_share:.0%}): on a shared machine, other work also costs caches and wake-ups",
    )
