"""Lesson 15's model, on plain numbers.

Lesson 15's model: the residual life's mean and quantiles, the quantile's noise, Little's count, the pool's rate.
"""

import random

import pytest

from iolab.lessons.service import model


def test_one_block_every_period_gives_the_textbook_figures():
    blocks = [0.05] * 10  # b = 50 ms every Δ = 200 ms, over 2 s
    assert model.residual_mean(blocks, 2.0) == pytest.approx(0.05**2 / (2 * 0.2))
    assert model.residual_quantile(blocks, 2.0, 0.99) == pytest.approx(0.05 - 0.2 / 100, abs=1e-9)
    assert model.residual_quantile(blocks, 2.0, 0.5) == 0.0  # the loop is free 3/4 of the time
    assert model.residual_quantile(blocks, 2.0, 1.0) == 0.05


def test_the_residual_matches_random_moments():
    rng = random.Random(1)
    moments = [rng.uniform(0, 2.0) for _ in range(200_000)]
    late = [max(0.0, 0.05 - (t % 0.2)) for t in moments]  # each block starts at a multiple of 0.2 s
    assert sum(late) / len(late) == pytest.approx(model.residual_mean([0.05] * 10, 2.0), rel=0.02)
    assert model.percentile(late, 0.99) == pytest.approx(model.residual_quantile([0.05] * 10, 2.0, 0.99), abs=0.001)


def test_the_quantile_levels_narrow_with_more_samples():
    wide, narrow = model.quantile_levels(0.99, 100), model.quantile_levels(0.99, 10_000)
    assert wide[0] < narrow[0] < 0.99 < narrow[1] < wide[1] <= 1.0


def test_little_counts_what_was_in_flight():
    calls = [(k / 100, k / 100 + 0.5) for k in range(150)]  # 100 a second of 0.5 s
    assert model.in_flight_at(calls, 1.495) == 50
    assert model.pool_rate(4, 0.05) == 80 and model.pool_rate(0, 0.05) == 0
