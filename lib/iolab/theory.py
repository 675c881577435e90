"""The operational laws of a closed system, and mean-value analysis.

The laws are Little's, utilization, service demand and response time, with the asymptotic bounds.

A closed system here is the lab's load run: `users` clients, each sending its
next request as soon as the last one is answered. Every request spends
`delay_s` (Z) at a *delay centre*, where any number can wait at once without
holding anything (a handler's timer), and `demand_s` (D) at a *queueing centre*
with `servers` (k) servers: a CPU with that many cores, or a pool of that many
threads that each hold a request until it is done. Throughput X is in requests
per second, times in seconds. The vocabulary is that of Lazowska, Zahorjan,
Graham and Sevcik, *Quantitative System Performance* (1984): chapter 3 for the
laws, 5 for the bounds, 6 and 8 for mean-value analysis.
"""

import heapq
import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .params import check_range
from .percentiles import percentile

# asyncio rounds the timeout it gives epoll up to a whole millisecond, so a timer fires up to 1 ms late.
TIMER_SLACK_S = 0.001
# A connection attempt dropped by a full accept queue is retried by TCP after 1 s, then 2 s more (Linux's initial
# retransmission timeout, doubling): a run in which any were dropped may lose that long, which no CPU model covers.
SYN_RETRY_S = 1.0
SYN_RETRIES_S = SYN_RETRY_S + 2 * SYN_RETRY_S


class MeasuredRun(Protocol):
    """The figures of a run's metrics.Summary that predict_run reads (the laws never import what measured them)."""

    @property
    def concurrency(self) -> int: ...
    @property
    def completed(self) -> int: ...
    @property
    def duration_s(self) -> float: ...
    @property
    def demand_ms(self) -> float: ...
    @property
    def queued_ms(self) -> float: ...
    @property
    def client_demand_ms(self) -> float: ...
    @property
    def client_queued_ms(self) -> float: ...
    @property
    def cores(self) -> float: ...
    @property
    def listen_drops(self) -> int: ...


def little(throughput: float, response_s: float) -> float:
    """Little's law: L = X R, the mean number in a system is its throughput times the mean time spent in it.

    It holds for any system over an interval that starts and ends empty. Computed
    from one run's samples over that run's interval (L as the sum of latencies
    divided by the run's length) it is an identity, not a check: both sides are
    the same sum.
    """
    return throughput * response_s


def utilization(throughput: float, demand_s: float, servers: float = 1) -> float:
    """The utilization law: U = X D, the busy fraction of a centre (divided by `servers`: per server).

    With D in CPU seconds per request and X in requests per second, X D is CPU
    seconds per second: on several cores it exceeds 1 unless divided by them.
    """
    return throughput * demand_s / servers


def service_demand(utilization_: float, throughput: float) -> float:
    """The service demand law: D = U / X, the time a centre spends on each request (CPU seconds per request)."""
    check_range("throughput", throughput, 0, integer=False, above=True)
    return utilization_ / throughput


def response_time(users: float, throughput: float, delay_s: float = 0.0) -> float:
    """The interactive response-time law: R = N / X - Z, for N users who each spend Z at the delay centre.

    ab's first "Time per request" line is this law with Z = 0: concurrency x
    total time / requests = N / X. It is the mean latency only if all N users
    were in the system the whole run; otherwise it overstates it.
    """
    check_range("throughput", throughput, 0, integer=False, above=True)
    return users / throughput - delay_s


def _bottleneck(demand_s: float, servers: float, bottleneck_s: float | None) -> float:
    return demand_s / servers if bottleneck_s is None else bottleneck_s


def optimistic_throughput(
    users: float, demand_s: float, delay_s: float = 0.0, servers: float = 1, bottleneck_s: float | None = None
) -> float:
    """Asymptotic bound, optimistic: X <= min(N / (Z + D), k / D).

    N / (Z + D): nobody ever queues, so each cycle takes just its delay and its
    demand. k / D: the k servers are busy all the time. With several centres
    on the way (a server's CPU, then the client's), D is their sum and the
    second term is 1 / D_max, `bottleneck_s` being the busiest centre's demand
    per server.
    """
    check_range("users", users, 1, integer=False)
    check_range("demand_s", demand_s, 0, integer=False, above=True)
    return min(users / (delay_s + demand_s), 1 / _bottleneck(demand_s, servers, bottleneck_s))


