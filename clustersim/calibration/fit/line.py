"""One alpha-beta line ``t = alpha + S / algbw``, fitted on relative error with bounds and 95% intervals.

Owns the weighted, bounded least-squares line that every regime of a collective
fit is (:func:`fit_line`) and its intervals: from the covariance of the weighted
fit with Student-t quantiles, or from a residual bootstrap (:func:`bootstrap_ci`).
Points are weighted by ``1/t`` so each counts by its *relative* error (an
unweighted fit would be decided by the 4 GiB points alone); ``alpha >= 0`` and
``algbw > 0``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats

from clustersim.errors import ClusterSimError

#: Largest algorithm bandwidth a fit may report (1 PB/s): a regime whose time
#: does not grow with size (pure latency) gets this bound instead of infinity.
MAX_ALGBW = 1e15
MIN_SLOPE = 1.0 / MAX_ALGBW


@dataclass
class LineFit:
    """``t = alpha_s + slope * S`` fitted on relative error, with 95% intervals.

    Attributes are in seconds and seconds/byte; ``algbw`` is bytes/s.
    """

    alpha_s: float
    slope: float
    alpha_ci: tuple[float, float]
    slope_ci: tuple[float, float]
    rss: float
    points: int
    size_lo: float
    size_hi: float
    bridge: bool = False  # a chord over a gap between two fitted regimes (no measurement of its own)

    @property
    def algbw(self) -> float:
        """Algorithm bandwidth in bytes/s (``1 / slope``)."""
        return 1.0 / self.slope

    @property
    def algbw_ci(self) -> tuple[float, float]:
        """95% interval of the bandwidth, bytes/s (from the slope's interval)."""
        lo, hi = self.slope_ci
        return (1.0 / hi, 1.0 / max(lo, MIN_SLOPE))

    def predict(self, S: np.ndarray | float) -> np.ndarray | float:
        """Time in seconds at size ``S`` bytes."""
        return self.alpha_s + self.slope * np.asarray(S, dtype=float)


def _wls_bounded(S: np.ndarray, t: np.ndarray) -> tuple[float, float, float]:
    """Minimise sum(((t - a - b S) / t)^2) with a >= 0, b >= MIN_SLOPE; returns (a, b, rss).

    Two parameters and two bounds: the optimum of this convex problem is the
    unconstrained one if feasible, else the best of the fits with one or both
    bounds active (an exact active-set solution, same as ``lsq_linear``).
    """
    w = 1.0 / t
    x0, x1 = w, S * w  # columns of the weighted design; target is t*w = 1
    y = np.ones_like(t)

    def rss(a: float, b: float) -> float:
        r = y - a * x0 - b * x1
        return float(r @ r)

    cands: list[tuple[float, float]] = []
    A = np.column_stack([x0, x1])
    sol, *_ = np.linalg.lstsq(A, y, rcond=None)
    if sol[0] >= 0 and sol[1] >= MIN_SLOPE:
        cands.append((float(sol[0]), float(sol[1])))
    else:
        # alpha = 0: slope through the origin
        b = float((x1 @ y) / (x1 @ x1)) if x1 @ x1 > 0 else MIN_SLOPE
        cands.append((0.0, max(b, MIN_SLOPE)))
        # slope at its bound: alpha alone
        a = float((x0 @ (y - MIN_SLOPE * x1)) / (x0 @ x0))
        cands.append((max(a, 0.0), MIN_SLOPE))
    best = min(cands, key=lambda ab: (rss(*ab), ab))
    return best[0], best[1], rss(*best)


def fit_line(S: Sequence[float], t: Sequence[float], *, level: float = 0.95) -> LineFit:
    """Fit ``t = alpha + S / algbw`` weighted by ``1/t`` (relative error), alpha >= 0, algbw > 0.

    The 95% intervals use the covariance of the weighted fit,
    ``s^2 (X^T W X)^{-1}`` with ``s^2 = RSS / (n - 2)``, and Student-t quantiles;
    a parameter at its bound gets a one-sided interval starting at the bound.

    Parameters
    ----------
    S, t:
        Sizes (bytes) and times (seconds), at least two distinct sizes.

    >>> f = fit_line([1e6, 2e6, 4e6], [15e-6, 20e-6, 30e-6])
    >>> round(f.alpha_s * 1e6, 2), round(f.algbw / 1e9, 1)
    (10.0, 200.0)
    """
    S = np.asarray(S, dtype=float)
    t = np.asarray(t, dtype=float)
    if S.shape != t.shape or S.size < 2:
        raise ClusterSimError("a line fit needs at least two points")
    if np.any(t <= 0) or np.any(S < 0):
        raise ClusterSimError("times must be > 0 and sizes >= 0")
    a, b, rss = _wls_bounded(S, t)
    n = S.size
    w = 1.0 / t
    X = np.column_stack([w, S * w])
    dof = n - 2
    if dof > 0 and len(np.unique(S)) >= 2:
        s2 = rss / dof
        try:
            cov = s2 * np.linalg.inv(X.T @ X)
        except np.linalg.LinAlgError:
            cov = np.full((2, 2), np.inf)
        q = float(stats.t.ppf(0.5 + level / 2, dof))
        se_a, se_b = (math.sqrt(max(cov[0, 0], 0.0)), math.sqrt(max(cov[1, 1], 0.0)))
    else:  # exactly determined: no spread to measure
        q, se_a, se_b = 0.0, 0.0, 0.0
    a_ci = (max(0.0, a - q * se_a), a + q * se_a)
    b_ci = (max(MIN_SLOPE, b - q * se_b), max(MIN_SLOPE, b + q * se_b))
    return LineFit(alpha_s=a, slope=b, alpha_ci=a_ci, slope_ci=b_ci, rss=rss, points=n,
                   size_lo=float(S.min()), size_hi=float(S.max()))


def bootstrap_ci(S: Sequence[float], t: Sequence[float], line: LineFit, rng: np.random.Generator, *,
                 reps: int = 1000, level: float = 0.95) -> tuple[tuple[float, float], tuple[float, float]]:
    """Residual-bootstrap 95% intervals of (alpha, slope) for a fitted line.

    The relative residuals ``e = (t - fit) / t`` are scaled by ``1/sqrt(1 - h)``
    (leverage ``h``; raw residuals understate the noise) and centred; each
    replicate draws them with replacement, ``t* = fit / (1 - e*)``, and refits
    with the same weights and bounds. Percentile intervals. Deterministic for a
    given ``rng`` state.
    """
    S = np.asarray(S, dtype=float)
    t = np.asarray(t, dtype=float)
    n = S.size
    if n <= 2:
        return line.alpha_ci, line.slope_ci
    f = line.alpha_s + line.slope * S
    e = (t - f) / t
    X = np.column_stack([1.0 / t, S / t])
    try:
        h = np.einsum("ij,jk,ik->i", X, np.linalg.pinv(X.T @ X), X)
    except np.linalg.LinAlgError:  # pragma: no cover - pinv does not raise in practice
        h = np.zeros(n)
    e = e / np.sqrt(np.clip(1.0 - h, 1e-3, None))
    e = e - e.mean()
    draws = rng.choice(e, size=(reps, n), replace=True)
    ts = f / np.clip(1.0 - draws, 0.05, None)
    ts = np.where(ts > 0, ts, f)
    est = np.array([_wls_bounded(S, row)[:2] for row in ts])
    lo_q, hi_q = 100 * (0.5 - level / 2), 100 * (0.5 + level / 2)
    a_lo, a_hi = np.percentile(est[:, 0], [lo_q, hi_q])
    b_lo, b_hi = np.percentile(est[:, 1], [lo_q, hi_q])
    # the point estimate stays inside its interval
    return ((float(min(a_lo, line.alpha_s)), float(max(a_hi, line.alpha_s))),
            (float(max(MIN_SLOPE, min(b_lo, line.slope))), float(max(b_hi, line.slope))))
