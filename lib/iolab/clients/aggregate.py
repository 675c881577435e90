"""A run kept in aggregate.

Counts per time bin and latency histograms (HdrHistogram), for runs too large for a sample per
request.
"""

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any, NoReturn, Protocol

import numpy as np
from hdrh.histogram import HdrHistogram

from . import wire

# One batch of latencies as counted per bucket: (bucket indexes, their counts, the least and most in ns).
CountedBatch = tuple[np.ndarray, np.ndarray, int, int]

BIN_S = 0.01  # the finest time bin kept; coarser views add bins up
LOWEST_NS = 1
HIGHEST_NS = 2 * 3600 * 10**9  # two hours: longer than any run's duration plus its timeout
SIGNIFICANT_FIGURES = 3  # every latency is kept to within 1 part in 1024 (HdrHistogram's guarantee for 3 figures)
RELATIVE_PRECISION = 2.0**-10


class Hdr(Protocol):
    """What this module uses of hdrh's HdrHistogram, which ships no types: its counts and the fields its formula reads."""

    counts: Any  # a ctypes array of the counts, read and written through numpy
    total_count: int
    min_value: int
    max_value: int
    unit_magnitude: int
    sub_bucket_mask: int
    sub_bucket_half_count: int
    sub_bucket_half_count_magnitude: int

    def add(self, other: "Hdr") -> object: ...

    def get_value_from_index(self, index: int) -> int: ...

    def get_highest_equivalent_value(self, value: int) -> int: ...

    def encode(self) -> bytes: ...


class LatencyHistogram:
    """Latencies in an HdrHistogram of nanoseconds, recorded a batch at a time, with exact count, sum, min and max.

    hdrh's record_value is Python code per value; a batch's bucket indexes are
    computed here with numpy by HdrHistogram's own formula (a test compares them
    with hdrh's), and added to hdrh's counts array in one step.
    """

    def __init__(self) -> None:
        self.histogram: Hdr = HdrHistogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_FIGURES)
        self.counts = np.ctypeslib.as_array(self.histogram.counts)
        self.sum_s = 0.0
        self.min_s = math.inf
        self.max_s = -math.inf

    def __len__(self) -> int:
        return self.histogram.total_count

    def indexes(self, ns: np.ndarray) -> np.ndarray:
        """HdrHistogram's counts index of each value (numpy int64 nanoseconds)."""
        h = self.histogram
        # bit length = 64 - count of leading zeros; exact through float64 because values stay below 2**53
        bit_length = np.frexp((ns | h.sub_bucket_mask).astype(np.float64))[1].astype(np.int64)
        bucket = bit_length - h.unit_magnitude - (h.sub_bucket_half_count_magnitude + 1)
        sub_bucket = ns >> (bucket + h.unit_magnitude)
        return ((bucket + 1) << h.sub_bucket_half_count_magnitude) + (sub_bucket - h.sub_bucket_half_count)

    def record(self, seconds: np.ndarray, batch: CountedBatch | None = None) -> CountedBatch | None:
        """Add a batch of latencies (a numpy array of seconds). Returns the batch as counted per bucket, which a
        second histogram of the same values takes (batch=...) without counting them again."""
        if not len(seconds):
            return None
        if batch is None:
            ns = np.clip(np.rint(seconds * 1e9), 0, HIGHEST_NS).astype(np.int64)
            # Latencies crowd into few buckets: counting them first touches a few entries of the 35,000.
            buckets, counts = np.unique(self.indexes(ns), return_counts=True)
            batch = (buckets, counts.astype(np.uint64), int(ns.min()), int(ns.max()))
        buckets, counts, min_ns, max_ns = batch
        self.counts[buckets] += counts
        h = self.histogram
        h.total_count += len(seconds)
        h.min_value = min(h.min_value, min_ns)
        h.max_value = max(h.max_value, max_ns)
        self.sum_s += float(seconds.sum())
        self.min_s = min(self.min_s, float(seconds.min()))
        self.max_s = max(self.max_s, float(seconds.max()))
        return batch

    @staticmethod
    def record_zeros_batch(count: int) -> CountedBatch:
        return np.zeros(1, np.int64), np.array([count], np.uint64), 0, 0

    def merge(self, other: "LatencyHistogram") -> None:
        self.histogram.add(other.histogram)
        self.sum_s += other.sum_s
        self.min_s = min(self.min_s, other.min_s)
        self.max_s = max(self.max_s, other.max_s)

    def copy(self) -> "LatencyHistogram":
        twin = LatencyHistogram()
        twin.merge(self)
        return twin

    @property
    def mean_s(self) -> float:
        return self.sum_s / len(self) if len(self) else math.nan

    def at_rank(self, rank: int) -> float:
        """The rank-th smallest latency in seconds (1-based), to HdrHistogram's precision; exact at the ends."""
        total = len(self)
        if not 1 <= rank <= total:
            raise IndexError(f"rank must be between 1 and {total}, got {rank}")
        if rank == total:
            return self.max_s
        if rank == 1:
            return self.min_s
        index = int(np.searchsorted(np.cumsum(self.counts), rank))
        h = self.histogram
        value_ns = h.get_highest_equivalent_value(h.get_value_from_index(index))
        return min(max(value_ns / 1e9, self.min_s), self.max_s)

    def encode(self) -> bytes:
        """HdrHistogram's compressed, base64 form, which HdrHistogram's own tools (and plotters) read."""
        return self.histogram.encode()


