"""The Universal Scalability Law fit of lesson 06 (iolab.lessons.workers.usl), on data sets whose answers are known."""

import math

import numpy as np
import pytest

from iolab.lessons.workers import usl

# The test data of the usl package for R (tests/coef.R, from Gunther's Guerrilla Capacity Planning): throughput
# relative to one worker, to four digits. It is X(N) = N / (1 + 0.02 (N - 1) + 0.02 N (N - 1)) exactly, as
# X(2) = 2 / 1.06 = 1.8868, X(4) = 4 / 1.3 = 3.0769, ... show; its peak is N* = sqrt(0.98 / 0.02) = 7.
R_PACKAGE_LOAD = [1, 2, 4, 6, 8, 10]
R_PACKAGE_TPUT = [1, 1.8868, 3.0769, 3.5294, 3.5398, 3.3557]
FOUR_DIGITS = 2e-4  # what rounding the published throughputs to four digits leaves in σ, κ and λ


def test_the_r_package_data_gives_its_known_coefficients_and_peak():
    fit = usl.fit(R_PACKAGE_LOAD, R_PACKAGE_TPUT)
    assert fit.sigma == pytest.approx(0.02, abs=FOUR_DIGITS)
    assert fit.kappa == pytest.approx(0.02, abs=FOUR_DIGITS)
    assert fit.lam == pytest.approx(1.0, abs=FOUR_DIGITS)
    assert fit.peak_at == pytest.approx(7.0, abs=0.01)
    assert fit.peak_workers() == 7
    assert fit.predict(7) == pytest.approx(7 / (1 + 0.02 * 6 + 0.02 * 42), abs=FOUR_DIGITS)


def test_exact_data_is_recovered_exactly():
    workers = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
    fit = usl.fit(workers, usl.throughput(workers, 1000, 0.05, 0.002))
    assert (fit.lam, fit.sigma, fit.kappa) == pytest.approx((1000, 0.05, 0.002), rel=1e-6)
    assert fit.residual_rms < 1e-6
    assert fit.peak_at == pytest.approx(math.sqrt(0.95 / 0.002), rel=1e-6)


def test_noisy_data_gives_nearby_coefficients_and_peak():
    workers = np.array([1, 2, 3, 4, 6, 8, 12, 16, 24, 32])
    noise = 1 + 0.02 * np.random.default_rng(6).standard_normal(len(workers))
    fit = usl.fit(workers, usl.throughput(workers, 1000, 0.05, 0.002) * noise)
    assert fit.sigma == pytest.approx(0.05, abs=0.01)
    assert fit.kappa == pytest.approx(0.002, rel=0.1)
    assert fit.peak_at == pytest.approx(21.8, rel=0.1)


def test_linear_scaling_has_no_contention_no_coherency_and_no_peak():
    fit = usl.fit([1, 2, 4, 8], [100, 200, 400, 800])
    assert (fit.sigma, fit.kappa) == (0.0, 0.0)
    assert math.isinf(fit.peak_at) and math.isinf(fit.ceiling_rps)
    assert fit.peak_workers(most=16) == 16  # no peak: as many as a run may ask for


def test_a_flat_curve_is_all_contention_and_one_worker_is_enough():
    fit = usl.fit([1, 2, 4, 8], [100, 100, 100, 100])
    assert fit.sigma == pytest.approx(1.0, abs=1e-9)
    assert fit.kappa == 0.0
    assert fit.ceiling_rps == pytest.approx(100)
    assert fit.peak_workers(most=16) == 1


def test_with_no_peak_the_fewest_workers_near_the_ceiling_are_enough():
    fit = usl.Fit(lam=100, sigma=0.5, kappa=0.0, residual_rms=0.0)
    enough = fit.peak_workers(most=64)  # X(N) = 100 N / (1 + (N - 1) / 2) reaches 95% of 200 at N = 19
    assert enough == 19
    assert fit.predict(enough) >= usl.NEAR_CEILING * fit.ceiling_rps > fit.predict(enough - 1)


def test_a_curve_falling_from_the_start_peaks_at_one_worker():
    fit = usl.fit([1, 2, 4, 8], [100, 100, 95, 90])
    assert fit.kappa > 0 and fit.peak_at < 1.5
    assert fit.peak_workers() == 1


def test_coefficients_stay_in_their_ranges_for_data_that_would_push_them_out():
    # Superlinear data would want σ < 0; the fit keeps σ >= 0 and κ >= 0.
    fit = usl.fit([1, 2, 3, 4], [100, 210, 330, 460])
    assert fit.sigma >= 0 and fit.kappa >= 0


@pytest.mark.parametrize(
    "workers, rps, words",
    [
        ([1, 2], [1, 2], "at least three different"),
        ([1, 1, 2], [1, 1, 2], "at least three different"),
        ([1, 2, 3], [1, 2], "same length"),
        ([0, 1, 2], [1, 2, 3], "at least 1"),
        ([1, 2, 3], [1, -2, 3], "positive"),
        ([1, 2, 3], [1, float("nan"), 3], "positive and finite"),
    ],
)
def test_bad_data_is_refused_with_the_reason(workers, rps, words):
    with pytest.raises(ValueError, match=words):
        usl.fit(workers, rps)


def test_the_normalised_fit_keeps_one_workers_throughput_as_lambda():
    workers = [1, 2, 4, 6, 8]
    rps = list(usl.throughput(workers, 1000, 0.05, 0.01))
    rps[0] *= 1.03  # one worker's run came out 3% high: λ follows it, and σ, κ absorb the rest
    fit = usl.normalised_fit(workers, rps)
    assert fit.lam == rps[0]
    assert fit.predict(1) == pytest.approx(rps[0])
    with pytest.raises(ValueError, match="needs a run with one worker"):
        usl.normalised_fit([2, 4, 8], [1, 2, 3])


def test_points_before_saturation_stop_at_the_knee():
    # Two cores: 1 -> 2 workers doubles, 3 adds a little, 4 adds nothing beyond 3% noise, 6 falls.
    workers, rps = [1, 2, 3, 4, 6], [1000, 1900, 2000, 2030, 1900]
    assert usl.before_saturation(workers, rps, noise=0.03) == ([1, 2, 3, 4], [1000, 1900, 2000, 2030], False)
    assert usl.before_saturation(workers, rps, noise=0.10) == ([1, 2, 3], [1000, 1900, 2000], False)
    # One core: nothing rises, and the fit still gets the three points it needs, said so.
    assert usl.before_saturation(workers, [1000, 990, 1000, 980, 970], noise=0.03) == (
        [1, 2, 3], [1000, 990, 1000], True)


def test_the_peak_range_is_wide_where_noise_decides_it():
    exact = list(usl.throughput([1, 2, 3, 4], 1000, 0.05, 0.01))
    low, high = usl.peak_range([1, 2, 3, 4], exact, noise=0.0, most=32)
    assert low == high == usl.normalised_fit([1, 2, 3, 4], exact).peak_workers(32)
    low, high = usl.peak_range([1, 2, 3, 4], exact, noise=0.10, most=32)
    assert low < high
