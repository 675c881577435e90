"""The bank's three experiments, run on the servers each bank stands for; measures, never draws."""

import contextlib
import math
import statistics
from dataclasses import dataclass

from iolab import load, metrics, neighbours, servers

# Which server and route play each bank. The sync and ticket banks are the
# same single Tornado process; only the handler differs (handlers A and B).
BANK_SERVERS = {
    "sync": ("tornado_app", "sync-sleep"),
    "threaded": ("threaded_app", "sync-sleep"),
    "ticket": ("tornado_app", "async-sleep"),
}
EMPTY_VISITS = 20  # requests to `/` that measure a visit's counter work
# An errand's timer ends up to this late: the event loop's epoll_wait() counts whole milliseconds (Python rounds its
# timeout up), and time.sleep()'s overshoot is the kernel's timer slack, 50 µs. A fact of the system, not a tuning.
TIMER_MS = 1.0


@dataclass
class Measured:
    """One bank measured: its load result, the summary, and the counter work measured just before."""

    bank: str
    result: load.LoadResult
    summary: metrics.Summary
    counter_ms: float
    counter_spread_ms: float = 0.0  # how much slower than counter_ms one empty visit in ten was (p90 - p50)
    others: neighbours.Neighbours | None = None  # what else held the CPUs while its customers were served

    @property
    def opened_s(self):
        return min(sample.start for sample in self.result.samples)

    @property
    def duration_s(self):
        """From the first request sent to the last answer: the bank's opening hours, as in the simulation.

        Not LoadResult.duration_s, which also counts the client process getting ready before its first request.
        """
        return max(sample.end for sample in self.result.samples) - self.opened_s

    @property
    def rps(self):
        return len(self.result.samples) / self.duration_s

    @property
    def mean_ms(self):
        return self.summary.mean_ms

    def in_flight_over_time(self, step_s=0.002):
        """(times, requests in flight), with the clock starting at the first request, like the simulation's."""
        shifted = [sample._replace(start=sample.start - self.opened_s, end=sample.end - self.opened_s)
                   for sample in self.result.samples]
        return metrics.in_flight_over_time(shifted, step_s, until_s=self.duration_s)

    def mean_in_flight(self, step_s=0.002):
        """L: requests in flight, averaged over the opening hours on a fine time grid (not computed from rps or mean)."""
        _, counts = self.in_flight_over_time(step_s)
        return sum(counts[:-1]) / (len(counts) - 1)

    def unmodelled_ms(self, model):
        """What the simulated `model` leaves out of one visit, from this run's own measurements, in ms.

        The errand's timer may end up to TIMER_MS late; the counter work is one figure, while the empty visits
        varied by counter_spread_ms; and the load client's own CPU per customer (and its wait for a CPU) is no
        teller's work. Customers who finish together queue for it: at most one per teller in the synchronous
        banks, where tellers hand customers out one by one, and everyone in the hall in the ticket bank, whose
        errands end together. Those counts are the model's structure, not tunings.
        """
        client_ms = self.summary.client_demand_ms + self.summary.client_queued_ms
        together = model.concurrency if model.bank == "ticket" else min(model.tellers, model.concurrency)
        return TIMER_MS + self.counter_spread_ms + together * (client_ms if math.isfinite(client_ms) else 0)

    def sampling_error(self, model):
        """The relative standard error of the measured mean time in the bank against the simulated `model`'s.

        Both runs' times in the bank, each sorted, are paired visit by visit (the k-th shortest with the k-th
        shortest): the model's own spread (the first customers wait less) cancels, and what differs from visit to
        visit is noise. Its standard deviation over sqrt(n), relative to the measured mean.
        """
        measured = sorted(sample.end - sample.start for sample in self.result.samples)
        simulated = sorted(visit.time_in_bank for visit in model.visits)
        if len(measured) != len(simulated) or len(measured) < 2:
            return 0.0
        differences = [real - sim for real, sim in zip(measured, simulated)]
        return statistics.stdev(differences) / statistics.fmean(measured) / math.sqrt(len(differences))

    def model_band(self, delay_ms, model):
        """How far the simulated `model` may miss this bank's throughput and mean time, as a fraction of the measured.

        A visit the model gets wrong by unmodelled_ms() moves throughput and mean time by that over the visit's
        length; the measured mean itself is only known to its standard error, of which three are allowed.
        """
        return self.unmodelled_ms(model) / (delay_ms + self.counter_ms) + 3 * self.sampling_error(model)


