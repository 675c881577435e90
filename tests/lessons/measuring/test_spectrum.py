"""Lesson 09's percentile spectra and window p99s, against hand-computed cases."""

from iolab.lessons.measuring import spectrum


def test_the_spectrum_halves_the_rest_each_step_and_ends_at_the_maximum():
    values = list(range(1, 1001))  # 1..1000 ms
    points = spectrum.spectrum(values)
    fractions = [f for f, _ in points]
    assert fractions[0] == 0.5 and points[0][1] == 500
    assert fractions == sorted(fractions)
    # 99% is one of the points (k = 4 × log2(100) is not whole: the nearest below and above are there) ...
    assert any(abs(f - 0.99) < 0.003 for f in fractions)
    # ... and the last is the maximum, drawn at its rank.
    assert points[-1] == (1 - 0.5 / 1000, 1000)
    assert all(value <= 1000 for _, value in points)


def test_the_jump_share_and_window_p99s_by_hand():
    assert spectrum.jump_fraction([1, 1, 1, 500, 1000], 500) == 0.4
    # 100 requests a second; three slow ones in the second second are its slowest 3%, so its p99.
    points = [(t / 100, 1.0) for t in range(400)] + [(1.5, 900.0)] * 3
    assert spectrum.window_p99s(points, 4, 4) == [1.0, 900.0, 1.0, 1.0]
    # One slow request among 101 is above the p99 (its rank is 101, the p99's is 100).
    assert spectrum.window_p99s([(t / 100, 1.0) for t in range(100)] + [(0.5, 900.0)], 1, 1) == [1.0]