class SortedLatenciesMs:
    """A histogram seen as a sorted list of latencies in milliseconds: len() and [i] are all that percentiles need."""

    def __init__(self, histogram: LatencyHistogram) -> None:
        self.histogram = histogram

    def __len__(self) -> int:
        return len(self.histogram)

    def __getitem__(self, position: int) -> float:
        if not isinstance(position, int):
            raise TypeError("a histogram's latencies are read one rank at a time")
        if position < 0:
            position += len(self)
        return self.histogram.at_rank(position + 1) * 1000

    def mean(self) -> float:
        return self.histogram.mean_s * 1000


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    if size <= len(array):
        return array
    bigger = np.zeros(max(size, 2 * len(array)), array.dtype)
    bigger[: len(array)] = array
    return bigger


class Aggregate:
    """Every finished request counted into time bins and histograms, never kept one by one; memory stays flat.

    len() is the number of requests finished. metrics.summarize, the metrics over
    time and live's dashboard take an Aggregate wherever they take a list of samples.
    """

    def __init__(self, bin_s: float = BIN_S) -> None:
        self.bin_s = bin_s
        self.sent = np.zeros(64, np.int64)  # finished requests by the bin they were sent in
        self.finished = np.zeros(64, np.int64)  # by the bin they finished in
        self.failed = np.zeros(64, np.int64)  # errors and answers other than 2xx, by the bin they were sent in
        self.latency_sum_s = np.zeros(64)  # by send bin, for latency over time
        self.latency_max_s = np.zeros(64)
        self.latency = LatencyHistogram()  # from the actual send
        self.latency_from_intended = LatencyHistogram()
        self.send_lag = LatencyHistogram()  # actual send minus intended: how well an open loop held its schedule
        self.error_kinds: Counter[str] = Counter()  # like metrics.error_kinds: transport errors by kind, other answers "status N"
        self.errors = 0  # transport errors only, like LoadResult.errors for samples
        self.first_start = math.inf
        self.last_end = 0.0

    def __len__(self) -> int:
        return len(self.latency)

    def __iter__(self) -> NoReturn:
        raise TypeError(
            "this run was recorded in aggregate (counts per time bin and a latency histogram), not one sample per"
            " request: use metrics.summarize, metrics.throughput_over_time and metrics.in_flight_over_time, or"
            " start the run with record='samples'"
        )

    def __bool__(self) -> bool:
        return len(self) > 0

    @property
    def bins(self) -> int:
        """How many bins hold data."""
        used = np.flatnonzero(self.sent | self.finished)
        return int(used[-1]) + 1 if len(used) else 0

    def add(self, rows: np.ndarray, error_names: Sequence[str | None]) -> None:
        """Fold a frame's rows (a numpy array of wire.row_dtype()) in; error_names turns the error codes into kinds."""
        if not len(rows):
            return
        start, end, intended = rows["start"], rows["end"], rows["intended"]
        latency = end - start
        start_bins = np.maximum(start / self.bin_s, 0).astype(np.int64)
        end_bins = np.maximum(end / self.bin_s, 0).astype(np.int64)
        size = int(max(start_bins.max(), end_bins.max())) + 1
        self.sent, self.finished, self.failed, self.latency_sum_s, self.latency_max_s = (
            _grown(array, size)
            for array in (self.sent, self.finished, self.failed, self.latency_sum_s, self.latency_max_s)
        )
        codes = rows["error"].astype(np.int64)
        status = rows["status"].astype(np.int64)
        not_ok = (codes != wire.NO_ERROR) | (status < 200) | (status >= 300)
        np.add.at(self.sent, start_bins, 1)
        np.add.at(self.finished, end_bins, 1)
        np.add.at(self.failed, start_bins[not_ok], 1)
        np.add.at(self.latency_sum_s, start_bins, latency)
        np.maximum.at(self.latency_max_s, start_bins, latency)
        batch = self.latency.record(latency)
        lag = np.maximum(start - intended, 0.0)
        if lag.any():
            self.latency_from_intended.record(end - intended)
            self.send_lag.record(lag)
        else:  # a closed loop sends when it means to: the same latencies, and no lag
            self.latency_from_intended.record(latency, batch)
            self.send_lag.record(lag, self.send_lag.record_zeros_batch(len(lag)))
        for code, count in zip(*np.unique(codes[codes != wire.NO_ERROR], return_counts=True)):
            self.error_kinds[error_names[code]] += int(count)
            self.errors += int(count)
        answered_badly = (codes == wire.NO_ERROR) & not_ok
        for value, count in zip(*np.unique(status[answered_badly], return_counts=True)):
            self.error_kinds[f"status {value}"] += int(count)
        self.first_start = min(self.first_start, float(start.min()))
        self.last_end = max(self.last_end, float(end.max()))

    def copy(self) -> "Aggregate":
        twin = Aggregate(self.bin_s)
        for name in ("sent", "finished", "failed", "latency_sum_s", "latency_max_s"):
            setattr(twin, name, getattr(self, name).copy())
        for name in ("latency", "latency_from_intended", "send_lag"):
            setattr(twin, name, getattr(self, name).copy())
        twin.error_kinds = Counter(self.error_kinds)
        twin.errors, twin.first_start, twin.last_end = self.errors, self.first_start, self.last_end
        return twin

    def histogram(self, measured_from: str = "send") -> LatencyHistogram:
        """The latencies measured from the actual send ("send") or from the intended one ("intended")."""
        return self.latency if measured_from == "send" else self.latency_from_intended

    # --- Over time, for metrics and the dashboard ------------------------------------------------------

    def _regrouped(self, counts: np.ndarray, bin_s: float, until_s: float) -> np.ndarray:
        bins = max(1, math.ceil(until_s / bin_s))
        used = self.bins
        targets = np.minimum((np.arange(used) * self.bin_s / bin_s + 1e-9).astype(np.int64), bins - 1)
        return np.bincount(targets, weights=counts[:used], minlength=bins)[:bins]

    def completions_per_bin(self, bin_s: float, until_s: float) -> np.ndarray:
        """Requests finished in each bin of `bin_s` from 0 to `until_s` (exact when bin_s is a multiple of BIN_S)."""
        return self._regrouped(self.finished, bin_s, until_s)

    def failures_per_bin(self, bin_s: float, until_s: float) -> np.ndarray:
        """Requests sent in each bin that failed or were answered other than 2xx."""
        return self._regrouped(self.failed, bin_s, until_s)

    def latency_per_bin(self, bin_s: float, until_s: float) -> tuple[np.ndarray, np.ndarray]:
        """(mean, max) latency in seconds of the requests sent in each bin; NaN where none was sent."""
        sent = self._regrouped(self.sent, bin_s, until_s)
        total = self._regrouped(self.latency_sum_s, bin_s, until_s)
        bins = len(sent)
        used = self.bins
        targets = np.minimum((np.arange(used) * self.bin_s / bin_s + 1e-9).astype(np.int64), bins - 1)
        worst = np.full(bins, np.nan)
        np.fmax.at(worst, targets, np.where(self.sent[:used] > 0, self.latency_max_s[:used], np.nan))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(sent > 0, total / sent, np.nan), worst

    def in_flight_at(self, times: Sequence[float] | np.ndarray) -> np.ndarray:
        """Requests sent and not yet finished at each time (exact at multiples of BIN_S; taken at the nearest one)."""
        used = self.bins
        started = np.concatenate(([0], np.cumsum(self.sent[:used])))
        ended = np.concatenate(([0], np.cumsum(self.finished[:used])))
        edges = np.clip(np.rint(np.asarray(times) / self.bin_s).astype(np.int64), 0, used)
        return started[edges] - ended[edges]

    @classmethod
    def of_samples(cls, samples: Sequence[Any], bin_s: float = BIN_S) -> "Aggregate":
        """The aggregate of a list of load.Sample: the same run seen both ways, to compare them."""
        rows = np.zeros(len(samples), wire.row_dtype())
        names: list[str | None] = [None]
        for i, sample in enumerate(samples):
            code = wire.NO_ERROR
            if sample.error:
                if sample.error not in names:
                    names.append(sample.error)
                code = names.index(sample.error)
            intended = sample.start if sample.intended is None else sample.intended
            rows[i] = tuple(
                {"intended": intended, "start": sample.start, "end": sample.end, "status": sample.status,
                 "bytes": sample.bytes, "error": code, "user": sample.user, "connection": sample.connection}[name]
                for name in wire.FIELDS
            )
        aggregate = cls(bin_s)
        aggregate.add(rows, names)
        return aggregate
