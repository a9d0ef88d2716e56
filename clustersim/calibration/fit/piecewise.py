"""Piecewise alpha-beta fit: regimes chosen from the data, and how neighbouring regimes hand over.

The collective model is a piecewise alpha-beta line per context::

    t(S) = alpha_i + S / algbw_i      for S in [size_min_i, size_max_i)

NCCL switches protocol (LL -> LL128 -> Simple) and the number of channels with
the message size (``nccl-model.md`` §1.7), so one line cannot follow the
1 MB - 256 MB ramp (§6.2: a single alpha-beta fit of an NVLS sweep is off by up
to 25%). This module owns how the regimes are chosen and joined:

* every candidate segment is a run of at least ``min_sizes`` consecutive
  measured sizes, fitted by :func:`~clustersim.calibration.fit.line.fit_line`
  (weighted by ``1/t``, ``alpha >= 0``, ``algbw > 0``);
* dynamic programming finds, for every segment count ``k <= max_segments``,
  the split of the sorted sizes minimising the summed squared relative error;
  ``k`` is chosen by BIC (fit quality against parameter count), so noise alone
  does not buy extra segments; ties go to fewer segments (deterministic);
* between the last size of one regime and the first size of the next (a gap
  with no measurement), given ``switches`` (where NCCL's tuner changes
  protocol, from the NCCL-structured model): a gap without a switch is covered
  by a bridge regime, the chord from the left fit at the gap's start to the
  right fit at its end (a smooth, concave busbw ramp lies between that chord
  and the lines' extensions); at a switch the time may step, so the right
  regime's line takes over there (before it: the flatter of chord and left
  line). Without ``switches`` (and as the fallback when a chord would need a
  negative alpha or slope) the boundary goes where the two lines cross, i.e.
  the cheaper extension. On the 2x H200 bench (fit on half of the sizes,
  predict the other half; docs/calibration.md) this takes all_reduce's worst
  held-out error from 24% to 8% (the LL -> Simple step at 1 -> 2 MiB) and
  all_to_all's from 11% to 7%;
* 95% confidence intervals come from the covariance of the weighted fit with
  Student-t quantiles (``n - 2`` degrees of freedom), or, with
  ``ci="bootstrap"``, from a residual bootstrap drawing from one seeded
  ``numpy.random.Generator``.

Examples
--------
>>> import numpy as np
>>> S = np.array([1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9])
>>> t = 10e-6 + S / 200e9
>>> segs = fit_piecewise(S, t, max_segments=1)
>>> round(segs[0].alpha_s * 1e6, 3), round(segs[0].algbw / 1e9, 1)
(10.0, 200.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from clustersim.calibration.fit.line import MIN_SLOPE, LineFit, bootstrap_ci, fit_line
from clustersim.calibration.fit.profile_file import rounded
from clustersim.config.profile import Segment
from clustersim.errors import ClusterSimError


@dataclass
class PiecewiseSegment:
    """One fitted regime with its size range (bytes, ``size_max`` exclusive, None = unbounded)."""

    size_min: float
    size_max: float | None
    line: LineFit

    @property
    def alpha_s(self) -> float:
        """Fixed cost, seconds."""
        return self.line.alpha_s

    @property
    def algbw(self) -> float:
        """Bandwidth, bytes/s."""
        return self.line.algbw

    def to_segment(self) -> Segment:
        """The profile's :class:`Segment` (microseconds, GB/s)."""
        lo, hi = self.line.algbw_ci
        a_lo, a_hi = self.line.alpha_ci
        spread = self.line.points > 2 or self.line.bridge  # two points fit exactly: no interval can be given
        return Segment(
            size_min_bytes=self.size_min,
            size_max_bytes=self.size_max,
            alpha_us=rounded(self.line.alpha_s * 1e6),
            algbw_GBps=rounded(self.line.algbw / 1e9),
            alpha_ci_us=(rounded(a_lo * 1e6), rounded(a_hi * 1e6)) if spread else None,
            algbw_ci_GBps=(rounded(lo / 1e9), rounded(hi / 1e9)) if spread else None,
            points=0 if self.line.bridge else self.line.points,
        )


