"""Nearest-rank percentiles of sorted values.

One function for measured runs (metrics) and for the laws' simulations (theory):
a law and a measurement read the same rank. Standard library only, so the laws
depend on nothing that meters processes.
"""

import math


def percentile(sorted_values, fraction):
    """Nearest-rank percentile of an already sorted list: the smallest value with `fraction` of the data at or below it."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]
