"""The Universal Scalability Law (Gunther).

X(N) = λN / (1 + σ(N − 1) + κN(N − 1)), fitted by least squares with numpy.

λ is the throughput of one worker, σ (contention) the fraction of the work
that cannot overlap, so that workers queue for it, and κ (coherency) the cost
of every pair of workers keeping each other up to date, which makes
throughput fall again past a peak at N* = sqrt((1 − σ) / κ).
"""

import math
from dataclasses import dataclass

import numpy as np

STEP_TOLERANCE = 1e-12  # the refinement stops when a step moves σ and κ less than this
NEAR_CEILING = 0.95  # with no peak, the fewest workers that reach this share of the ceiling are "enough"
NEGLIGIBLE = 1e-10  # σ or κ below this is rounding, not contention or coherency: it is set to 0


def throughput(workers, lam, sigma, kappa):
    """X(N) for one N or an array of them."""
    n = np.asarray(workers, dtype=float)
    return lam * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


@dataclass(frozen=True)
class Fit:
    """A fitted curve: λ (requests per second of one worker), σ and κ, and where it peaks."""

    lam: float
    sigma: float
    kappa: float
    residual_rms: float  # root mean square of measured minus fitted, in the data's units

    @property
    def peak_at(self):
        """N* = sqrt((1 − σ) / κ), where the curve peaks; infinite when κ = 0 (it never turns down)."""
        if self.kappa <= 0:
            return math.inf
        return math.sqrt(max(0.0, 1 - self.sigma) / self.kappa)

    @property
    def ceiling_rps(self):
        """What the curve approaches when κ = 0: λ / σ (infinite when σ = 0 too: perfect scaling)."""
        return self.lam / self.sigma if self.sigma > 0 else math.inf

    def peak_workers(self, most=None):
        """The whole number of workers with the highest fitted X: N* rounded to its better neighbour, at least 1,
        and at most `most` (what a run may ask for) when given. With κ = 0 the curve never peaks: then it is the
        fewest workers within NEAR_CEILING of the ceiling λ / σ (none with σ = 0 either: as many as allowed)."""
        if math.isinf(self.peak_at):
            best = math.inf
            if self.sigma > 0:  # X(N) >= q λ / σ  <=>  N >= q (1 − σ) / ((1 − q) σ)
                best = max(1, math.ceil(NEAR_CEILING * (1 - self.sigma) / ((1 - NEAR_CEILING) * self.sigma) - 1e-9))
        else:
            low = max(1, math.floor(self.peak_at))
            best = max((low, low + 1), key=lambda n: float(self.predict(n)))
        return best if most is None else min(best, most)

    def predict(self, workers):
        """The fitted X at N workers (a float for one N, an array for several)."""
        result = throughput(workers, self.lam, self.sigma, self.kappa)
        return float(result) if np.ndim(result) == 0 else result


def _best_lambda(n, x, sigma, kappa, fixed=None):
    """For fixed σ and κ, the λ that minimizes the squared error is a closed form (X is linear in λ); `fixed`, when
    given, is λ itself (the measured one-worker throughput, when the fit is normalised to it)."""
    if fixed is not None:
        return float(fixed)
    shape = throughput(n, 1.0, sigma, kappa)
    return float(x @ shape / (shape @ shape))


def _error(n, x, sigma, kappa, fixed=None):
    lam = _best_lambda(n, x, sigma, kappa, fixed)
    return x - throughput(n, lam, sigma, kappa)


def _clip(sigma, kappa):
    return min(max(sigma, 0.0), 1.0), max(kappa, 0.0)


def _linear_start(n, x):
    """A first guess from the straight-line form N / X = (1 + σ(N − 1) + κN(N − 1)) / λ, weighted to act like X's errors."""
    weights = x**2 / n  # d(N/X) = −N/X² dX: dividing each row's error by N/X² makes it an error in X
    design = np.column_stack([np.ones_like(n), n - 1, n * (n - 1)]) * weights[:, None]
    (a, b, c), *_ = np.linalg.lstsq(design, n / x * weights, rcond=None)
    if a <= 0:
        return 0.0, 0.0
    return _clip(b / a, c / a)


