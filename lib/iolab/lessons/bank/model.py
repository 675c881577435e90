"""The bank-queue analogy as a discrete-event simulation (SimPy).

Tellers, a hall and a lounge.
"""

import bisect
from dataclasses import dataclass, field

import simpy

from iolab import metrics, params

BANKS = ("sync", "threaded", "ticket")
PLACES = ("hall", "working", "waiting", "lounge")  # where a customer in the bank is; see Snapshot


@dataclass(frozen=True)
class Visit:
    """One customer (request): when they came in, first reached a teller, and left."""

    customer: int
    seat: int  # which of the `concurrency` closed-loop clients sent them
    arrival: float
    service_start: float
    departure: float

    @property
    def time_in_bank(self):
        return self.departure - self.arrival


@dataclass(frozen=True)
class Snapshot:
    """How many customers are where, from `time` until the next snapshot.

    hall: waiting for a teller; working: at a counter while the teller works for
    them; waiting: at a counter while the teller waits with them through their
    errands (the synchronous banks); lounge: running errands with a ticket, no
    teller held; done: left the bank.
    """

    time: float
    hall: int
    working: int
    waiting: int
    lounge: int
    done: int

    @property
    def tellers_busy(self):
        return self.working + self.waiting

    @property
    def in_bank(self):
        return self.hall + self.working + self.waiting + self.lounge


@dataclass
class BankRun:
    """Everything one simulated opening of the bank produced."""

    bank: str
    tellers: int
    requests: int
    concurrency: int
    delay_ms: float
    cpu_ms: float
    visits: list = field(default_factory=list)
    timeline: list = field(default_factory=list)  # Snapshots, one per change

    @property
    def duration_s(self):
        return max(v.departure for v in self.visits) - min(v.arrival for v in self.visits)

    @property
    def rps(self):
        return len(self.visits) / self.duration_s

    @property
    def mean_ms(self):
        return 1000 * sum(v.time_in_bank for v in self.visits) / len(self.visits)

    def percentile_ms(self, percent):
        """Nearest-rank percentile of the time in the bank, as ab's 'served within' table."""
        return 1000 * metrics.percentile(sorted(v.time_in_bank for v in self.visits), percent / 100)

    def at(self, time):
        """The Snapshot in force at `time`."""
        index = bisect.bisect_right([s.time for s in self.timeline], time) - 1
        return self.timeline[max(index, 0)]

    def mean_in_bank(self):
        """L: the time-average number of customers in the bank over the run."""
        area = sum(s.in_bank * (after.time - s.time) for s, after in zip(self.timeline, self.timeline[1:]))
        return area / self.duration_s

    def little(self):
        """Little's law on this run: (L measured as a time-average, lambda * W)."""
        return self.mean_in_bank(), self.rps * self.mean_ms / 1000

    def summary(self):
        return {
            "rps": self.rps,
            "mean_ms": self.mean_ms,
            "p50_ms": self.percentile_ms(50),
            "p99_ms": self.percentile_ms(99),
            "duration_s": self.duration_s,
        }


class BankModel:
    """The SimPy model: one Resource of tellers, counters of who is where."""

    def __init__(self, run):
        self.run = run
        self.env = simpy.Environment()
        self.tellers = simpy.Resource(self.env, capacity=run.tellers)
        self.counts = dict.fromkeys(PLACES + ("done",), 0)
        self.next_customer = 0
        self.cpu_s = run.cpu_ms / 1000
        self.delay_s = run.delay_ms / 1000
        self.note()

    def note(self):
        snapshot = Snapshot(self.env.now, **self.counts)
        timeline = self.run.timeline
        if timeline and timeline[-1].time == snapshot.time:
            timeline[-1] = snapshot  # several moves at one instant: keep the state after all of them
        else:
            timeline.append(snapshot)

    def move(self, leaving, entering):
        if leaving:
            self.counts[leaving] -= 1
        self.counts[entering] += 1
        self.note()

    def seat(self, seat):
        """One closed-loop client: the moment its customer leaves, the next one comes in."""
        while self.next_customer < self.run.requests:
            customer = self.next_customer
            self.next_customer += 1
            visit = yield from (self.ticket_visit if self.run.bank == "ticket" else self.sync_visit)(customer, seat)
            self.run.visits.append(visit)

    def sync_visit(self, customer, seat):
        # No tickets: the teller stays at the counter while the customer runs errands.
        arrival = self.env.now
        self.move(None, "hall")
        with self.tellers.request() as teller:
            yield teller
            service_start = self.env.now
            self.move("hall", "working")
            yield self.env.timeout(self.cpu_s / 2)
            self.move("working", "waiting")
            yield self.env.timeout(self.delay_s)
            self.move("waiting", "working")
            yield self.env.timeout(self.cpu_s / 2)
            self.move("working", "done")
        return Visit(customer, seat, arrival, service_start, self.env.now)

    def ticket_visit(self, customer, seat):
        # A ticket: counter work, errands in the lounge without a teller, then a call back.
        arrival = self.env.now
        self.move(None, "hall")
        with self.tellers.request() as teller:
            yield teller
            service_start = self.env.now
            self.move("hall", "working")
            yield self.env.timeout(self.cpu_s / 2)
        self.move("working", "lounge")
        yield self.env.timeout(self.delay_s)
        self.move("lounge", "hall")
        with self.tellers.request() as teller:
            yield teller
            self.move("hall", "working")
            yield self.env.timeout(self.cpu_s / 2)
            self.move("working", "done")
        return Visit(customer, seat, arrival, service_start, self.env.now)


def simulate(bank, requests, concurrency, delay_ms, cpu_ms=0.0, tellers=None):
    """Open the bank, let `requests` customers through, `concurrency` at a time, and return the BankRun.

    bank: "sync" (one teller who waits through errands), "threaded" (`tellers`
    such tellers: a pool of threads) or "ticket" (one teller by default; errands
    in the lounge). Each visit needs cpu_ms of a teller's work and delay_ms of errands.
    """
    params.check_choice("bank", bank, BANKS)
    if tellers is None:
        tellers = 1
        if bank == "threaded":
            raise params.ParameterError("the threaded bank needs tellers=k (the size of the thread pool), got None")
    elif bank == "sync" and tellers != 1:
        raise params.ParameterError(f"the synchronous bank has exactly one teller, got tellers={tellers}")
    for name, value in (("requests", requests), ("concurrency", concurrency), ("tellers", tellers)):
        params.check_range(name, value, 1)
    for name, value in (("delay_ms", delay_ms), ("cpu_ms", cpu_ms)):
        params.check_range(name, value, 0, integer=False)
    if delay_ms + cpu_ms <= 0:
        raise params.ParameterError("delay_ms + cpu_ms must be > 0: a visit that takes no time has no throughput")
    run = BankRun(bank, tellers, requests, concurrency, float(delay_ms), float(cpu_ms))
    model = BankModel(run)
    for seat in range(min(concurrency, requests)):
        model.env.process(model.seat(seat))
    model.env.run()
    run.visits.sort(key=lambda v: v.customer)
    return run


def simulate_all(requests, concurrency, delay_ms, threads, cpu_ms=0.0):
    """The lesson's three banks with the same customers: {"sync": run, "threaded": run, "ticket": run}."""
    return {
        "sync": simulate("sync", requests, concurrency, delay_ms, cpu_ms),
        "threaded": simulate("threaded", requests, concurrency, delay_ms, cpu_ms, tellers=threads),
        "ticket": simulate("ticket", requests, concurrency, delay_ms, cpu_ms),
    }
