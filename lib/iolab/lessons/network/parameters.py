"""Lesson 14's parameters, checked: each one out of range is named with its value and what is allowed."""

from dataclasses import dataclass

from iolab.params import LessonPlan, cell_values

from . import model

# Why each range: below 5 ms a round trip hides in the machine's own noise (a busy core wakes a thread 1 ms late);
# above 200 ms the runs grow long and the delayed-ACK timer (40 ms) is a small part of the stall.
RANGES = {
    "rtt_ms": (5, 200),  # RTT: the link's round trip, set on the delay line
    "requests": (2, 50),  # n: section 1's short requests, three ways
    "repeats": (3, 20),  # each run of sections 1 to 4 this many times: 3 at least, so the run has a spread
    "nagle_exchanges": (8, 200),  # section 6's write-write-reads on each setting of TCP_NODELAY
    # Section 4's transfer, timed over its second half: long enough for a few losses there at 0.5 % (170 segments),
    # at most 4 MB (a minute and a half of Reno at 10 % loss on a 200 ms link)
    "loss_bytes": (500_000, 4_000_000),
    "connects": (50, 1000),  # section 4's connects: enough that a few of them meet a lost SYN at 1 %
    # Section 2's link rate, Mbit/s: from 4, where an answer of 2 MB takes four seconds, to 40, about what the delay
    # line (Python, a packet at a time) carries while staying far below a core.
    "rate_mbit": (4, 40),
    # B, section 2's answer: from 100 kB, still more than a new connection's send buffer holds (so a sync worker
    # waits on the link), to 2 MB (a run of a few seconds at 4 Mbit/s for each server).
    "answer_bytes": (100_000, 2_000_000),
    "workers": (1, 4),  # w, section 2's sync workers: each is a process; twice as many slow clients share the link
    # N, section 5's page: from 12 answers (two on each of HTTP/1.1's six connections) to 120 (2.4 MB, a heavy page)
    "page_requests": (12, 120),
}
# p in percent, each way: below 0.5 % a transfer of a few MB meets too few losses for a steady state; above 10 %
# timeouts, not halvings, set the rate (Padhye et al.), and Mathis's model no longer holds.
FRACTIONS = {"loss_percent": (0.5, 10.0)}
# Quick mode's page: 48 answers still take HTTP/2 two round trips fewer than HTTP/1.1 on a clean link (8 against 10)
QUICK = {"requests": 6, "repeats": 3, "nagle_exchanges": 12, "loss_bytes": 1_000_000, "connects": 100,
         "answer_bytes": 150_000, "page_requests": 48}
# Section 4's transfer takes at most this long at Padhye's rate, the slower model: at 10 % loss on a 200 ms link Reno
# carries about 12 kB a second, and loss_bytes would take minutes.
LOSS_TRANSFER_MOST_S = 30.0
# ... but it keeps at least this many losses, expected, in the second half it is timed over.
LOSS_TRANSFER_LEAST_LOSSES = 8
LOSS_FLOWS = 8  # section 4's transfers from Reno, and from CUBIC, side by side: they cost no more time than one
# Section 2: N = twice as many slow clients as workers, so a worker that frees finds another waiting.
SLOW_CLIENTS_PER_WORKER = 2
SLOW_START_SIZES = (20_000, 100_000, 500_000, 2_000_000)  # section 3: one to eight round trips from IW10
PAGE_ANSWER_BYTES = 20_000  # section 5: each of the page's small answers, an icon or a script
# Section 5's pages under loss, each way, in batches run at once: the winner is judged on medians, and a lossy
# page's time spreads over a factor of five (an HTTP/2 page that meets an early loss crawls). Resampled from 91
# quick pages of each way, seven at once, at 2 % loss, the medians of 7 changed places one run in 290, of 14 one in
# 16,000: a class's 140 runs would meet none. Fifteen at once slowed HTTP/1.1's pages (90 connections and more
# client threads), so the batches stay at seven.
LOSSY_PAGES = 14
LOSSY_AT_ONCE = 7
# The notebook's parameters cell at full size, for a benchmark or a test that runs the lesson's parts alone.
DEFAULTS = {"rtt_ms": 40, "loss_percent": 2.0, "requests": 10, "repeats": 5, "nagle_exchanges": 30,
            "loss_bytes": 2_000_000, "connects": 200, "rate_mbit": 16, "answer_bytes": 400_000, "workers": 2,
            "page_requests": 60,
            "quick": False, "solutions": False, "results_path": None}
