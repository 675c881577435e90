"""Lesson 11's prediction on plain data.

Rounds of Z, the first round's overhead, and the calls answered within 2Z.
"""

import pytest

from iolab.lessons.client_side import model


def calls_in_rounds(n, P, T, overhead):
    """n calls, P at a time, each T + overhead on the wire; all sent at 0, as a program that starts them at once."""
    return [(0.0, (i // P + 1) * (T + overhead)) for i in range(n)]


def test_rounds_the_overhead_and_the_limit_read_back():
    row = model.predict("pool", 10, 0.2, calls_in_rounds(30, 10, 0.2, 0.01), work_s=0.05)
    assert row["rounds"] == 3 and row["answered_in_two_T"] == 10 and row["answered_in_T_and_work"] == 10
    assert row["overhead_ms"] == pytest.approx(10)
    assert row["measured_s"] == pytest.approx(0.63) and row["predicted_s"] == pytest.approx(0.63)
    assert row["low_s"] == pytest.approx(0.6) and row["high_s"] == pytest.approx(0.6 + 0.05 + 0.003)
    assert row["predicted_rps"] == pytest.approx(10 / 0.21)


def test_a_last_round_that_is_not_full_still_takes_T():
    row = model.predict("pool", 6, 0.2, calls_in_rounds(40, 6, 0.2, 0.0), work_s=0.0)
    assert row["rounds"] == 7 and row["measured_s"] == pytest.approx(1.4)
