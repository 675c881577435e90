"""Nearest-rank percentiles of sorted values.

One function for measured runs (metrics) and for the laws' simulations (theory):
a law and a measurement read the same rank. Standard library only, so the laws
depend on nothing that meters processes.
"""

import math
from typing import Protocol


class Ranked(Protocol):
    """Values read by rank, smallest first: a sorted list, or a histogram seen as one."""

    def __len__(self) -> int: ...

    def __getitem__(self, rank: int, /) -> float: ...


def percentile(sorted_values: Ranked, fraction: float) -> float:
    """Nearest-rank percentile of an already sorted list: the smallest value with `fraction` of the data at or below it."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]
