"""Summaries of a load run's samples: throughput, latency percentiles, ab's report fields, and Little's-law bounds."""

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from .clients.aggregate import Aggregate, SortedLatenciesMs
from .percentiles import Ranked, percentile  # also read as metrics.percentile by the lessons and notebooks
from .usage import RunUsage, per_run_figures

if TYPE_CHECKING:  # load imports this module
    from .load import LoadResult, Sample

AB_PERCENTAGES = (50, 66, 75, 80, 90, 95, 98, 99, 100)
# A client process running or waiting to run this share of a run or more hardly ever waited for the server: it may
# have set the pace itself. Not 1: a Python client's threads also queue for the GIL, so it seldom shows a whole CPU.
CLIENT_SATURATED = 0.8


@dataclass(frozen=True)
class Summary:
    """The headline figures of one run; times in milliseconds, throughput in requests per second."""

    requests: int
    concurrency: int
    completed: int
    errors: int
    error_kinds: dict[str, int]
    duration_s: float
    rps: float
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    # ab's "Time per request" (the first line): concurrency x total time / n.
    ab_time_per_request_ms: float
    # ab's "Time per request ... across all concurrent requests": total time / n.
    ab_time_per_request_all_ms: float
    ab_percentiles: dict[int, int] = field(default_factory=dict)
    # Where latencies are measured from: "send" (when each request left) or "intended" (when its schedule meant it to).
    latency_from: str = "send"
    # Mean requests in flight: the sum of latencies over the run's length, which is rps x mean latency. Little's law
    # (L = X W) holds for it by construction, so comparing the two checks nothing; compare it with `concurrency`.
    in_flight: float = math.nan
    # Filled in when the server was measured (load.run_load(..., server=server)); see usage.per_run_figures.
    server_cpu_s: float = math.nan  # CPU seconds of all the server's processes during the run
    utilization: float = math.nan  # U: CPU seconds per second; over 1 when several cores work
    demand_ms: float = math.nan  # D = U / X: CPU per request (the service demand law)
    queued_ms: float = math.nan  # per request, how long the server's busiest thread waited for a CPU
    saturation_ms: float = math.nan  # per request, how long all the server's threads waited for a CPU
    client_demand_ms: float = math.nan  # the load client's CPU per request
    client_queued_ms: float = math.nan  # and its wait for a CPU per request
    lab_demand_ms: float = math.nan  # this notebook's CPU per request: reading the results, drawing
    cores: float = 0  # CPUs the server may use: its affinity, or fewer under a container's CPU quota
    listen_drops: int = 0  # connection attempts dropped by a full accept queue during the run (the whole machine's)
    client_processes: int = 1  # the load client's processes, each one busy thread at most

    @property
    def client_utilization(self) -> float:
        """The share of the run a client process spent on a CPU (its CPU seconds per second, per process)."""
        return self.client_demand_ms * self.rps / 1000 / max(self.client_processes, 1)

    @property
    def client_runnable(self) -> float:
        """The share of the run a client process was on a CPU or waiting for one: near 1, it never waited for the
        server, so the client, not the server, set the pace. (A wait for a CPU counts: on a shared CPU it is time
        the client wanted and the server or another program had.)"""
        queued = self.client_queued_ms if math.isfinite(self.client_queued_ms) else 0.0
        share = (self.client_demand_ms + queued) * self.rps / 1000 / max(self.client_processes, 1)
        return min(1.0, share) if math.isfinite(share) else math.nan  # NaN when the client was not measured

    def client_took_the_cpus(self) -> bool:
        """True when the server and the client together kept the server's CPUs busy, and the client spent more CPU
        per request than the server: on a shared machine the client then set the pace (one CPU, most of all)."""
        client = self.client_utilization * max(self.client_processes, 1)
        if not (self.cores and math.isfinite(self.utilization) and math.isfinite(client)):
            return False
        return self.utilization + client >= CLIENT_SATURATED * self.cores and self.client_demand_ms > self.demand_ms

    def warnings(self) -> list[str]:
        """What makes this run's figures suspect, as sentences: non-2xx answers, failed requests, a saturated client."""
        found: list[str] = []
        answered_badly = sum(count for kind, count in self.error_kinds.items() if kind.startswith("status "))
        failed = self.errors - answered_badly
        if answered_badly:
            statuses = ", ".join(f"{count} × {kind[7:]}" for kind, count in self.error_kinds.items()
                                 if kind.startswith("status "))
            found.append(f"{answered_badly} of {self.completed} answers were not 2xx ({statuses}): the rate counts errors")
        if failed:
            found.append(f"{failed} of {self.completed} requests failed without an answer")
        if self.client_runnable >= CLIENT_SATURATED:
            found.append(
                f"the client was saturated (on a CPU or waiting for one {self.client_runnable:.0%} of the run):"
                " it, not the server, may have set these figures"
            )
        elif self.client_took_the_cpus():
            found.append(
                f"the CPUs were full and the client took most of them ({self.client_demand_ms:.3g} ms per request"
                f" against the server's {self.demand_ms:.3g}): it, not the server, may have set these figures"
            )
        return found

    def headline(self) -> str:
        """The run in one line, its warnings first: what a report must not bury in a footnote."""
        figures = f"{self.rps:,.1f} req/s, mean {self.mean_ms:.3g} ms, p99 {self.p99_ms:.3g} ms, {self.completed} requests"
        warnings = self.warnings()
        return ("WARNING: " + "; ".join(warnings) + ". " + figures) if warnings else figures

    def as_dict(self, *keys: str) -> dict[str, Any]:
        """The named figures (all of them by default), e.g. for a notebook's results JSON."""
        values = {name: getattr(self, name) for name in self.__dataclass_fields__}
        return {name: values[name] for name in keys} if keys else values