class _SizeRuns:
    """The measurements sorted by size, and the line of every run of distinct sizes ``i..j`` (cached).

    Raises :class:`ClusterSimError` for empty or non-finite input, times <= 0,
    sizes < 0 or fewer than two distinct sizes.
    """

    def __init__(self, sizes: Sequence[float], times: Sequence[float]):
        S = np.asarray(sizes, dtype=float)
        t = np.asarray(times, dtype=float)
        if S.size == 0:
            raise ClusterSimError("no measurements to fit")
        if np.any(~np.isfinite(S)) or np.any(~np.isfinite(t)) or np.any(t <= 0) or np.any(S < 0):
            raise ClusterSimError("sizes must be finite and >= 0, times finite and > 0")
        order = np.lexsort((t, S))
        self.S, self.t = S[order], t[order]
        self.xs = np.unique(self.S)  # the distinct sizes, ascending
        if self.xs.size < 2:
            raise ClusterSimError(f"need at least 2 distinct sizes to fit a line, got {self.xs.size}")
        self.starts = np.searchsorted(self.S, self.xs, side="left")
        self.ends = np.searchsorted(self.S, self.xs, side="right")
        self._fits: dict[tuple[int, int], LineFit] = {}

    def span(self, i: int, j: int) -> slice:
        """The measurements of distinct sizes ``i..j`` (inclusive)."""
        return slice(self.starts[i], self.ends[j])

    def line(self, i: int, j: int) -> LineFit:
        """The line fitted over distinct sizes ``i..j`` (inclusive)."""
        key = (i, j)
        if key not in self._fits:
            self._fits[key] = fit_line(self.S[self.span(i, j)], self.t[self.span(i, j)])
        return self._fits[key]


def _best_split(runs: _SizeRuns, *, kmax: int, min_sizes: int, forced: bool) -> list[tuple[int, int]]:
    """``(first, last)`` distinct-size index of each regime: least summed RSS per count, count by BIC.

    ``forced``: take ``kmax`` regimes (when the sizes allow) instead of choosing by BIC.
    """
    m = runs.xs.size
    INF = float("inf")
    # best[k][j] = min RSS covering sizes 0..j with k segments; back[k][j] = start of last segment
    best = [[INF] * m for _ in range(kmax + 1)]
    back = [[-1] * m for _ in range(kmax + 1)]
    for j in range(min_sizes - 1, m):
        best[1][j] = runs.line(0, j).rss
        back[1][j] = 0
    for k in range(2, kmax + 1):
        for j in range(k * min_sizes - 1, m):
            for i in range((k - 1) * min_sizes, j - min_sizes + 2):
                prev = best[k - 1][i - 1]
                if prev == INF:
                    continue
                c = prev + runs.line(i, j).rss
                if c < best[k][j] - 1e-15:
                    best[k][j], back[k][j] = c, i
    n = runs.S.size
    floor = 1e-12 * n  # keeps log() finite on noise-free data
    choice, score_best = 1, INF
    for k in ([kmax] if forced else range(1, kmax + 1)):
        if best[k][m - 1] == INF:
            continue
        p = 3 * k - 1  # alpha and slope per regime plus the k-1 breakpoints
        score = n * math.log(max(best[k][m - 1] / n, floor)) + p * math.log(n)
        if score < score_best - 1e-9:
            choice, score_best = k, score
    # walk back
    bounds: list[tuple[int, int]] = []
    j, k = m - 1, choice
    while k >= 1:
        i = back[k][j]
        bounds.append((i, j))
        j, k = i - 1, k - 1
    bounds.reverse()
    return bounds


def _bootstrapped(runs: _SizeRuns, bounds: list[tuple[int, int]], lines: list[LineFit],
                  rng: np.random.Generator) -> list[LineFit]:
    """The same lines with residual-bootstrap intervals (one ``rng``, drawn regime by regime in order)."""
    boot = []
    for (i, j), line in zip(bounds, lines):
        sl = runs.span(i, j)
        a_ci, b_ci = bootstrap_ci(runs.S[sl], runs.t[sl], line, rng)
        boot.append(LineFit(alpha_s=line.alpha_s, slope=line.slope, alpha_ci=a_ci, slope_ci=b_ci, rss=line.rss,
                            points=line.points, size_lo=line.size_lo, size_hi=line.size_hi))
    return boot


