"""Percentile spectra, read from sorted latencies.

The percentiles HdrHistogram prints: 50, 75, 87.5, ... halving the rest each step.
"""

import math

from iolab import metrics

# 1/(1-p) from 2 to 100,000: 50%, 90%, 99%, 99.9% ... equally spaced on a log axis.
SPECTRUM = tuple(1 - 0.5 ** (k / 4) for k in range(4, 4 * 17 + 1))


def spectrum(sorted_values, fractions=SPECTRUM):
    """[(fraction, value)] for every fraction whose nearest rank the data can tell apart from the maximum's."""
    count = len(sorted_values)
    points = []
    for fraction in fractions:
        if count and (1 - fraction) * count < 0.5:
            break  # beyond this the percentile is the maximum; more points would only repeat it
        points.append((fraction, metrics.percentile(sorted_values, fraction)))
    if count:
        points.append((1 - 0.5 / count, sorted_values[-1]))  # the maximum, drawn where its rank puts it
    return points


def jump_fraction(sorted_values, threshold):
    """The share of values at or above `threshold`: where on the spectrum a client's latency jumps."""
    if not sorted_values:
        return math.nan
    return sum(1 for value in sorted_values if value >= threshold) / len(sorted_values)


def window_p99s(points, duration_s, windows):
    """The p99 (ms) of each of `windows` equal stretches of a run, from [(intended send s, latency ms)]."""
    width = duration_s / windows
    found = []
    for index in range(windows):
        inside = sorted(ms for sent, ms in points if index * width <= sent < (index + 1) * width)
        found.append(metrics.percentile(inside, 0.99))
    return found