def fit(workers, rps, iterations=200, lam=None):
    """Least-squares fit of λ, σ and κ to measured (N, X), with 0 <= σ <= 1 and κ >= 0.

    Starts from the straight-line fit of N / X, then refines σ and κ on the
    errors in X itself (λ is solved exactly at every step, or held at `lam`) by
    Levenberg-Marquardt steps kept inside the bounds.
    """
    n = np.asarray(workers, dtype=float)
    x = np.asarray(rps, dtype=float)
    if n.shape != x.shape or n.ndim != 1:
        raise ValueError("workers and rps must be two lists of the same length")
    if len(n) < 3 or len(set(n.tolist())) < 3:
        raise ValueError(f"a fit of three parameters needs at least three different worker counts, got {sorted(set(n.tolist()))}")
    if (n < 1).any() or not np.isfinite(x).all() or (x <= 0).any():
        raise ValueError("worker counts must be at least 1 and throughputs positive and finite")
    sigma, kappa = _linear_start(n, x)
    damping = 1e-3
    cost = float(_error(n, x, sigma, kappa, lam) @ _error(n, x, sigma, kappa, lam))
    for _ in range(iterations):
        residual = _error(n, x, sigma, kappa, lam)
        # The Jacobian of the errors by forward differences, one column per parameter; steps scaled to each.
        columns = []
        for d_sigma, d_kappa in ((1e-7 + 1e-6 * sigma, 0.0), (0.0, 1e-9 + 1e-6 * kappa)):
            step = d_sigma or d_kappa
            columns.append((_error(n, x, sigma + d_sigma, kappa + d_kappa, lam) - residual) / step)
        jacobian = np.column_stack(columns)
        normal = jacobian.T @ jacobian
        gradient = jacobian.T @ residual
        while True:
            try:
                step = -np.linalg.solve(normal + damping * np.diag(np.diag(normal) + 1e-30), gradient)
            except np.linalg.LinAlgError:
                step = np.zeros(2)
            trial = _clip(sigma + step[0], kappa + step[1])
            trial_error = _error(n, x, *trial, lam)
            trial_cost = float(trial_error @ trial_error)
            if trial_cost <= cost or damping > 1e12:
                break
            damping *= 10
        moved = abs(trial[0] - sigma) + abs(trial[1] - kappa)
        if trial_cost <= cost:
            sigma, kappa, cost = trial[0], trial[1], trial_cost
            damping = max(damping / 10, 1e-12)
        if moved < STEP_TOLERANCE or damping > 1e12:
            break
    sigma, kappa = (0.0 if value < NEGLIGIBLE else value for value in (sigma, kappa))
    lam = _best_lambda(n, x, sigma, kappa, lam)
    cost = float(_error(n, x, sigma, kappa, lam) @ _error(n, x, sigma, kappa, lam))
    return Fit(lam=lam, sigma=float(sigma), kappa=float(kappa), residual_rms=math.sqrt(cost / len(n)))


def normalised_fit(workers, rps):
    """The fit as Gunther makes it: normalised to one worker, so λ is the measured X(1) and σ and κ are fitted to
    the relative capacity X(N) / X(1). `workers` must include 1."""
    alone = [x for n, x in zip(workers, rps) if n == 1]
    if not alone:
        raise ValueError(f"a fit normalised to one worker needs a run with one worker, got {sorted(set(workers))}")
    return fit(workers, rps, lam=alone[0])


def before_saturation(workers, rps, noise=0.0, at_least=3):
    """The points up to the knee: in rising N, up to and including the first whose throughput does not beat the
    best before it by more than `noise` (a share). Past the knee the cores are full, and X only says how much
    the machine gives, not how the workers scale; Gunther fits the points that show the scaling. At least
    `at_least` points are kept (a fit of σ and κ needs them), and the second value says whether more were kept
    than the knee alone allowed."""
    points = sorted(zip(workers, rps))
    kept, best = [], 0.0
    for n, x in points:
        kept.append((n, x))
        if best and x <= best * (1 + noise):
            break
        best = max(best, x)
    widened = len(kept) < at_least
    kept = points[: max(len(kept), at_least)]
    return [n for n, _ in kept], [x for _, x in kept], widened


def peak_range(workers, rps, noise, most=None):
    """The best whole number of workers the normalised fit gives when each point moves by ±`noise` (a share) in
    turn: (fewest, most). A wide range says the peak is the noise's choice, not the curve's."""
    found = {normalised_fit(workers, rps).peak_workers(most)}
    for index in range(len(rps)):
        for sign in (-1, 1):
            moved = list(rps)
            moved[index] *= 1 + sign * noise
            try:
                found.add(normalised_fit(workers, moved).peak_workers(most))
            except ValueError:
                continue
    return min(found), max(found)