def line_fit(xs: Iterable[float], ys: Iterable[float]) -> tuple[float, float, float, float]:
    """(slope, intercept, the slope's standard error, the points' scatter about the line) of a least-squares line.

    The two noise figures come from the points' own scatter: how well this run's readings pin the slope down,
    and how far one point strays from the line. With no spread in x the slope is unknown (its error inf).
    """
    xs, ys = [float(x) for x in xs], [float(y) for y in ys]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread_x = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / spread_x if spread_x > 0 else math.nan
    intercept = mean_y - slope * mean_x
    residuals = [y - (slope * x + intercept) for x, y in zip(xs, ys)]
    scatter = math.sqrt(sum(r * r for r in residuals) / max(1, len(xs) - 2))
    return slope, intercept, scatter / math.sqrt(spread_x) if spread_x > 0 else math.inf, scatter


def corrected_for_omission(latencies: Iterable[float], expected_interval: float) -> list[float]:
    """HdrHistogram's corrected recording: each latency, plus for one longer than the expected interval the
    requests a client on schedule would have sent meanwhile (the latency less 1, 2, ... intervals, down to one
    interval). Returns the values sorted. The same rule as HdrHistogram's recordValueWithExpectedInterval.
    """
    if not expected_interval > 0:
        raise ValueError(f"expected_interval must be positive, got {expected_interval!r}")
    corrected: list[float] = []
    for value in latencies:
        corrected.append(value)
        missing = value - expected_interval
        while missing >= expected_interval:
            corrected.append(missing)
            missing -= expected_interval
    corrected.sort()
    return corrected


def ab_percentile_table(sorted_latencies_ms: Ranked) -> dict[int, int]:
    """ab's "Percentage of the requests served within a certain time" table, indexed the way ab indexes it."""
    done = len(sorted_latencies_ms)
    if not done:
        return {}
    table: dict[int, int] = {}
    for percentage in AB_PERCENTAGES:
        index = done - 1 if percentage >= 100 else done * percentage // 100
        table[percentage] = round(sorted_latencies_ms[index])
    return table


def error_kinds(samples: "Aggregate | Iterable[Sample]") -> dict[str, int]:
    """Transport errors by kind, and answers that were not 2xx by status, e.g. {"refused": 3, "status 500": 1}."""
    if isinstance(samples, Aggregate):
        return dict(samples.error_kinds)
    kinds: Counter[str] = Counter()
    for sample in samples:
        if sample.error:
            kinds[sample.error] += 1
        elif not 200 <= sample.status < 300:
            kinds[f"status {sample.status}"] += 1
    return dict(kinds)


def sorted_latencies_ms(samples: "Aggregate | Iterable[Sample]", latency_from: str = "send") -> Ranked:
    """Latencies in ms, smallest first: a list, or for an Aggregate its histogram read by rank (len and [i] alike)."""
    if latency_from not in ("send", "intended"):
        raise ValueError(f"latency_from must be 'send' or 'intended', got {latency_from!r}")
    if isinstance(samples, Aggregate):
        return SortedLatenciesMs(samples.histogram(latency_from))
    if latency_from == "intended":
        return sorted(sample.latency_from_intended * 1000 for sample in samples)
    return sorted(sample.latency * 1000 for sample in samples)


