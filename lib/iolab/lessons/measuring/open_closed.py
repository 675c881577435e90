"""Open vs closed load on one server, each predicted before it runs.

The same offered load sent on a schedule and by users who wait.
"""

import math
import resource
import statistics
from dataclasses import dataclass

from iolab import environment, load, metrics, neighbours, theory
from iolab.contract import FDS_BESIDES_CONNECTIONS

THINK_S = 0.05  # a closed user's think time: N users offer about N / Z requests per second


@dataclass
class Point:
    """One load, run both ways: mean latencies measured and predicted, and what the run measured to predict them."""

    load: float  # offered load as a share of what one core's 1/D can serve
    rate_rps: float
    users: int
    closed: object  # metrics.Summary
    open: object  # metrics.Summary, latencies from the intended send
    open_points: list  # [(intended send s, latency ms)], to see the queue grow past 1/D
    # [(actual send s, latency since then ms)]: what reached the server's queue and when. A client that sent late
    # (busy opening its connections, or short of a CPU) fed the server another schedule than the one it meant.
    sent_points: list
    service_s: float  # the service time the predictions use: D of this point's runs, plus their wait for a CPU
    predicted_closed_ms: float
    predicted_open_ms: float
    # (low, high): a queue fed this run's own sends, its waits at the calibration's D (a burst's requests cost
    # less each) and at the run's own service time, each plus a request's own time (own_time_s): what this
    # schedule predicts, lulls included
    band_open_ms: tuple
    band_closed_ms: tuple  # (low, high): D (users never meet) and MVA (users arrive in random order)
    # the standard error of the open loop's mean around the fed queue's high end, from this run (batch means)
    noise_open_ms: float = math.nan
    noise_closed_ms: float = math.nan  # and of the closed loop's
    others_open: neighbours.Neighbours | None = None  # what else held the CPUs while the open loop ran
    others_closed: neighbours.Neighbours | None = None  # and while the closed loop ran

    def row(self):
        return {
            "load": self.load, "closed_ms": self.closed.mean_ms, "open_ms": self.open.mean_ms,
            "predicted_closed_ms": self.predicted_closed_ms, "predicted_open_ms": self.predicted_open_ms,
        }


def service_time_s(summary, shared_cpu):
    """The time a request holds the server: its CPU (D) and its wait for a CPU; on one CPU the client's CPU too."""
    service = summary.demand_ms + (summary.queued_ms if math.isfinite(summary.queued_ms) else 0.0)
    if shared_cpu:
        service += summary.client_demand_ms
    return service / 1000


def shares_one_cpu():
    """True when the client and the server must take turns on one CPU."""
    return environment.usable_cores() < 2


def calibrate(server, path, duration_s):
    """One user, no think time, for `duration_s`: D, the server's CPU per request (on one CPU with the client's
    added, since the two take turns), which sets 1/D, the most this one-threaded server can serve.
    Returns (D in seconds, the run's metrics.Summary)."""
    result = load.run_load(
        server.url + path, server=server, kind="closed_raw", concurrency=1, requests=100_000,
        max_duration_s=duration_s, timeout_s=30,
    )
    server.check()
    summary = metrics.summarize(result)
    demand_ms = summary.demand_ms + (summary.client_demand_ms if shares_one_cpu() else 0.0)
    return demand_ms / 1000, summary