def _regimes(runs: _SizeRuns, bounds: list[tuple[int, int]], lines: list[LineFit],
             switches: Sequence[float] | None) -> list[PiecewiseSegment]:
    """The fitted lines as contiguous size ranges, 0 to unbounded; gaps closed by :func:`_boundary` or :func:`_join`."""
    out: list[PiecewiseSegment] = []
    lo = 0.0
    sw = None if switches is None else sorted(float(x) for x in switches if math.isfinite(float(x)))
    for idx, ((i, j), line) in enumerate(zip(bounds, lines)):
        if idx + 1 >= len(bounds):
            out.append(PiecewiseSegment(size_min=lo, size_max=None, line=line))
            break
        i2, _ = bounds[idx + 1]
        x_a, x_b = float(runs.xs[j]), float(runs.xs[i2])
        if sw is None:  # no knowledge of NCCL's switches: the cheaper of the two extended lines
            hi, bridge, end = _boundary(line, lines[idx + 1], x_a, x_b), None, None
        else:
            hi, bridge, end = _join(line, lines[idx + 1], x_a, x_b, sw)
        out.append(PiecewiseSegment(size_min=lo, size_max=hi, line=line))
        lo = hi
        if bridge is not None:
            out.append(PiecewiseSegment(size_min=hi, size_max=end, line=bridge))
            lo = end
    return out


