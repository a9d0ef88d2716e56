"""Predicted time of a calibrated collective with its 95% band.

A profile's :class:`~clustersim.config.profile.CollectiveEntry` holds, per size
regime, ``alpha`` and ``algbw`` with 95% confidence intervals. The band at size
``S`` combines the two intervals in quadrature, side by side::

    t   = alpha + S / algbw
    lo  = t - sqrt((alpha - alpha_lo)^2 + (S/algbw - S/algbw_hi)^2)
    hi  = t + sqrt((alpha_hi - alpha)^2 + (S/algbw_lo - S/algbw)^2)

The profile keeps marginal intervals only (no covariance), so this treats the
two parameters as independent: wider than the exact band where alpha and
slope are negatively correlated (the usual case in the middle of a regime),
narrower than adding the half-widths. It is the uncertainty of the fitted
line, not a prediction interval for one noisy measurement, and it says nothing
about regimes the measurements did not cover.

Engine-free and below the engine like :mod:`~clustersim.collectives.linkmodel`: the collective
table (:mod:`clustersim.collectives.table`) prints this band and ``calibrate report``
(:mod:`clustersim.calibration.report`) checks it against held-out measurements.

Examples
--------
>>> from clustersim.config.profile import CollectiveEntry
>>> e = CollectiveEntry(op="all_reduce", ranks=2, segments=[
...     {"size_min_bytes": 0, "alpha_us": 10, "algbw_GBps": 100,
...      "alpha_ci_us": [9, 11], "algbw_ci_GBps": [90, 110]}])
>>> t, lo, hi = predict(e, 1e6)
>>> round(t * 1e6, 3), round(lo * 1e6, 3), round(hi * 1e6, 3)
(20.0, 18.649, 21.495)
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from clustersim.config.profile import CollectiveEntry, Profile, Segment
from clustersim.errors import ClusterSimError


def segment_for(entry: CollectiveEntry, size_bytes: float) -> Segment:
    """The regime of ``entry`` that holds ``size_bytes``.

    Sizes below the first regime use the first; sizes in a hole between
    regimes (hand-written profiles) use the regime below it.
    """
    if size_bytes < 0 or not math.isfinite(size_bytes):
        raise ClusterSimError(f"size must be a finite number of bytes >= 0, got {size_bytes!r}")
    chosen = entry.segments[0]
    for seg in entry.segments:
        if seg.size_min_bytes <= size_bytes:
            chosen = seg
        else:
            break
    return chosen


def predict(entry: CollectiveEntry, size_bytes: float) -> tuple[float, float, float]:
    """(time, lo, hi) in seconds for one call of ``entry`` on ``size_bytes`` bytes.

    ``lo``/``hi`` bound the 95% band (see the module docstring); a regime
    without intervals gives ``lo == hi == time``.
    """
    seg = segment_for(entry, size_bytes)
    S = float(size_bytes)
    a = seg.alpha_us * 1e-6
    bw = seg.algbw_GBps * 1e9
    t = a + S / bw
    da_lo = da_hi = db_lo = db_hi = 0.0
    if seg.alpha_ci_us is not None:
        da_lo = max(0.0, a - seg.alpha_ci_us[0] * 1e-6)
        da_hi = max(0.0, seg.alpha_ci_us[1] * 1e-6 - a)
    if seg.algbw_ci_GBps is not None:
        bw_lo, bw_hi = (v * 1e9 for v in seg.algbw_ci_GBps)
        if bw_hi > 0:
            db_lo = max(0.0, S / bw - S / bw_hi)  # faster link -> shorter time
        db_hi = max(0.0, S / bw_lo - S / bw) if bw_lo > 0 else math.inf
    lo = max(0.0, t - math.hypot(da_lo, db_lo))
    hi = t + math.hypot(da_hi, db_hi)
    return t, lo, hi


def predict_many(entry: CollectiveEntry, sizes: Iterable[float]) -> np.ndarray:
    """Array of shape (n, 3): (time, lo, hi) in seconds per size."""
    return np.array([predict(entry, float(s)) for s in sizes], dtype=float).reshape(-1, 3)


def find_entry(profile: Profile, op: str, *, ranks: int | None = None, scope: str | None = None,
               mode: str = "nccl", algorithm: str | None = None, protocol: str | None = None) -> CollectiveEntry | None:
    """The most specific collective entry of ``profile`` matching the context, or None.

    An entry matches when each of its non-null keys equals the asked value (a
    null key matches anything; ``mode`` must be equal). Among matches, the one
    with most non-null keys wins; ties go to the first in the file.
    """
    best, best_score = None, -1
    for e in profile.collectives:
        if e.op != op or e.mode != mode:
            continue
        score = 0
        ok = True
        for have, want in ((e.ranks, ranks), (e.scope, scope), (e.algorithm, algorithm), (e.protocol, protocol)):
            if have is None:
                continue
            if have != want:
                ok = False
                break
            score += 1
        if ok and score > best_score:
            best, best_score = e, score
    return best
