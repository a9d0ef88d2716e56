"""Coverage of the fitted confidence intervals over many seeds (moved from tests/unit/test_fit.py): 20
t-interval fits and 10 bootstrap fits of synthetic three-regime collectives."""

from __future__ import annotations

import numpy as np
import pytest

from clustersim.calibration import fit as F
from clustersim.errors import ClusterSimError

pytestmark = pytest.mark.slow

# tests/unit/test_fit.py's synthetic collective: three regimes, 1 KiB .. 4 GiB, two repeats per size
TRUTH = [  # (size_min, alpha_s, algbw B/s): LL-like, LL128-like, Simple-like regimes
    (0, 8e-6, 20e9),
    (64 * 2**10, 15e-6, 150e9),
    (8 * 2**20, 40e-6, 350e9),
]
SIZES = [2.0**p for p in range(10, 33)]  # 1 KiB .. 4 GiB


def truth_time(S: float) -> float:
    seg = [t for t in TRUTH if t[0] <= S][-1]
    return seg[1] + S / seg[2]


def synthetic(seed: int, noise: float = 0.01, reps: int = 2):
    rng = np.random.default_rng(seed)
    S = np.repeat(SIZES, reps)
    t = np.array([truth_time(s) for s in S]) * (1 + noise * rng.standard_normal(S.size))
    return S, t


def test_synthetic_ci_covers_truth_in_most_seeds():
    covered = total = 0
    for seed in range(20):
        S, t = synthetic(seed=100 + seed, noise=0.02)
        segs = F.fit_piecewise(S, t)
        if len(segs) != 3:
            total += 6
            continue
        for seg, (_, alpha, bw) in zip(segs, TRUTH):
            covered += seg.line.alpha_ci[0] <= alpha <= seg.line.alpha_ci[1]
            covered += seg.line.algbw_ci[0] <= bw <= seg.line.algbw_ci[1]
            total += 2
    assert covered / total >= 0.8, f"95% intervals covered the truth in {covered}/{total}"


def test_bootstrap_ci_covers_truth_and_is_seeded():
    covered = total = 0
    for seed in range(10):
        S, t = synthetic(seed=200 + seed, noise=0.02)
        segs = F.fit_piecewise(S, t, ci="bootstrap", rng=np.random.default_rng(seed))
        if len(segs) != 3:
            total += 6
            continue
        for seg, (_, alpha, bw) in zip(segs, TRUTH):
            assert seg.line.alpha_ci[0] <= seg.alpha_s <= seg.line.alpha_ci[1]
            covered += seg.line.alpha_ci[0] <= alpha <= seg.line.alpha_ci[1]
            covered += seg.line.algbw_ci[0] <= bw <= seg.line.algbw_ci[1]
            total += 2
    assert covered / total >= 0.75, f"bootstrap intervals covered the truth in {covered}/{total}"
    S, t = synthetic(seed=1)
    a = [s.to_segment() for s in F.fit_piecewise(S, t, ci="bootstrap", rng=np.random.default_rng(42))]
    b = [s.to_segment() for s in F.fit_piecewise(S, t, ci="bootstrap", rng=np.random.default_rng(42))]
    c = [s.to_segment() for s in F.fit_piecewise(S, t, ci="t")]
    assert a == b and a != c
    # same point estimates, only the intervals differ
    assert [(x.alpha_us, x.algbw_GBps) for x in a] == [(x.alpha_us, x.algbw_GBps) for x in c]
    with pytest.raises(ClusterSimError):
        F.fit_piecewise(S, t, ci="jackknife")