# Linux may ACK the first segments of a connection at once (quick-ACK mode): section 6 reads its stall from the
# exchanges after these.
WARM_UP_EXCHANGES = 4


@dataclass(frozen=True)
class Plan(LessonPlan):
    """The lesson's sizes, after the checks (quick mode shrinks the runs, not the ideas)."""

    rtt_ms: int
    requests: int
    repeats: int
    nagle_exchanges: int
    loss_bytes: int
    connects: int
    rate_mbit: int
    answer_bytes: int
    workers: int
    page_requests: int
    loss_percent: float

    @classmethod
    def from_cell(cls, cell):
        """The parameters cell's values (a dict such as globals()), checked; quick mode's sizes where it is on."""
        quick, values = cell_values(cell, RANGES, FRACTIONS, QUICK, cap=True)
        return cls(**values, **cls.flags(cell, quick))

    @property
    def transfer_bytes(self):
        """Section 4's transfer: loss_bytes, or less where Padhye's rate would take longer than
        LOSS_TRANSFER_MOST_S over it; never cut so far that its second half expects under
        LOSS_TRANSFER_LEAST_LOSSES losses."""
        loss, rtt_s = self.loss_percent / 100, self.rtt_ms / 1000
        most = model.padhye_rate(rtt_s, loss) * LOSS_TRANSFER_MOST_S
        least = 2 * LOSS_TRANSFER_LEAST_LOSSES / loss * model.MSS_BYTES
        return int(min(self.loss_bytes, max(least, most)) // 1000 * 1000)

    def describe(self):
        return (f"The link: a round trip of {self.rtt_ms} ms. Section 1: n = {self.requests} requests three ways,"
                f" each run {self.repeats} times. Section 2: a rate of {self.rate_mbit} Mbit/s,"
                f" {SLOW_CLIENTS_PER_WORKER * self.workers} slow clients downloading {self.answer_bytes:,} bytes"
                f" each, {self.workers} worker{'s' if self.workers > 1 else ''}. Section 3: {len(SLOW_START_SIZES)} sizes,"
                f" each {self.repeats} times. Section 4: {LOSS_FLOWS} transfers of {self.transfer_bytes:,} bytes each"
                f" at {self.loss_percent:g} % loss each way{self.transfer_capped()}, and {self.connects} connects."
                f" Section 5: a page of {self.page_requests} answers of {PAGE_ANSWER_BYTES:,} bytes, {self.repeats}"
                f" times each way on the clean link and {LOSSY_PAGES} times at {self.loss_percent:g} % loss."
                f" Section 6: {self.nagle_exchanges} write-write-reads with TCP_NODELAY on, and as many with it off.")

    def transfer_capped(self):
        """Why section 4's transfer is smaller than loss_bytes, or nothing where it is not."""
        if self.transfer_bytes >= self.loss_bytes:
            return ""
        return (f" (not {self.loss_bytes:,}: at this loss and round trip Reno may carry as little as"
                f" {model.padhye_rate(self.rtt_ms / 1000, self.loss_percent / 100) / 1000:.0f} kB/s, and a transfer"
                f" is kept under {LOSS_TRANSFER_MOST_S:g} s)")

    def as_dict(self):
        return {"rtt_ms": self.rtt_ms, "requests": self.requests, "repeats": self.repeats,
                "nagle_exchanges": self.nagle_exchanges, "loss_bytes": self.loss_bytes, "connects": self.connects,
                "rate_mbit": self.rate_mbit, "answer_bytes": self.answer_bytes, "workers": self.workers,
                "page_requests": self.page_requests, "loss_percent": self.loss_percent, "quick": self.quick,
                "transfer_bytes": self.transfer_bytes}