@contextlib.contextmanager
def bank_server(bank, threads=None):
    """Start the server that plays `bank`: threaded_app with a pool of `threads` for the threaded bank."""
    name, _ = BANK_SERVERS[bank]
    options = {"threads": threads} if bank == "threaded" else {}
    with servers.serve(name, **options) as server:
        yield server


def bank_url(server, bank, delay_ms):
    return f"{server.url}/{BANK_SERVERS[bank][1]}?ms={int(delay_ms)}"


def empty_visit_ms(server, visits=EMPTY_VISITS):
    """Typical (median) time of a visit with no errands (`/`), one customer at a time, each on a new connection,
    and how much slower one visit in ten was (p90 - median), in ms.

    It is what every visit costs besides its errands: open a connection, parse the
    request, write the answer. The simulation can take it as the teller's counter work.
    """
    result = load.run_load(f"{server.url}/", requests=visits, concurrency=1, keep_alive=False, timeout_s=10, max_duration_s=30)
    summary = metrics.summarize(result)
    if summary.errors:
        raise RuntimeError(f"{summary.errors} of {visits} empty visits to {server.name} failed: {summary.error_kinds}")
    # The median, not the mean: one visit delayed by another process on a busy machine should not set the teller's pace.
    return summary.p50_ms, summary.p90_ms - summary.p50_ms


def start_bank_load(server, bank, requests, concurrency, delay_ms):
    """Start the bank's customers as a closed-loop load: a new connection per request, as ab does without -k.

    The run also measures the CPU the server's processes spend (the summary's
    demand_ms, D), from which theory's bounds for the bank follow.

    New connections matter for the threaded bank: with keep-alive, each of the k
    pool threads would stay with its first connection, and the other customers
    would wait for a connection to close instead of for a free teller.
    """
    worst_s = requests * delay_ms / 1000  # the synchronous bank serves everyone in turn
    return load.start_load(
        bank_url(server, bank, delay_ms),
        server=server,
        requests=requests,
        concurrency=concurrency,
        kind="closed_async",
        keep_alive=False,
        timeout_s=min(600.0, 2 * worst_s + 10),
        max_duration_s=min(3600.0, 2 * worst_s + 30),
    )


def run_bank(server, bank, requests, concurrency, delay_ms, counter=(None, 0.0), follow=None):
    """Run the bank's customers on an already started server; `follow(run)` may watch and must return the LoadResult.
    What else held the CPUs is read over the customers' run alone, not the empty visits before it."""
    with neighbours.watching() as watch:
        run = start_bank_load(server, bank, requests, concurrency, delay_ms)
        try:
            result = follow(run) if follow else run.wait()
        finally:
            run.stop()
    server.check()
    return Measured(bank, result, metrics.summarize(result), *counter, others=watch.found)


def measure(bank, requests, concurrency, delay_ms, threads=None, follow=None, calibrate=True):
    """Start the bank's server, measure the empty visit (unless told not to), run the customers, stop the server."""
    with bank_server(bank, threads) as server:
        counter = empty_visit_ms(server) if calibrate else (None, 0.0)
        return run_bank(server, bank, requests, concurrency, delay_ms, counter, follow)


def measure_all(requests, concurrency, delay_ms, threads):
    """All three banks, {"sync": Measured, "threaded": ..., "ticket": ...}; sync and ticket share one Tornado process."""
    measured = {}
    with bank_server("sync") as tornado:
        counter = empty_visit_ms(tornado)
        for bank in ("sync", "ticket"):
            measured[bank] = run_bank(tornado, bank, requests, concurrency, delay_ms, counter)
    measured["threaded"] = measure("threaded", requests, concurrency, delay_ms, threads)
    return {bank: measured[bank] for bank in BANK_SERVERS}