def room_for(server, connections):
    """The connections the open loop may keep (`connections`, or fewer where the hard limit is lower), and a sentence
    saying what changed, or None.

    The server holds every connection, and the client process holds them all too. Where the soft open-files limit
    (often 1024 on a laptop) is too low, this kernel raises its own to the hard limit, so the clients it starts
    inherit it, and the server's (no privilege is needed for either).
    """
    needed = connections + FDS_BESIDES_CONNECTIONS
    before = resource.getrlimit(resource.RLIMIT_NOFILE)[0], resource.prlimit(server.pid, resource.RLIMIT_NOFILE)[0]
    own, hard = environment.raise_file_limit(needed)
    theirs, their_hard = environment.raise_file_limit(needed, pid=server.pid)
    fits = min(connections, own - FDS_BESIDES_CONNECTIONS, theirs - FDS_BESIDES_CONNECTIONS)
    notes = []
    if (own, theirs) != before:
        notes.append(f"Your soft limit on open files (RLIMIT_NOFILE) was {min(before):,}. This kernel and the server raised"
                     f" it to the hard limit, {min(hard, their_hard):,}; that needs no privilege.")
    if fits < connections:
        notes.append(f"The hard limit on open files here is {min(hard, their_hard):,}. So the open loop keeps at most"
                     f" {fits:,} connections, not {connections:,}. Root can raise it (ulimit -Hn).")
    return max(1, fits), " ".join(notes) or None


def run_point(server, path, load_share, nominal_s, duration_s, seed=1):
    """The same offered load, rate = load_share / nominal_s, sent by a Poisson open loop and by N = rate × Z users."""
    rate = load_share / nominal_s
    users = max(1, round(rate * THINK_S))
    url = server.url + path
    with neighbours.watching() as closed_watch:
        closed = load.run_load(
            url, server=server, kind="closed_raw", concurrency=users, think_s=THINK_S,
            requests=int(rate * duration_s * 3) + users, max_duration_s=duration_s, timeout_s=30,
        )
    connections = min(1000, max(32, math.ceil(rate * duration_s)))  # never short of a connection: a queue, not a cap
    connections, note = room_for(server, connections)
    if note:  # once: the next points find the limits raised
        print(note)
    with neighbours.watching() as open_watch:
        opened = load.run_load(
            url, server=server, kind="open", schedule="poisson", seed=seed, rate_rps=rate, concurrency=connections,
            requests=max(1, int(rate * duration_s)), max_duration_s=duration_s, timeout_s=30,
        )
    server.check()
    closed_summary = metrics.summarize(closed)
    open_summary = metrics.summarize(opened, latency_from="intended")
    shared = shares_one_cpu()
    service = service_time_s(open_summary, shared)
    closed_service = service_time_s(closed_summary, shared)
    # MVA: N users, think time Z, one queueing centre of demand D; R excludes Z.
    predicted_closed = theory.mva(users, closed_service, THINK_S)[-1].response_s * 1000
    # M/D/1: Poisson arrivals (c_a² = 1), service of fixed length (c_s² = 0).
    predicted_open = theory.open_response(rate, service, arrival_cv2=1.0, service_cv2=0.0) * 1000
    in_order = lambda result, since: [  # noqa: E731 -- latencies (ms) in the order the requests were meant to be sent
        getattr(sample, since) * 1000 for sample in sorted(result.samples, key=lambda sample: sample.intended or sample.start)]
    # M/D/1 is a long run's average over every Poisson schedule; a run of a second or two has one schedule, and its
    # lulls and bursts move the mean more than the law's band. Fed to one ideal server, this run's own sends predict it.
    meant = sorted((sample.intended, sample.latency_from_intended * 1000) for sample in opened.samples)
    measured = [ms for _, ms in meant]
    own_s = own_time_s(meant, service)
    low_fed, high_fed = sorted((fed_mean_ms(meant, nominal_s, own_s), fed_mean_ms(meant, service, own_s)))
    high_latencies = [ms - service * 1000 + own_s * 1000 for _, ms in queue_fed(meant, service)]
    return Point(
        load=load_share, rate_rps=rate, users=users, closed=closed_summary, open=open_summary,
        open_points=[(s.intended, s.latency_from_intended * 1000) for s in opened.samples],
        service_s=service, predicted_closed_ms=predicted_closed, predicted_open_ms=predicted_open,
        band_open_ms=(low_fed, high_fed),
        # Users who think a fixed time and start spread out rarely meet at the server: their response time can be
        # as low as D. MVA assumes they arrive in random order, and queue as such: the most to expect.
        band_closed_ms=(closed_summary.demand_ms, predicted_closed),
        noise_open_ms=mean_noise_ms([ms - fed for ms, fed in zip(measured, high_latencies)]),
        noise_closed_ms=mean_noise_ms(in_order(closed, "latency")),
        others_open=open_watch.found, others_closed=closed_watch.found,
        sent_points=[(s.start, s.latency * 1000) for s in opened.samples],
    )


