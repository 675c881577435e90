"""Lesson 06's scaling curve: its quiet points up to the knee, fitted with the USL, and the noise's reach."""

import math
import statistics
from dataclasses import dataclass

from . import model, sweep, usl


@dataclass(frozen=True)
class Scaling:
    """The curve of sync workers on hello world, and what the USL fit of it says."""

    curve: list  # every point measured, a sweep.Cell each
    usable: list  # the points the fit may use: those other programs left alone, where at least three remain
    noise: float  # how far one sync worker's throughput moved between identical runs, as a share
    knee_workers: list  # the points fitted: up to the knee, where the cores fill
    knee_rps: list
    widened: bool  # fewer than three points before the knee, so the fit took the next ones too
    fit: usl.Fit
    peak_workers: int  # the best whole number of workers on the fitted curve
    peak_range: tuple  # the fewest and most that best number becomes when one point moves by the noise

    @property
    def peak_rps(self):
        return float(self.fit.predict(self.peak_workers))

    def describe(self, checked_rps):
        """Two lines: the fit, and its peak against the checking run, with the noise's reach."""
        fit = self.fit
        if math.isfinite(fit.peak_at):
            peak = f"w* = {fit.peak_at:.1f}"
        elif fit.sigma > 0:
            peak = f"no peak (κ = 0), and {self.peak_workers} workers come within 5% of the ceiling X(1) / σ"
        else:
            peak = "no peak and no ceiling (σ = κ = 0)"
        widened = ", widened to the three points a fit needs" if self.widened else ""
        low, high = self.peak_range
        left_out = [c.config.processes for c in self.curve if c not in self.usable]
        left = f"Left out of the fit, disturbed by other programs: {left_out}.\n" if left_out else ""
        return left + (f"Fitted on {self.knee_workers} workers (up to the knee{widened}). X(1) = {fit.lam:,.0f} req/s, "
                f"σ = {fit.sigma:.3f}, κ = {fit.kappa:.4f}; {peak}.\n"
                f"Best whole number of workers: {self.peak_workers}, predicted {self.peak_rps:,.0f} req/s. The checking "
                f"run gave {checked_rps:,.0f} ({checked_rps / self.peak_rps - 1:+.0%}). Identical runs moved one "
                f"worker's throughput by {self.noise:.0%}; moving one point that much moves the best number of "
                f"workers anywhere from {low} to {high}.")


def fit_curve(lab, workers, most=None):
    """Fit the USL to the sync-worker points `lab` measured at `workers`, as Gunther does: normalised to one worker,
    on the points up to the knee. A point other programs disturbed (even on its retries) would bend the fit: it is
    left out, if three points remain, one worker's among them."""
    curve = [lab.find(sweep.Config("sync", n), "hello") for n in workers]
    quiet = [c for c in curve if c.run.others_share <= model.DISTURBED_SHARE]
    usable = quiet if len({c.config.processes for c in quiet}) >= 3 and quiet[0].config.processes == 1 else curve
    alone = lab.find(sweep.Config("sync"), "hello")
    noise = (max(alone.tries) - min(alone.tries)) / statistics.median(alone.tries)
    knee_workers, knee_rps, widened = usl.before_saturation([c.config.processes for c in usable],
                                                            [c.rps for c in usable], noise=noise)
    fit = usl.normalised_fit(knee_workers, knee_rps)
    most = most or 2 * max(workers)
    return Scaling(curve, usable, noise, knee_workers, knee_rps, widened, fit, fit.peak_workers(most=most),
                   usl.peak_range(knee_workers, knee_rps, noise, most=most))