def summarize(result: "LoadResult", latency_from: str = "send", usage: RunUsage | None = None) -> Summary:
    """Summarize a LoadResult (samples or aggregate alike). ab divides by every request it finished, failed or not; so do we.

    `latency_from="intended"` measures each latency from when the schedule meant
    the request to leave, as an open loop's users would feel it. `usage` (a
    usage.RunUsage) defaults to the one the run measured, if it did.
    """
    samples = cast("Aggregate | list[Sample]", result.samples)  # load.LoadResult says: one or the other
    done = len(samples)
    latencies_ms = sorted_latencies_ms(samples, latency_from)
    total_s = result.duration_s
    kinds = error_kinds(samples)
    concurrency = result.spec.concurrency
    per_request_ms = total_s * 1000 / done if done else math.nan
    return Summary(
        requests=result.spec.requests,
        concurrency=concurrency,
        completed=done,
        errors=sum(kinds.values()),
        error_kinds=kinds,
        duration_s=total_s,
        rps=done / total_s if total_s else 0.0,
        mean_ms=_mean(latencies_ms) if done else math.nan,
        p50_ms=percentile(latencies_ms, 0.50),
        p90_ms=percentile(latencies_ms, 0.90),
        p99_ms=percentile(latencies_ms, 0.99),
        max_ms=latencies_ms[-1] if done else math.nan,
        ab_time_per_request_ms=concurrency * per_request_ms,
        ab_time_per_request_all_ms=per_request_ms,
        ab_percentiles=ab_percentile_table(latencies_ms),
        latency_from=latency_from,
        in_flight=done * _mean(latencies_ms) / 1000 / total_s if done and total_s else math.nan,
        client_processes=result.spec.processes,
        **per_run_figures(usage if usage is not None else getattr(result, "usage", None), done, total_s),
    )


def _mean(sorted_latencies: Ranked) -> float:
    if isinstance(sorted_latencies, SortedLatenciesMs):
        return sorted_latencies.mean()
    return sum(cast("list[float]", sorted_latencies)) / len(sorted_latencies)


def throughput_over_time(
    samples: "Aggregate | Sequence[Sample]", bin_s: float = 0.25, until_s: float | None = None
) -> tuple[list[float], list[float]]:
    """Completions per second in consecutive bins of `bin_s`: returns (bin start times, rates)."""
    if isinstance(samples, Aggregate):
        end = until_s if until_s is not None else samples.last_end
        counts = samples.completions_per_bin(bin_s, end)
        return [i * bin_s for i in range(len(counts))], [float(count) / bin_s for count in counts]
    end = until_s if until_s is not None else max((sample.end for sample in samples), default=0.0)
    bins = max(1, math.ceil(end / bin_s))
    per_bin = [0] * bins
    for sample in samples:
        per_bin[min(int(sample.end / bin_s), bins - 1)] += 1
    return [i * bin_s for i in range(bins)], [count / bin_s for count in per_bin]


def in_flight_over_time(
    samples: "Aggregate | Sequence[Sample]", step_s: float = 0.05, until_s: float | None = None
) -> tuple[list[float], list[int]]:
    """How many requests were between send and answer at each step: returns (times, counts)."""
    if isinstance(samples, Aggregate):
        end = until_s if until_s is not None else samples.last_end
        times = [i * step_s for i in range(max(1, math.ceil(end / step_s) + 1))]
        return times, [int(count) for count in samples.in_flight_at(times)]
    end = until_s if until_s is not None else max((sample.end for sample in samples), default=0.0)
    steps = max(1, math.ceil(end / step_s) + 1)
    change = [0] * (steps + 1)
    for sample in samples:
        change[min(math.ceil(sample.start / step_s), steps)] += 1
        change[min(math.ceil(sample.end / step_s), steps)] -= 1
    times, counts, level = [], [], 0
    for i in range(steps):
        level += change[i]
        times.append(i * step_s)
        counts.append(level)
    return times, counts


def little_bound(concurrency: int, service_s: float, workers: int | None = None) -> float:
    """Little's law for a closed loop: at most min(concurrency, workers) requests finish every service time.

    `workers` is how many requests the server can serve at once while they wait:
    1 for a blocking single-threaded server, k for k threads, None when waiting
    costs nothing (an event loop on timers), so only the clients' concurrency limits it.
    It leaves the server's CPU out: it is the ceiling the lessons start from, and
    theory.predict_run gives the bounds with the CPU a run measured.
    """
    if service_s <= 0:
        raise ValueError(f"service_s must be positive, got {service_s}")
    busy = concurrency if workers is None else min(concurrency, workers)
    return busy / service_s

