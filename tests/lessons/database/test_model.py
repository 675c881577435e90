"""Lesson 13's theory: the pool as a tier of the bottleneck law.

The bottleneck law with the pool as a tier, Little on the pool, the wait past P.
"""

import pytest

from iolab.lessons.database import model


def test_the_default_executor_counts_the_machines_cpus():
    assert model.executor_threads(2) == 6 and model.executor_threads(64) == 32 and model.executor_threads(None) >= 5


@pytest.mark.parametrize("how, expected, bottleneck", [
    ("blocking", 10.0, "the event loop"), ("executor", 60.0, "the executor's threads"), ("pool", 100.0, "the pool"),
])
def test_each_way_is_predicted_by_its_narrowest_tier(how, expected, bottleneck):
    X, name = model.predict(how, users=30, T_s=0.1, pool=10, threads=6)
    assert pytest.approx(expected) == X and name == bottleneck


def test_the_cpu_is_a_tier_once_measured():
    X, name = model.predict("pool", users=30, T_s=0.1, pool=10, cpu_s=0.002)
    assert (X, name) == (100.0, "the pool")
    X, name = model.predict("pool", users=30, T_s=0.1, pool=100, cpu_s=0.005)
    assert pytest.approx(200.0) == X and name == "the front end's CPU"


def test_past_p_the_wait_is_a_closed_systems():
    assert model.pool_wait_s(5, 10, 0.05) == 0.0
    # Far past P the pool runs flat out: R = N·T / P, so the wait is (N / P − 1)·T.
    assert model.pool_wait_s(100, 10, 0.05) == pytest.approx((100 / 10 - 1) * 0.05, rel=0.01)


def test_held_across_and_the_other_laws():
    assert model.held_across_rps(10, 0.02, 0.08) == pytest.approx(100.0)
    assert model.held_across_rps(10, 0.02, 0.08, "early") == pytest.approx(500.0)
    assert model.rows_rps(5000, 2e-6) == pytest.approx(100.0)
    assert model.one_by_one_s(200, 0.0005) == pytest.approx(0.1)
    assert model.most_rps(25, 10, 0.1) == pytest.approx(25 / 0.3)
    assert model.pool_in_use(5000, 1.0) == 5.0