def pessimistic_throughput(users: float, demand_s: float, delay_s: float = 0.0, servers: float = 1) -> float:
    """Asymptotic bound, pessimistic: X >= N / (Z + D + (N - 1) D / k); with one server, N / (Z + N D).

    The worst a request can meet is all the other N - 1 at the centre ahead of
    it. With one server it waits for all of their demand, (N - 1) D, then its
    own. With k servers busy on them at once it waits at most (N - 1) D / k, the
    k servers getting through the others' work at least k times as fast as one.
    For equal demands served first come, first served that is a true bound (the
    last of N arriving together leaves after ceil(N / k) D, at most
    D + (N - 1) D / k); for very unequal demands it is the usual mean-value
    approximation. With several centres in series, D is their sum.
    """
    check_range("users", users, 1, integer=False)
    check_range("demand_s", demand_s, 0, integer=False, above=True)
    return users / (delay_s + demand_s + (users - 1) * demand_s / servers)


def in_step_throughput(users: float, path_s: float, turn_s: float, delay_s: float = 0.0, servers: float = 1) -> float:
    """Users in step: X = N / (Z + D_path + (N - 1) D_turn / k).

    What a closed loop does when all its users send together, round after
    round: each request needs its own way through (D_path: the server's CPU,
    the client's, and the waits for a CPU beyond them; see step_path) and then
    waits for one turn of the bottleneck (D_turn, k of them at once) for each
    of the other N - 1 users of its round. It is the pessimistic bound taken at the bottleneck alone, and
    lies between the two asymptotic bounds. Users drift out of step over many
    short rounds, and the throughput then climbs towards the optimistic bound.
    """
    check_range("users", users, 1, integer=False)
    return users / (delay_s + path_s + (users - 1) * turn_s / servers)


def step_path(
    demand_s: float, queued_s: float | None = 0.0, client_s: float = math.nan, client_queued_s: float | None = 0.0
) -> float:
    """One request's own way through, as users in step pay it: the server's CPU and the client's, and each one's wait
    for a CPU beyond the other's CPU.

    Server and client take turns on a request. The client's send wakes the
    server, which often waits for a CPU while the client finishes sending; the
    answer wakes the client, which waits while the server finishes. On a machine
    with nothing else to run those waits are the other side's CPU, which the path
    counts already; only a wait longer than that is a third program's time.
    Without the client's figures (NaN), the server's CPU and its whole wait.
    """
    queued_s = _number_or_zero(queued_s)
    if math.isnan(client_s):
        return demand_s + queued_s
    client_queued_s = _number_or_zero(client_queued_s)
    return demand_s + client_s + max(0.0, queued_s - client_s) + max(0.0, client_queued_s - demand_s)


def _number_or_zero(value: float | None) -> float:
    return 0.0 if value is None or math.isnan(value) else value


def clamped_step_path(step_path_s: float | None, turn_s: float, path_s: float) -> float:
    """The in-step path kept between the server's turn on a request and the bound's whole path (the latter if unknown).

    A request's own way through is never shorter than the turn the server
    spends on it, nor, in step, longer than the pessimistic bound's path.
    """
    if step_path_s is None or math.isnan(step_path_s):
        return path_s
    return min(max(step_path_s, turn_s), path_s)


def knee(demand_s: float, delay_s: float = 0.0, servers: float = 1, bottleneck_s: float | None = None) -> float:
    """The knee N* = (Z + D) / D x k: the population at which the two optimistic lines, N / (Z + D) and k / D, meet.

    Below N* each added user adds throughput; past it the bottleneck is
    saturated and each added user only makes everyone wait D / k longer. With
    several centres it is (Z + D) / D_max.
    """
    check_range("demand_s", demand_s, 0, integer=False, above=True)
    return (delay_s + demand_s) / _bottleneck(demand_s, servers, bottleneck_s)