def fit_piecewise(sizes: Sequence[float], times: Sequence[float], *, max_segments: int = 6,
                  min_sizes: int = 3, segments: int | None = None, ci: str = "t",
                  rng: np.random.Generator | None = None,
                  switches: Sequence[float] | None = None) -> list[PiecewiseSegment]:
    """Piecewise alpha-beta fit with breakpoints chosen from the data.

    Parameters
    ----------
    sizes, times:
        Bytes and seconds, one entry per measurement (several per size allowed).
    max_segments:
        Cap on the number of regimes.
    min_sizes:
        Fewest distinct sizes in one regime (3: two points always fit a line
        exactly and say nothing about its error).
    segments:
        Force this many regimes (at most what ``min_sizes`` allows) instead of
        choosing by BIC.
    ci:
        ``"t"``: intervals from the covariance of the weighted fit (Student t);
        ``"bootstrap"``: residual bootstrap (:func:`bootstrap_ci`) with ``rng``
        (default ``numpy.random.default_rng(0)``).
    switches:
        Sizes (bytes) where NCCL's tuner changes algorithm or protocol (from the
        NCCL-structured model, :func:`clustersim.collectives.model.tuner_switches`).
        A gap between two regimes that holds a switch hands over exactly there
        (a protocol change is a step, not a ramp); a gap without one is bridged
        (see :func:`_join`; an empty list bridges every gap). None (default):
        the cheaper of the two extended lines (:func:`_boundary`), which cannot
        tell a step from a ramp.

    Returns
    -------
    list[PiecewiseSegment]
        Sorted, contiguous; the first starts at 0 bytes, the last is unbounded.
    """
    runs = _SizeRuns(sizes, times)
    m = runs.xs.size
    min_sizes = max(2, min(min_sizes, m))
    kmax = max(1, min(segments or max_segments, m // min_sizes))
    bounds = _best_split(runs, kmax=kmax, min_sizes=min_sizes, forced=bool(segments))
    lines = [runs.line(i, j) for i, j in bounds]
    if ci not in ("t", "bootstrap"):
        raise ClusterSimError(f"confidence intervals: 't' or 'bootstrap', got {ci!r}")
    if ci == "bootstrap":
        lines = _bootstrapped(runs, bounds, lines, rng if rng is not None else np.random.default_rng(0))
    return _regimes(runs, bounds, lines, switches)


def _boundary(left: LineFit, right: LineFit, x_a: float, x_b: float) -> float:
    """Where regime ``left`` (last size ``x_a``) hands over to ``right`` (first size ``x_b``).

    At the crossing of the two lines when it lies in ``(x_a, x_b]``; otherwise at
    the end of the gap where the cheaper line is used throughout. The result is
    a whole number of bytes in ``(x_a, x_b]``.
    """
    lo = math.floor(x_a) + 1.0
    hi = float(x_b)
    if hi <= lo:
        return hi

    def d(S: float) -> float:  # left - right
        return float(left.predict(S) - right.predict(S))

    da, db = d(lo), d(hi)
    if da >= 0:  # right already cheaper (or equal) at the start of the gap
        return lo
    if db <= 0:  # left cheaper through the whole gap
        return hi
    dslope = left.slope - right.slope
    cross = (right.alpha_s - left.alpha_s) / dslope
    return float(min(hi, max(lo, math.ceil(cross))))


def _join(left: LineFit, right: LineFit, x_a: float, x_b: float,
          switches: Sequence[float]) -> tuple[float, LineFit | None, float | None]:
    """How regime ``left`` (last measured size ``x_a``) hands over to ``right`` (first size ``x_b``).

    Returns ``(boundary, bridge, end)``: ``left`` ends at ``boundary``; ``bridge``
    (or None) covers ``[boundary, end)``; ``right`` starts where the last one ends.

    * The busbw ramp between protocol changes is smooth (channel and pipelining
      effects): the gap is covered by the chord from the left fit at ``x_a`` to
      the right fit at ``x_b`` -- continuous, and, since a concave ramp lies
      above its chords and below the lines' extensions, between the two. Its
      95% interval is the chord of the neighbours' interval ends.
    * Where NCCL's tuner switches protocol/algorithm inside the gap
      (``switches``) the time may step: the right regime's own line takes over
      at the switch; before it, the flatter of the chord and the extended left
      line (both start at the left fit's value at ``x_a``).
    * A chord that would need a negative alpha or slope is not used: the left
      line runs up to the switch, or, without one, :func:`_boundary` decides.
    """
    lo = math.floor(x_a) + 1.0
    if x_b <= lo:
        return x_b, None, None
    inside = [s for s in switches if lo <= s <= x_b]
    end = float(math.ceil(inside[0])) if inside else x_b
    ta, tb = float(left.predict(x_a)), float(right.predict(x_b))
    slope = (tb - ta) / (x_b - x_a)
    alpha = ta - slope * x_a
    if not (slope >= MIN_SLOPE and alpha >= 0.0):
        return (end if inside else _boundary(left, right, x_a, x_b)), None, None
    if end <= lo:  # the switch is right at the gap's start: the right regime takes over at once
        return lo, None, None
    if inside and left.slope <= slope:
        # both start at the left fit's value at x_a; left of a switch the chord (which may climb a step
        # it does not reach) and the extended left line are both upper estimates: the flatter one, as
        # NCCL runs the cheaper protocol until its tuner switches
        return end, None, None

    def chord(a_l: float, b_l: float, a_r: float, b_r: float) -> tuple[float, float]:
        y_a, y_b = a_l + b_l * x_a, a_r + b_r * x_b
        sl = (y_b - y_a) / (x_b - x_a)
        return y_a - sl * x_a, sl

    # interval ends: the fast end (low alpha, low slope) and the slow end of each neighbour
    a1, s1 = chord(left.alpha_ci[0], left.slope_ci[0], right.alpha_ci[0], right.slope_ci[0])
    a2, s2 = chord(left.alpha_ci[1], left.slope_ci[1], right.alpha_ci[1], right.slope_ci[1])
    a_ci = (max(0.0, min(a1, a2, alpha)), max(a1, a2, alpha))
    s_ci = (max(MIN_SLOPE, min(s1, s2, slope)), max(MIN_SLOPE, s1, s2, slope))
    bridge = LineFit(alpha_s=alpha, slope=slope, alpha_ci=a_ci, slope_ci=s_ci, rss=0.0,
                     points=0, size_lo=x_a, size_hi=x_b, bridge=True)
    return lo, bridge, end
