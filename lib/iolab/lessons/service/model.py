"""Lesson 15's predictions, from the run's own measurements.

The lag a blocker leaves (residual life), the answers a shutdown cuts, the pool's rate.
Every figure is built from what the same run measured: the blocks' own lengths, the window's length, the samples'
count and spread.
"""

import math

Z = 3.0  # noise widths are three standard errors: a claim that fails by chance about 1 run in 400


def residual_mean(blocks_s, window_s):
    """The mean lateness of a moment drawn at random in the window: a block of length b covers b/W of it, and a
    moment inside it waits b/2 on average, so the mean is Σ b² / (2W) (b²/(2Δ) for one block every Δ)."""
    return sum(b * b for b in blocks_s) / (2 * window_s)


def residual_exceeds(blocks_s, window_s, x):
    """P(lateness > x) for a moment drawn at random: it must fall in the first b − x of a block longer than x."""
    return sum(max(0.0, b - x) for b in blocks_s) / window_s


def residual_quantile(blocks_s, window_s, q):
    """The lateness x with P(lateness > x) = 1 − q (0 where the blocks cover less than 1 − q of the window),
    found by bisection: P(lateness > x) falls as x grows."""
    if q >= 1:
        return max(blocks_s, default=0.0)
    if residual_exceeds(blocks_s, window_s, 0.0) <= 1 - q:
        return 0.0
    low, high = 0.0, max(blocks_s)
    for _ in range(60):
        middle = (low + high) / 2
        if residual_exceeds(blocks_s, window_s, middle) > 1 - q:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def quantile_levels(q, n):
    """The levels an empirical q-quantile of n samples lies between, Z standard errors either side: its rank is
    binomial, with spread √(q(1 − q)/n)."""
    width = Z * math.sqrt(q * (1 - q) / n)
    return max(0.0, q - width), min(1.0, q + width)


def mean_and_error(values):
    """The mean of `values` and its standard error (their standard deviation over √n)."""
    n = len(values)
    mean = sum(values) / n
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / max(1, n - 1))
    return mean, spread / math.sqrt(n)


def percentile(values, q):
    """The q-quantile of `values`: the value at rank ⌈q·n⌉."""
    ranked = sorted(values)
    return ranked[min(len(ranked) - 1, max(0, math.ceil(q * len(ranked)) - 1))]


def in_flight_at(sent_and_ended, moment):
    """How many requests were sent before `moment` and not answered by it: the L of Little's law, counted."""
    return sum(1 for sent, ended in sent_and_ended if sent < moment <= ended)


def pool_rate(slots, hold_s):
    """The bottleneck law for a pool: each of its slots serves one request per hold, so X = slots / hold."""
    return slots / hold_s if slots else 0.0