def bottleneck(tiers: Mapping[str, tuple[float | None, float]]) -> tuple[float, str]:
    """The bottleneck law across tiers: X <= min over tiers of servers / demand; returns (bound req/s, the tier's name).

    `tiers` maps each tier's name to (servers, demand_s): how many requests it
    holds at once (a front end's threads or workers, a worker pool's
    concurrency, a closed loop's users) and how long each request holds one.
    `servers=None` means no fixed limit; such a tier bounds nothing. The tier
    with the smallest servers / demand is the bottleneck: adding servers
    anywhere else changes nothing.
    """
    limits: dict[str, float] = {}
    for name, (servers, demand_s) in tiers.items():
        check_range(f"{name}'s demand_s", demand_s, 0, integer=False, above=True)
        if servers is not None:
            check_range(f"{name}'s servers", servers, 0, integer=False, above=True)
            limits[name] = servers / demand_s
    if not limits:
        raise ValueError("bottleneck needs at least one tier with a fixed number of servers")
    name = min(limits, key=limits.get)  # type: ignore[arg-type]  # every key is there: get never answers None
    return limits[name], name


def optimistic_response(
    users: float, demand_s: float, delay_s: float = 0.0, servers: float = 1, bottleneck_s: float | None = None
) -> float:
    """The response-time bound that goes with the optimistic throughput: R >= max(D, N D_max - Z)."""
    return max(demand_s, users * _bottleneck(demand_s, servers, bottleneck_s) - delay_s)


def pessimistic_response(users: float, demand_s: float, servers: float = 1) -> float:
    """The response-time bound that goes with the pessimistic throughput: R <= D + (N - 1) D / k."""
    return demand_s + (users - 1) * demand_s / servers


@dataclass(frozen=True)
class MvaPoint:
    """Mean-value analysis at one population: throughput, response time at the centres (delay excluded), mean number there."""

    users: int
    throughput: float
    response_s: float
    queue: float


def mva(
    users: int, demand_s: float | list[float] | tuple[float, ...], delay_s: float = 0.0, servers: int = 1
) -> list[MvaPoint]:
    """Exact mean-value analysis of the closed system for every population 1..users: a list of MvaPoint.

    `demand_s` is one centre's demand, or a list of demands of single-server
    centres that every request visits in turn (a server's CPU, then the
    client's). With single servers it is Reiser and Lavenberg's recursion: an
    arriving request finds the mean queue the system has with one user fewer
    (the arrival theorem), so R_i(n) = D_i (1 + Q_i(n - 1)), X(n) = n / (Z + sum
    R_i(n)), Q_i(n) = X(n) R_i(n). One centre with k servers is load-dependent
    (it works at rate min(j, k) / D with j requests present), and the recursion
    carries the probability of each j instead of the mean: exact load-dependent
    MVA (Lazowska et al., section 8.2), no approximation.

    MVA assumes requests arrive in random order, as if service times were
    exponential. The lab's requests are far more regular, and a closed loop that
    starts all its users together keeps them in step; so MVA is a prediction to
    set beside the measurement, between the bounds, not a bound.
    """
    check_range("users", users, 1, integer=False)
    check_range("servers", servers, 1, integer=False)
    demands = list(demand_s) if isinstance(demand_s, (list, tuple)) else [demand_s]
    for demand in demands:
        check_range("demand_s", demand, 0, integer=False, above=True)
    if servers == 1:
        return _mva_single_servers(users, demands, delay_s)
    if len(demands) != 1:
        raise ValueError("servers > 1 is for one centre; give demand_s as one number")
    return _mva_multi_server(users, demands[0], delay_s, servers)


def _mva_single_servers(users: int, demands: list[float], delay_s: float) -> list[MvaPoint]:
    points: list[MvaPoint] = []
    queues = [0.0] * len(demands)
    for n in range(1, users + 1):
        responses = [demand * (1 + queue) for demand, queue in zip(demands, queues)]
        throughput = n / (delay_s + sum(responses))
        queues = [throughput * response for response in responses]
        points.append(MvaPoint(n, throughput, sum(responses), sum(queues)))
    return points