def growth(points, duration_s):
    """Mean latency (ms) of the requests sent in the first third of the run and in the last third."""
    first = [ms for sent, ms in points if sent < duration_s / 3]
    last = [ms for sent, ms in points if sent >= duration_s * 2 / 3]
    mean = lambda values: sum(values) / len(values) if values else math.nan  # noqa: E731
    return mean(first), mean(last)


def queue_fed(points, service_s):
    """[(intended send s, latency ms)] for the same sends taken in order by one server, `service_s` each.

    Lindley's recursion: a request waits for what the one before it left, less the time between their sends.
    Fed this run's own send times and service time, it predicts how the queue grew, lulls of the schedule included.
    """
    latencies, wait, previous = [], 0.0, None
    for sent in sorted(intended for intended, _ in points):
        if previous is not None:
            wait = max(0.0, wait + service_s - (sent - previous))
        latencies.append((sent, (wait + service_s) * 1000))
        previous = sent
    return latencies


def own_time_s(points, service_s, fewest=5):
    """What a request takes with no queue ahead of it, on this run: the median latency of the requests that the queue
    fed this run's sends at `service_s` has meet an empty server (`points`: [(intended send s, latency ms)]). It is
    the server's service time and what lies around it on the path: the client's read, the loopback. `service_s`
    where fewer than `fewest` met an empty server."""
    alone = [ms for (_, ms), (_, fed_ms) in zip(sorted(points), queue_fed(points, service_s))
             if fed_ms <= service_s * 1000 + 1e-9]
    return statistics.median(alone) / 1000 if len(alone) >= fewest else service_s


def fed_mean_ms(points, wait_service_s, own_service_s):
    """The mean latency (ms) of a queue fed `points`' sends whose waits build at `wait_service_s` a request, each
    request then taking `own_service_s` of its own."""
    waits = [ms / 1000 - wait_service_s for _, ms in queue_fed(points, wait_service_s)]
    return (sum(waits) / len(waits) + own_service_s) * 1000 if waits else math.nan


def mean_noise_ms(latencies_ms, batches=5):
    """The standard error of a run's mean latency, measured in the run itself by batch means.

    Queueing makes neighbouring requests' latencies alike, so the spread of single latencies understates how far
    the mean can wander. Cut the run (in send order) into `batches` consecutive stretches: their means are nearly
    independent, and their spread over sqrt(batches) is what the whole run's mean is uncertain by.
    """
    if len(latencies_ms) < 4:
        return math.inf  # too few requests to measure their own noise: nothing can be said against them
    batches = max(2, min(batches, len(latencies_ms) // 2))
    size = len(latencies_ms) // batches
    means = [sum(latencies_ms[i * size:(i + 1) * size]) / size for i in range(batches)]
    centre = sum(means) / batches
    return math.sqrt(sum((mean - centre) ** 2 for mean in means) / (batches - 1) / batches)


def predicted_before(load_share, nominal_s):
    """(rate, users, MVA's closed ms, M/D/1's open ms) from D alone, before any run at this load."""
    rate = load_share / nominal_s
    users = max(1, round(rate * THINK_S))
    closed = theory.mva(users, nominal_s, THINK_S)[-1].response_s * 1000
    opened = theory.open_response(rate, nominal_s, arrival_cv2=1.0, service_cv2=0.0) * 1000
    return rate, users, closed, opened
