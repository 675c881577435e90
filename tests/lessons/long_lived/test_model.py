"""Lesson 12's predictions on plain numbers."""

import math

import pytest

from iolab.lessons.long_lived import model


def test_memory_fit_holds_out_the_last_point_and_predicts_it():
    ns = [250, 500, 750, 1000]
    rss = [30e6 + n * 14 * 1024 for n in ns]
    fit = model.memory(ns, rss)
    assert fit["kib_per_connection"] == pytest.approx(14)
    assert fit["predicted_last_bytes"] == pytest.approx(rss[-1])
    # A perfect line leaves no residual: the interval is one page either side, the least RSS can tell apart.
    assert fit["last_high_bytes"] - rss[-1] == rss[-1] - fit["last_low_bytes"] == model.PAGE_BYTES


def test_the_prediction_interval_widens_with_the_residuals():
    _, narrow = model.prediction_interval([1, 2, 3, 4], [1.0, 2.0, 3.0, 4.0], 5)
    _, wide = model.prediction_interval([1, 2, 3, 4], [1.0, 2.2, 2.8, 4.0], 5)
    assert narrow == pytest.approx(0) and wide > 0.5


def test_memory_fit_needs_four_points():
    with pytest.raises(ValueError, match="4 points"):
        model.memory([1, 2, 3], [1, 2, 3])


def test_n_max_subtracts_the_fixed_cost():
    assert model.n_max(2 * 2**30, 14 * 1024, 40e6) == math.floor((2 * 2**30 - 40e6) / (14 * 1024))
    assert model.n_max(10e6, 1024, 40e6) == 0


def test_last_delivery_is_the_bottleneck_on_two_cpus_and_the_sum_on_one():
    assert model.last_delivery_s(1000, 20e-6, 10e-6, cpus=2) == pytest.approx(0.020)
    assert model.last_delivery_s(1000, 20e-6, 10e-6, cpus=1) == pytest.approx(0.030)


def test_fanout_bounds_widen_by_the_spread_of_the_lasts():
    repeats = [{"last_s": 0.030, "server_cpu_s": 0.020, "client_cpu_s": 0.010},
               {"last_s": 0.033, "server_cpu_s": 0.022, "client_cpu_s": 0.010}]
    row = model.fanout(1000, repeats, cpus=1)
    assert row["predicted_last_ms"] == pytest.approx(31.0)
    assert row["low_ms"] < 30.0 < row["high_ms"]
    assert row["cpu_us_per_delivery"] == pytest.approx(21.0)