def _mva_multi_server(users: int, demand_s: float, delay_s: float, servers: int) -> list[MvaPoint]:
    # p[j] = P(j requests at the centre) with one user fewer; the j-th request present takes j / rate(j) on average.
    present = np.arange(1, users + 1)
    rate_per_demand = np.minimum(present, servers)
    time_per = present * demand_s / rate_per_demand
    p = np.zeros(users + 1)
    p[0] = 1.0
    points: list[MvaPoint] = []
    for n in range(1, users + 1):
        response = float(np.dot(time_per[:n], p[:n]))
        # Rounding can carry X a hair past the k servers' capacity near saturation; it cannot truly pass it.
        throughput = min(n / (delay_s + response), servers / demand_s)
        response = n / throughput - delay_s
        new = np.zeros(users + 1)
        new[1 : n + 1] = throughput * demand_s / rate_per_demand[:n] * p[:n]
        # The recursion loses precision near saturation: keep the probabilities within [0, 1], summing to 1.
        new[0] = max(0.0, 1.0 - new[1 : n + 1].sum())
        p = new / new.sum()
        points.append(MvaPoint(n, throughput, response, throughput * response))
    return points


def mva_throughput(
    users: int, demand_s: float | list[float] | tuple[float, ...], delay_s: float = 0.0, servers: int = 1
) -> float:
    """MVA's throughput at exactly `users` users (see `mva`)."""
    return mva(users, demand_s, delay_s, servers)[-1].throughput


def open_response(rate_rps: float, service_s: float, arrival_cv2: float = 1.0, service_cv2: float = 0.0) -> float:
    """Mean response time of an open queue: requests arrive at `rate_rps` and one server serves them in turn.

    The wait in line is Kingman's formula, W_q = S ρ/(1−ρ) (c_a² + c_s²)/2 with
    ρ = rate × S, and the response is W_q + S. With Poisson arrivals (c_a² = 1) it
    is exact for any service time (Pollaczek-Khinchine's M/G/1): deterministic
    service (c_s² = 0) gives M/D/1, exponential (c_s² = 1) M/M/1. Arrivals on a
    fixed clock (c_a² = 0) with fixed service wait not at all below saturation.
    At or past ρ = 1 the line grows without bound: the result is infinite.
    """
    check_range("rate_rps", rate_rps, 0, integer=False, above=True)
    check_range("service_s", service_s, 0, integer=False, above=True)
    rho = rate_rps * service_s
    if rho >= 1:
        return math.inf
    return service_s + service_s * rho / (1 - rho) * (arrival_cv2 + service_cv2) / 2


@dataclass(frozen=True)
class Simulated:
    """A simulated closed-loop run: every request's latency (in the order they reached the centre) and the run's length."""

    latencies_s: list[float]
    duration_s: float

    @property
    def throughput(self) -> float:
        return len(self.latencies_s) / self.duration_s

    def percentile_s(self, fraction: float) -> float:
        """Nearest-rank percentile, by the same function as a measured run's (percentiles.percentile)."""
        return percentile(sorted(self.latencies_s), fraction)


def simulate(users: int, requests: int, demand_s: float, delay_s: float = 0.0, servers: int = 1) -> Simulated:
    """A closed loop of equal requests, simulated exactly: a Simulated with each request's latency and the run's length.

    `users` start together; each request needs `demand_s` at a centre of
    `servers` servers, first come first served, then `delay_s` at the delay
    centre; each user sends its next request the moment it is answered, until
    `requests` have been sent. With delay 0 and one server this is a blocking
    server (demand = its wait plus its CPU): the first round's latencies climb
    D, 2D, ... N D, and every later one is N D. It gives the percentiles the
    asymptotic bounds cannot.
    """
    check_range("users", users, 1, integer=False)
    check_range("requests", requests, users, integer=False)
    check_range("demand_s", demand_s, 0, integer=False, above=True)
    free = [0.0] * servers  # when each server is next free
    ticket = itertools.count()
    arrivals = [(0.0, next(ticket)) for _ in range(users)]  # (time the request reaches the centre, order)
    heapq.heapify(arrivals)
    sent, latencies, last = users, [], 0.0
    sends: dict[int, float] = {}
    while arrivals:
        arrived, order = heapq.heappop(arrivals)
        sends.setdefault(order, arrived)
        server = min(range(servers), key=free.__getitem__)
        finished = max(arrived, free[server]) + demand_s
        free[server] = finished
        done = finished + delay_s
        latencies.append(done - sends.pop(order))
        last = max(last, done)
        if sent < requests:
            sent += 1
            heapq.heappush(arrivals, (done, next(ticket)))
    return Simulated(latencies, last)


