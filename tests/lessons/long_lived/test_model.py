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
    # A perfect line leaves no residual: the interval is two heap steps either side, the least RSS can tell apart.
    assert fit["last_high_bytes"] - rss[-1] == rss[-1] - fit["last_low_bytes"] == 2 * model.HEAP_STEP_BYTES


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


def repeat(last_s, path_cpu_s, client_cpu_s=0.010, queued_s=0.0):
    return {"last_s": last_s, "server_cpu_s": path_cpu_s * 1.2, "path_cpu_s": path_cpu_s,
            "client_cpu_s": client_cpu_s, "queued_s": queued_s}


def test_each_repeat_is_predicted_from_its_own_delivery_path_and_judged_by_the_median_ratio():
    # On one CPU the last delivery waits for both sides' CPU: 20 + 10 ms, then 22 + 10 ms.
    row = model.fanout(1000, [repeat(0.030, 0.020), repeat(0.0336, 0.022), repeat(0.0315, 0.020)], cpus=1)
    assert row["ratios"] == pytest.approx([1.0, 1.05, 1.05])
    assert row["judged_repeat"] in (1, 2) and row["predicted_last_ms"] in (pytest.approx(32.0), pytest.approx(30.0))
    # The band: TOLERANCE widened by the nearest other repeat's distance (0), never by the server's other CPU.
    assert row["width"] == pytest.approx(model.TOLERANCE)
    assert row["low_ms"] == pytest.approx(row["predicted_last_ms"] * (1 - row["width"]))
    assert row["cpu_us_per_delivery"] == pytest.approx(24.0) and row["path_us_per_delivery"] == pytest.approx(20.0)
    assert not row["is_bound"]


def test_one_disturbed_repeat_does_not_widen_the_band_but_two_that_disagree_do():
    steady = model.fanout(1000, [repeat(0.030, 0.020), repeat(0.0303, 0.020), repeat(0.045, 0.020)], cpus=1)
    assert steady["judged_repeat"] == 1 and steady["noise"] == pytest.approx(0.01)
    scattered = model.fanout(1000, [repeat(0.024, 0.020), repeat(0.030, 0.020), repeat(0.036, 0.020)], cpus=1)
    assert scattered["noise"] == pytest.approx(0.2) and scattered["width"] == pytest.approx(model.TOLERANCE + 0.2)


def test_waits_for_each_other_on_one_cpu_do_not_widen_the_band_but_a_neighbours_do():
    quiet = model.fanout(1000, [repeat(0.030, 0.020, queued_s=0.025)] * 3, cpus=1)
    assert quiet["excess_wait_ms"] == 0.0  # 25 ms of waits, under the 30 ms the two sides owe each other
    busy = model.fanout(1000, [repeat(0.045, 0.020, queued_s=0.045)] * 3, cpus=1)
    assert busy["excess_wait_ms"] == pytest.approx(15.0)
    assert busy["high_ms"] == pytest.approx(30.0 * (1 + model.TOLERANCE) + 15.0)


def test_on_two_cpus_the_last_waits_for_the_slower_side_only():
    row = model.fanout(1000, [repeat(0.0205, 0.020, client_cpu_s=0.012)] * 3, cpus=2)
    assert row["predicted_last_ms"] == pytest.approx(20.0)
    assert row["low_ms"] < 20.5 < row["high_ms"]


def test_under_a_quota_a_short_burst_makes_the_band_a_bound_from_k_burst_to_k():
    row = model.fanout(1000, [repeat(0.022, 0.020)] * 3, cpus=1, burst_cpus=2)
    assert row["is_bound"]
    assert row["low_ms"] == pytest.approx(20.0 * (1 - model.TOLERANCE))
    assert row["predicted_last_ms"] == pytest.approx(30.0)


def test_a_first_delivery_that_holds_the_whole_loop_is_not_counted_twice():
    # 50 subscribers on one CPU: the client ran only once the server's 0.85 ms loop was done, so the first came at
    # 1.19 ms; then it read the other 49 (0.94 ms of its 0.96). Measured here: the last at 1.99 ms.
    r = {"first_s": 0.00119, "last_s": 0.00199, "path_cpu_s": 0.00085, "server_cpu_s": 0.001, "client_cpu_s": 0.00096}
    row = model.fanout(50, [r, r], cpus=1)
    assert row["predicted_last_ms"] == pytest.approx(1.19 + 0.96 * 49 / 50)
    assert row["low_ms"] <= 1.99 <= row["high_ms"]
    # Interleaved (the first at once), the bottleneck's work decides, as before.
    early = r | {"first_s": 0.00009, "last_s": 0.00184}
    assert model.fanout(50, [early, early], cpus=1)["predicted_last_ms"] == pytest.approx(0.85 + 0.96)