@dataclass(frozen=True)
class Prediction:
    """What theory says about one closed-loop run, from the demands measured in it. Throughputs in req/s.

    low_rps: the pessimistic bound over everything a request needs besides its
    wait (the server's CPU and its waits for a CPU, the client's, a timer's
    slack), as if every request waited for all the others at each step; and,
    if connection attempts were dropped, TCP's retries (see SYN_RETRIES_S).
    high_rps: the optimistic bound from the server alone (the client can only
    slow things further): a request needs at least its wait and the server's
    CPU, and the server's thread cannot be running, or ready and waiting for a
    CPU, for more than the whole run. in_step_rps: what happens when the users
    stay in step, arriving together each round and served one after another
    (see in_step_throughput): the prediction the lessons set beside the
    measurement. knee: where the server's thread saturates.
    """

    users: int
    wait_s: float
    demand_s: float
    queued_s: float
    path_s: float
    blocking: bool
    threads: int
    low_rps: float
    high_rps: float
    in_step_rps: float
    knee: float
    step_path_s: float = math.nan  # the path users in step pay (see step_path); the in-step prediction's D_path

    def contains(self, rps: float, tolerance: float = 0.02) -> bool:
        """True when `rps` lies in [low, high], widened by `tolerance` for the measuring's own error."""
        return within(rps, self.low_rps, self.high_rps, tolerance)

    def lines(self) -> dict[str, float]:
        """{label: req/s} of the bounds and the in-step prediction, as a dashboard draws them."""
        return {"optimistic": self.high_rps, "in step": self.in_step_rps, "pessimistic": self.low_rps}


def predict(users: int, wait_s: float, demand_s: float, queued_s: float | None = 0.0, path_s: float | None = None, *,
            blocking: bool = False, threads: int = 1, cores: float | None = None, requests: int | None = None,
            lost_s: float = 0.0, window: float = 1.0, step_path_s: float | None = None,
            step_lost_s: float | None = None) -> Prediction:
    """The Prediction for `users` closed-loop users of handlers that wait `wait_s`; the server spends `demand_s` of CPU
    on each request and waits `queued_s` for a CPU (its share of a busy machine).

    blocking=False: the wait is a delay centre (an event loop's timer) and the
    server's one thread is the queueing centre: Z = wait, D = demand, k = 1.
    blocking=True: each of `threads` threads is held for the wait and the CPU:
    Z = 0, D = wait + demand, k = threads; with `cores` the CPU's own bound,
    cores / demand, applies too. Their waits overlap but their CPU work is
    taken as serial (Python's threads share one interpreter lock), so the
    pessimistic bound and users in step divide only the waits by k. `path_s` (default: demand + queued) is all a
    request needs besides its wait, client included, for the pessimistic bound; `step_path_s` (default: path_s) the
    same as users in step pay it (see step_path), for the in-step prediction.
    `lost_s`: time a run of `requests` requests may lose outside the model
    (SYN_RETRIES_S when connection attempts were dropped); it lowers the
    pessimistic bound to requests / (requests / low + lost_s), and the in-step
    prediction the same way by `step_lost_s` (default: lost_s): users in step
    that were dropped come back together, after about one retry timeout.
    `window`: how much longer than the run the CPU was measured over, as a
    ratio (at least 1). The counters open at the go and close once the clients
    have exited, so some of the demand (closing the connections) falls after the
    last answer; the server's thread can be busy for the whole window, and the
    capacity terms of the optimistic bound grow by that ratio.
    """
    check_range("users", users, 1, integer=False)
    check_range("demand_s", demand_s, 0, integer=False, above=True)
    queued_s = _number_or_zero(queued_s)
    busy_s = demand_s + queued_s  # the server's thread per request: running, or ready and waiting for a CPU
    path_s = busy_s if path_s is None or math.isnan(path_s) else max(path_s, busy_s)
    window = max(1.0, window) if window and not math.isnan(window) else 1.0
    step_s = clamped_step_path(step_path_s, busy_s, path_s)
    if blocking:
        # Each thread is held for the wait and the CPU; its wait for a CPU is left out here. The counters read it over
        # the whole window, closes after the last answer included, and beside CPU hogs they once read 400 ms over
        # ten requests that the clients' own timings showed were not on any request's path: the optimistic bound
        # must not count what may not be on the path.
        high = min(users / (wait_s + demand_s), window * threads / (wait_s + demand_s))
        if cores:
            high = min(high, window * cores / demand_s)
        # k threads wait side by side, but their CPU work takes turns (one interpreter lock, maybe one core): at
        # worst a request waits for every other's CPU, and for its share of the others' waits.
        low = users / (wait_s + path_s + (users - 1) * (path_s + wait_s / threads))
        in_step = users / (wait_s + step_s + (users - 1) * (busy_s + wait_s / threads))
        bend = knee(wait_s + busy_s, servers=threads)
    else:
        high = min(users / (wait_s + demand_s), window / busy_s)
        low = pessimistic_throughput(users, path_s, wait_s + TIMER_SLACK_S)
        in_step = in_step_throughput(users, step_s, busy_s, wait_s)
        bend = knee(path_s, wait_s, bottleneck_s=busy_s)
    if lost_s and requests:
        low = requests / (requests / low + lost_s)
        in_step = requests / (requests / in_step + (lost_s if step_lost_s is None else step_lost_s))
    return Prediction(users, wait_s, demand_s, queued_s, path_s, blocking, threads, low, high, in_step, bend, step_s)


def predict_run(
    summary: MeasuredRun, wait_ms: float, blocking: bool = False, threads: int = 1, window_s: float | None = None
) -> Prediction:
    """The Prediction for a measured run, from its Summary's demands (see usage.per_run_figures); NaN if unmeasured.

    `window_s`: the seconds the CPU was measured over (the LoadResult's usage.wall_s), when known; see `predict`.
    """
    demand_s = summary.demand_ms / 1000
    if not demand_s > 0:
        nan = math.nan
        return Prediction(summary.concurrency, wait_ms / 1000, nan, nan, nan, blocking, threads, nan, nan, nan, nan)
    path_ms = sum(
        value for value in (summary.demand_ms, summary.queued_ms, summary.client_demand_ms, summary.client_queued_ms)
        if not math.isnan(value)
    )
    step_s = step_path(demand_s, summary.queued_ms / 1000, summary.client_demand_ms / 1000,
                       summary.client_queued_ms / 1000)
    drops = bool(summary.listen_drops)
    return predict(
        summary.concurrency, wait_ms / 1000, demand_s, summary.queued_ms / 1000, path_ms / 1000, blocking=blocking,
        threads=threads, cores=summary.cores or None, requests=summary.completed,
        lost_s=SYN_RETRIES_S if drops else 0.0, step_lost_s=SYN_RETRY_S if drops else 0.0, step_path_s=step_s,
        window=window_s / summary.duration_s if window_s and summary.duration_s else 1.0,
    )


def within(value: float, low: float, high: float, tolerance: float = 0.0) -> bool:
    """True when `value` lies in [low (1 - tolerance), high (1 + tolerance)]; NaN is never within anything."""
    if any(isinstance(x, float) and math.isnan(x) for x in (value, low, high)):
        return False
    return low * (1 - tolerance) <= value <= high * (1 + tolerance)


def least_error(values: Iterable[float]) -> float:
    """The smallest error one prediction can have against every one of `values`: (max − min) / (max + min).

    Runs of the same experiment differ; a single predicted figure P is off each
    run by measured / P − 1. Predicting the midrange, (max + min) / 2, makes the
    worst of those as small as it can be. So when identical runs spread by more
    than a target allows, no model can meet that target on this machine, and
    the lesson has to report the figure rather than assert it.
    """
    values = [float(v) for v in values]
    if not values or any(math.isnan(v) or v <= 0 for v in values):
        raise ValueError(f"least_error needs positive measurements, got {values}")
    return (max(values) - min(values)) / (max(values) + min(values))
