"""Fit a calibration profile (Contract 4) from measurements (Contract 3).

The collective model is a piecewise alpha-beta line per context
(op, algorithm, protocol, ranks, scope, mode)::

    t(S) = alpha_i + S / algbw_i      for S in [size_min_i, size_max_i)

NCCL switches protocol (LL -> LL128 -> Simple) and the number of channels with
the message size (``nccl-model.md`` §1.7), so one line cannot follow the
1 MB - 256 MB ramp (§6.2: a single alpha-beta fit of an NVLS sweep is off by up
to 25%). The regimes are chosen from the data:

* every candidate segment is a run of at least ``min_sizes`` consecutive
  measured sizes, fitted by least squares weighted by ``1/t`` (so every point
  counts by its *relative* error; an unweighted fit would be decided by the
  4 GiB points alone), with ``alpha >= 0`` and ``algbw > 0``;
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

import datetime as _dt
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import yaml
from scipy import stats

from clustersim.config.base import load_model, validate
from clustersim.config.profile import (
    OP_NAMES,
    CollectiveEntry,
    CommInit,
    GemmPoint,
    LinkParams,
    Profile,
    Segment,
    Source,
)
from clustersim.errors import ClusterSimError

#: Dense bf16 peak (TFLOP/s) of the GPUs we know, from the vendor data sheets
#: (H100/H200 SXM: 989.4 dense bf16; A100: 312). Matched as substrings of the
#: meta row's GPU name, first match wins (so "H100 PCIe" must come before "H100").
PEAK_BF16_TFLOPS: tuple[tuple[str, float], ...] = (
    ("H100 PCIE", 756.0),
    ("H100 NVL", 835.0),
    ("H200", 989.4),
    ("H100", 989.4),
    ("GH200", 989.4),
    ("A100", 312.0),
)

#: Largest algorithm bandwidth a fit may report (1 PB/s): a regime whose time
#: does not grow with size (pure latency) gets this bound instead of infinity.
MAX_ALGBW = 1e15
MIN_SLOPE = 1.0 / MAX_ALGBW

COLLECTIVE_KEY = ("op", "algorithm", "protocol", "ranks", "scope", "mode")
HOLDOUTS = ("none", "even", "odd")


# ---------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------


@dataclass
class Measurements:
    """Rows read from measurement files, sorted by kind.

    Attributes
    ----------
    rows:
        Valid Contract 3 rows (``kind`` always set).
    files:
        The files read, in the order given.
    skipped:
        ``"file:line: reason"`` for every line that was reported and skipped.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def of(self, kind: str) -> list[dict[str, Any]]:
        """Rows of one kind."""
        return [r for r in self.rows if r["kind"] == kind]


def _num(row: dict[str, Any], key: str, *, positive: bool = True) -> float:
    v = row.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{key!r} must be a number, got {v!r}")
    if positive and v <= 0:
        raise ValueError(f"{key!r} must be > 0, got {v!r}")
    return float(v)


def normalise_row(obj: dict[str, Any]) -> dict[str, Any] | None:
    """Check one measurement row and fill defaults; ``None`` for kinds the fit ignores.

    Rows without ``kind`` from the early GEMM script (``m, n, k, median_ms,
    tflops`` and ``{"op": "d2d_copy", "bytes", "gbps_rw"}``) are recognised by
    their keys. Raises ``ValueError`` (with the reason) for a row that cannot be
    read.
    """
    kind = obj.get("kind")
    if kind is None:
        if all(k in obj for k in ("m", "n", "k")) and ("tflops" in obj or "median_ms" in obj):
            kind = "gemm"
        elif obj.get("op") == "d2d_copy" and "gbps_rw" in obj:
            return {"kind": "hbm", "bytes": obj.get("bytes"), "bandwidth_GBps": _num(obj, "gbps_rw")}
        else:
            raise ValueError("no 'kind' key and not a recognised legacy row")
    row = dict(obj)
    row["kind"] = kind
    if kind == "collective":
        op = row.get("op")
        if op not in OP_NAMES:
            raise ValueError(f"unknown op {op!r} (known: {', '.join(OP_NAMES)})")
        _num(row, "size_bytes", positive=False)
        _num(row, "time_us")
        ranks = row.get("ranks")
        if ranks is not None and (not isinstance(ranks, int) or isinstance(ranks, bool) or ranks < 1):
            raise ValueError(f"'ranks' must be a positive integer, got {ranks!r}")
        row.setdefault("mode", "nccl")
        if row["mode"] not in ("nccl", "eager", "framework"):
            raise ValueError(f"'mode' must be nccl, eager or framework, got {row['mode']!r}")
        proto = row.get("protocol")
        if isinstance(proto, str):
            row["protocol"] = proto.lower()
        if row.get("protocol") not in (None, "ll", "ll128", "simple"):
            raise ValueError(f"'protocol' must be ll, ll128 or simple, got {row.get('protocol')!r}")
        if isinstance(row.get("algorithm"), str):
            row["algorithm"] = row["algorithm"].lower()
        if row.get("scope") is None and row.get("nodes") is not None:
            row["scope"] = "intra" if row["nodes"] == 1 else "inter"
        if row.get("scope") not in (None, "intra", "inter"):
            raise ValueError(f"'scope' must be intra or inter, got {row.get('scope')!r}")
    elif kind == "gemm":
        for k in ("m", "n", "k"):
            v = row.get(k)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"{k!r} must be a positive integer, got {v!r}")
        flops = 2.0 * row["m"] * row["n"] * row["k"]
        if row.get("tflops") is None:
            if row.get("time_us") is not None:
                row["tflops"] = flops / (_num(row, "time_us") * 1e-6) / 1e12
            else:
                row["tflops"] = flops / (_num(row, "median_ms") * 1e-3) / 1e12
        _num(row, "tflops")
    elif kind == "hbm":
        _num(row, "bandwidth_GBps")
    elif kind == "launch":
        _num(row, "overhead_us", positive=False)
    elif kind == "framework_call":
        _num(row, "time_us")
    elif kind == "comm_init":
        _num(row, "ranks")
        _num(row, "time_s")
    elif kind == "meta":
        pass
    else:
        return None
    return row


def _is_nccl_tests_log(path: Path) -> bool:
    if path.suffix in (".jsonl", ".json", ".ndjson"):
        return False
    try:
        head = path.read_bytes()[:4096].decode("utf-8", errors="replace")
    except OSError:
        return False
    return "nccl-tests" in head or "Collective test starting" in head or "(elements)" in head


def _nccl_tests_rows(path: Path, warn: Callable[[str], None] | None) -> list[dict[str, Any]]:
    try:
        from clustersim.calibration.nccl_tests import parse_nccl_tests_log
    except ImportError:
        raise ClusterSimError(
            "looks like an nccl-tests log, but the nccl-tests importer is not available; "
            "convert it first with `clustersim calibrate import-nccl-tests`", file=str(path)) from None
    return list(parse_nccl_tests_log(str(path), warn=warn))


def read_measurements(paths: Iterable[str | Path], *, warn: Callable[[str], None] | None = None) -> Measurements:
    """Read Contract 3 JSON-lines files (and nccl-tests logs, when the importer is installed).

    A line that is not a JSON object, or a row that cannot be read (missing or
    bad fields), is reported through ``warn`` as ``file:line: reason`` and
    skipped; it is never read half-way.

    Raises
    ------
    ClusterSimError
        A file is missing or a folder.
    """
    out = Measurements()
    for path in paths:
        p = Path(path)
        if not p.exists():
            raise ClusterSimError("file not found", file=str(path))
        if p.is_dir():
            raise ClusterSimError("is a folder, not a file", file=str(path))
        out.files.append(str(path))

        def skip(msg: str) -> None:
            out.skipped.append(msg)
            if warn:
                warn(msg)

        if _is_nccl_tests_log(p):
            for obj in _nccl_tests_rows(p, skip):
                try:
                    row = normalise_row(obj)
                except ValueError as exc:
                    skip(f"{path}: skipped a row ({exc})")
                    continue
                if row is not None:
                    row.setdefault("file", str(path))
                    out.rows.append(row)
            continue
        raw = p.read_bytes()
        if b"\x00" in raw:
            raise ClusterSimError("binary file (not JSON lines)", file=str(path))
        for lineno, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                skip(f"{path}:{lineno}: skipped (not JSON: {exc.msg})")
                continue
            if not isinstance(obj, dict):
                skip(f"{path}:{lineno}: skipped (expected a JSON object, got {type(obj).__name__})")
                continue
            try:
                row = normalise_row(obj)
            except ValueError as exc:
                skip(f"{path}:{lineno}: skipped ({exc})")
                continue
            if row is not None:
                row.setdefault("file", str(path))
                row["line"] = lineno
                out.rows.append(row)
    return out


# ---------------------------------------------------------------------------
# grouping and hold-out
# ---------------------------------------------------------------------------


def collective_key(row: dict[str, Any]) -> tuple:
    """The fit context of a collective row: (op, algorithm, protocol, ranks, scope, mode, nvls)."""
    return (row["op"], row.get("algorithm"), row.get("protocol"), row.get("ranks"), row.get("scope"),
            row.get("mode", "nccl"), bool(row.get("nvls") or False))


def group_collectives(rows: Iterable[dict[str, Any]]) -> dict[tuple, list[dict[str, Any]]]:
    """Collective rows grouped by :func:`collective_key`, in a stable (sorted) order."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        if r["kind"] == "collective":
            groups.setdefault(collective_key(r), []).append(r)
    return {k: groups[k] for k in sorted(groups, key=lambda k: tuple("" if v is None else str(v) for v in k))}


def split_holdout(rows: Sequence[dict[str, Any]], holdout: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split one group's rows into (fit, held-out) by the index of their size.

    The distinct sizes of the group are sorted; ``holdout="odd"`` holds out the
    sizes at odd positions (1st, 3rd, ... counting from 0), ``"even"`` those at
    even positions, ``"none"`` nothing. Every row of a size goes to the same side.

    >>> rows = [{"size_bytes": s} for s in (8, 16, 32, 64)]
    >>> [r["size_bytes"] for r in split_holdout(rows, "odd")[1]]
    [16, 64]
    """
    if holdout not in HOLDOUTS:
        raise ClusterSimError(f"--holdout must be one of {', '.join(HOLDOUTS)}, got {holdout!r}")
    if holdout == "none":
        return list(rows), []
    sizes = sorted({float(r["size_bytes"]) for r in rows})
    index = {s: i for i, s in enumerate(sizes)}
    parity = 1 if holdout == "odd" else 0
    fit, held = [], []
    for r in rows:
        (held if index[float(r["size_bytes"])] % 2 == parity else fit).append(r)
    return fit, held


# ---------------------------------------------------------------------------
# weighted, bounded alpha-beta line
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# piecewise fit
# ---------------------------------------------------------------------------


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
        spread = self.line.points > 2 or self.line.bridge  # two points fit exactly: no interval can be given
        return Segment(
            size_min_bytes=self.size_min,
            size_max_bytes=self.size_max,
            alpha_us=_r(self.line.alpha_s * 1e6),
            algbw_GBps=_r(self.line.algbw / 1e9),
            alpha_ci_us=(_r(self.line.alpha_ci[0] * 1e6), _r(self.line.alpha_ci[1] * 1e6)) if spread else None,
            algbw_ci_GBps=(_r(lo / 1e9), _r(hi / 1e9)) if spread else None,
            points=0 if self.line.bridge else self.line.points,
        )


def _r(x: float, digits: int = 6) -> float:
    """Round to ``digits`` significant digits (keeps YAML readable, far below measurement noise)."""
    if x == 0 or not math.isfinite(x):
        return float(x)
    return float(f"{x:.{digits}g}")


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
    S = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    if S.size == 0:
        raise ClusterSimError("no measurements to fit")
    if np.any(~np.isfinite(S)) or np.any(~np.isfinite(t)) or np.any(t <= 0) or np.any(S < 0):
        raise ClusterSimError("sizes must be finite and >= 0, times finite and > 0")
    order = np.lexsort((t, S))
    S, t = S[order], t[order]
    xs = np.unique(S)
    m = xs.size
    if m < 2:
        raise ClusterSimError(f"need at least 2 distinct sizes to fit a line, got {m}")
    min_sizes = max(2, min(min_sizes, m))
    starts = np.searchsorted(S, xs, side="left")
    ends = np.searchsorted(S, xs, side="right")

    # cost[i][j]: RSS of the line over distinct sizes i..j (inclusive)
    fits: dict[tuple[int, int], LineFit] = {}

    def seg(i: int, j: int) -> LineFit:
        key = (i, j)
        if key not in fits:
            fits[key] = fit_line(S[starts[i]:ends[j]], t[starts[i]:ends[j]])
        return fits[key]

    kmax = max(1, min(segments or max_segments, m // min_sizes))
    INF = float("inf")
    # best[k][j] = min RSS covering sizes 0..j with k segments; back[k][j] = start of last segment
    best = [[INF] * m for _ in range(kmax + 1)]
    back = [[-1] * m for _ in range(kmax + 1)]
    for j in range(min_sizes - 1, m):
        best[1][j] = seg(0, j).rss
        back[1][j] = 0
    for k in range(2, kmax + 1):
        for j in range(k * min_sizes - 1, m):
            for i in range((k - 1) * min_sizes, j - min_sizes + 2):
                prev = best[k - 1][i - 1]
                if prev == INF:
                    continue
                c = prev + seg(i, j).rss
                if c < best[k][j] - 1e-15:
                    best[k][j], back[k][j] = c, i
    n = S.size
    floor = 1e-12 * n  # keeps log() finite on noise-free data
    choice, score_best = 1, INF
    for k in ([kmax] if segments else range(1, kmax + 1)):
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
    lines = [seg(i, j) for i, j in bounds]
    if ci not in ("t", "bootstrap"):
        raise ClusterSimError(f"confidence intervals: 't' or 'bootstrap', got {ci!r}")
    if ci == "bootstrap":
        rng = rng if rng is not None else np.random.default_rng(0)
        boot = []
        for (i, j), line in zip(bounds, lines):
            sl = slice(starts[i], ends[j])
            a_ci, b_ci = bootstrap_ci(S[sl], t[sl], line, rng)
            boot.append(LineFit(alpha_s=line.alpha_s, slope=line.slope, alpha_ci=a_ci, slope_ci=b_ci, rss=line.rss,
                                points=line.points, size_lo=line.size_lo, size_hi=line.size_hi))
        lines = boot
    out: list[PiecewiseSegment] = []
    lo = 0.0
    sw = None if switches is None else sorted(float(x) for x in switches if math.isfinite(float(x)))
    for idx, ((i, j), line) in enumerate(zip(bounds, lines)):
        if idx + 1 >= len(bounds):
            out.append(PiecewiseSegment(size_min=lo, size_max=None, line=line))
            break
        i2, _ = bounds[idx + 1]
        x_a, x_b = float(xs[j]), float(xs[i2])
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


# ---------------------------------------------------------------------------
# collectives, links
# ---------------------------------------------------------------------------


#: ``switches(op, ranks, scope) -> sizes`` where NCCL's tuner changes algorithm/protocol (see fit_piecewise).
Switches = Callable[[str, "int | None", "str | None"], Sequence[float]]


def fit_collective(rows: Sequence[dict[str, Any]], *, max_segments: int = 6, min_sizes: int = 3, ci: str = "t",
                   rng: np.random.Generator | None = None, switches: Switches | None = None) -> CollectiveEntry:
    """Fit one context's rows (same :func:`collective_key`) into a :class:`CollectiveEntry`.

    ``switches`` (optional) tells where NCCL's tuner switches protocol for this
    context; only rows with NCCL's own choice (no forced algorithm/protocol) use it.
    """
    if not rows:
        raise ClusterSimError("no collective rows to fit")
    r0 = rows[0]
    S = [float(r["size_bytes"]) for r in rows]
    t = [float(r["time_us"]) * 1e-6 for r in rows]
    sw = None
    if switches is not None:  # a forced algorithm/protocol does not switch: bridge every gap
        forced = r0.get("algorithm") is not None or r0.get("protocol") is not None
        sw = [] if forced else list(switches(r0["op"], r0.get("ranks"), r0.get("scope")))
    segs = fit_piecewise(S, t, max_segments=max_segments, min_sizes=min_sizes, ci=ci, rng=rng, switches=sw)
    return CollectiveEntry(
        op=r0["op"], algorithm=r0.get("algorithm"), protocol=r0.get("protocol"), ranks=r0.get("ranks"),
        scope=r0.get("scope"), mode=r0.get("mode", "nccl"), segments=[s.to_segment() for s in segs],
    )


def _nsteps(op: str, n: int) -> int:
    """Ring steps of one call (``nccl-model.md`` §1.5): latency terms per call."""
    if op == "all_reduce":
        return 2 * (n - 1)
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return n - 1
    return 1


def _busbw_factor(op: str, n: int) -> float:
    """nccl-tests busbw / algbw (``nccl-model.md`` §2.1)."""
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all", "gather", "scatter"):
        return (n - 1) / n
    return 1.0


def link_params_from(entry: CollectiveEntry) -> LinkParams:
    """Effective link parameters from a 2-rank (or n-rank ring) intra-node fit.

    Latency: the smallest-size regime's alpha divided by the ring steps of one
    call (2(n-1) for all_reduce, 1 for send_recv); bandwidth: the largest-size
    regime's algbw times the busbw factor (what one GPU's link carries per
    direction). Their intervals are scaled the same way.
    """
    n = entry.ranks or 2
    first, last = entry.segments[0], entry.segments[-1]
    steps = _nsteps(entry.op, n)
    f = _busbw_factor(entry.op, n)
    lat_ci = (first.alpha_ci_us[0] / steps, first.alpha_ci_us[1] / steps) if first.alpha_ci_us else None
    bw_ci = (last.algbw_ci_GBps[0] * f, last.algbw_ci_GBps[1] * f) if last.algbw_ci_GBps else None
    return LinkParams(
        latency_us=_r(first.alpha_us / steps), bandwidth_GBps=_r(last.algbw_GBps * f),
        latency_ci_us=tuple(_r(v) for v in lat_ci) if lat_ci else None,
        bandwidth_ci_GBps=tuple(_r(v) for v in bw_ci) if bw_ci else None,
    )


def _link_class(entry: CollectiveEntry, intra_class: str) -> str | None:
    if entry.scope == "intra":
        return intra_class
    if entry.scope == "inter":
        return "network"
    return None


def links_from(entries: Sequence[CollectiveEntry], meta: dict[str, Any] | None = None) -> dict[str, LinkParams]:
    """Link classes determinable from the fits.

    Intra-node 2-rank NCCL-mode entries (send_recv preferred, else all_reduce)
    give ``nvlink`` -- or ``pcie`` when the meta row's ``topo_m`` (``nvidia-smi
    topo -m``) shows no ``NV<k>`` connection; 2-rank inter-node entries (one
    rank per node) give ``network``. Forced algorithms other than ring are not
    used (their step counts differ).
    """
    import re

    topo = str((meta or {}).get("topo_m") or "")
    intra = "pcie" if topo and not re.search(r"\bNV\d+\b", topo) else "nvlink"
    out: dict[str, LinkParams] = {}
    for op in ("send_recv", "all_reduce"):
        for e in entries:
            if e.op != op or e.ranks != 2 or e.mode != "nccl" or e.algorithm not in (None, "ring"):
                continue
            cls = _link_class(e, intra)
            if cls and cls not in out:
                out[cls] = link_params_from(e)
    return out


# ---------------------------------------------------------------------------
# compute, host
# ---------------------------------------------------------------------------


def peak_tflops_for(gpu: str | None) -> float | None:
    """Vendor dense bf16 peak for a GPU name (``'NVIDIA H200'`` -> 989.4), or None when unknown."""
    if not gpu:
        return None
    name = gpu.upper()
    for key, value in PEAK_BF16_TFLOPS:
        if key in name:
            return value
    return None


def fit_gemm(rows: Sequence[dict[str, Any]], peak_tflops: float) -> dict[str, Any]:
    """GEMM efficiency table, large-GEMM plateau and small-GEMM roll-off.

    ``efficiency = tflops / peak``. The plateau is the median efficiency of the
    largest third of the problems by FLOPs (at least 3). The roll-off follows
    ``eff(F) = E * F / (F + F_half)`` -- a fixed per-GEMM cost of
    ``F_half / (E * peak)`` seconds -- with ``F_half`` fitted by least squares on
    ``log(eff)`` over all points.

    Returns a dict with ``gemm_table`` (list of :class:`GemmPoint`),
    ``gemm_efficiency`` and ``gemm_half_flops``.
    """
    from scipy.optimize import minimize_scalar

    if peak_tflops <= 0:
        raise ClusterSimError("peak TFLOP/s must be > 0")
    pts = sorted(((2.0 * r["m"] * r["n"] * r["k"], r["tflops"] / peak_tflops, r) for r in rows),
                 key=lambda x: (x[0], x[1]))
    if not pts:
        raise ClusterSimError("no GEMM rows")
    if max(e for _, e, _ in pts) > 1.0:
        raise ClusterSimError(f"a GEMM reached more than the peak of {peak_tflops} TFLOP/s; "
                              "check --peak-tflops or the GPU name in the meta row")
    table = [GemmPoint(m=r["m"], n=r["n"], k=r["k"], efficiency=_r(e, 4)) for _, e, r in pts]
    big = pts[-max(3, len(pts) // 3):] if len(pts) >= 3 else pts
    E = float(statistics.median(e for _, e, _ in big))
    F = np.array([p[0] for p in pts])
    eff = np.array([p[1] for p in pts])

    def loss(logh: float) -> float:
        model = E * F / (F + math.exp(logh))
        return float(np.sum((np.log(model) - np.log(eff)) ** 2))

    res = minimize_scalar(loss, bounds=(math.log(1e3), math.log(1e15)), method="bounded",
                          options={"xatol": 1e-6})
    return {"gemm_table": table, "gemm_efficiency": _r(min(E, 1.0), 4), "gemm_half_flops": _r(math.exp(res.x), 4)}


def fit_comm_init(rows: Sequence[dict[str, Any]]) -> CommInit:
    """``time = base + per_rank * ranks`` by non-negative least squares.

    With one rank count measured the whole time is the base. ``extrapolated``
    is True unless at least 3 rank counts up to 16 or more were measured
    (start-up cost grows with the bootstrap all-gather; small counts say little
    about 1000s of ranks).
    """
    from scipy.optimize import nnls

    ranks = np.array([float(r["ranks"]) for r in rows])
    times = np.array([float(r["time_s"]) for r in rows])
    measured = sorted({int(x) for x in ranks})
    if len(measured) >= 2:
        (base, per_rank), _ = nnls(np.column_stack([np.ones_like(ranks), ranks]), times)
    else:
        base, per_rank = float(np.median(times)), 0.0
    extrapolated = not (len(measured) >= 3 and max(measured) >= 16)
    return CommInit(base_s=_r(float(base)), per_rank_s=_r(float(per_rank)), extrapolated=extrapolated,
                    measured_ranks=measured)


# ---------------------------------------------------------------------------
# whole profile
# ---------------------------------------------------------------------------


@dataclass
class FitResult:
    """What :func:`fit_profile` made: the profile and notes for the user."""

    profile: Profile
    notes: list[str] = field(default_factory=list)
    held_out: list[dict[str, Any]] = field(default_factory=list)


def _entry_key(e: CollectiveEntry) -> tuple:
    return (e.op, e.algorithm, e.protocol, e.ranks, e.scope, e.mode)


def _meta_of(meas: Measurements) -> dict[str, Any]:
    metas = meas.of("meta")
    merged: dict[str, Any] = {}
    for m in metas:  # later meta rows fill what earlier ones left out
        for k, v in m.items():
            if v is not None and k not in merged:
                merged[k] = v
    return merged


def fit_profile(meas: Measurements, *, name: str, base: Profile | None = None, holdout: str = "none",
                peak_tflops: float | None = None, max_segments: int = 6, min_sizes: int = 3,
                files: Sequence[str] | None = None, ci: str = "t", seed: int = 0,
                switches: Switches | None = None) -> FitResult:
    """Fit everything the measurements determine into a :class:`Profile`.

    Parameters
    ----------
    meas:
        From :func:`read_measurements`.
    name:
        Profile name.
    base:
        Profile to extend: its entries are kept unless the new fit replaces them
        (same op, algorithm, protocol, ranks, scope, mode; same link class; each
        measured host/compute field).
    holdout:
        ``none``, ``odd`` or ``even``: sizes left out of every collective fit
        (see :func:`split_holdout`), for ``calibrate report``.
    peak_tflops:
        Dense peak of the GEMM dtype; default from the meta row's GPU name.
    ci, seed:
        Interval method (``t`` or ``bootstrap``, see :func:`fit_piecewise`) and
        the seed of the one ``numpy.random.Generator`` the bootstrap draws from.
    switches:
        ``switches(op, ranks, scope)``: sizes where NCCL's tuner changes protocol
        (see :func:`fit_piecewise`); None: the cheaper-line rule in every gap.
    """
    notes: list[str] = []
    if ci not in ("t", "bootstrap"):
        raise ClusterSimError(f"--ci must be t or bootstrap, got {ci!r}")
    rng = np.random.default_rng(seed)
    meta = _meta_of(meas)
    groups = group_collectives(meas.rows)
    usable = [r for r in meas.rows if r["kind"] != "meta"]
    if not usable:
        raise ClusterSimError("no measurements found (no collective, gemm, hbm, launch, framework_call "
                              "or comm_init rows)" + (f"; {len(meas.skipped)} line(s) skipped" if meas.skipped else ""),
                              file=", ".join(meas.files) or None)
    nvls_default = bool(meta.get("nvls")) if meta.get("nvls") is not None else (base.nvls if base else False)
    # an entry has no nvls field: keep the rows measured with the profile's NVLS setting
    by_ctx: dict[tuple, list[tuple]] = {}
    for key in groups:
        by_ctx.setdefault(key[:6], []).append(key)
    entries: list[CollectiveEntry] = []
    held_out: list[dict[str, Any]] = []
    for ctx, keys in by_ctx.items():
        if len(keys) > 1:
            keys = [k for k in keys if k[6] == nvls_default] or keys[:1]
            notes.append(f"{ctx[0]} ranks={ctx[3]}: measured with and without NVLS; fitted the nvls={keys[0][6]} rows")
        rows = groups[keys[0]]
        fit_rows, held = split_holdout(rows, holdout)
        held_out.extend(held)
        if len({r['size_bytes'] for r in fit_rows}) < 2:
            notes.append(f"{ctx[0]} ranks={ctx[3]} mode={ctx[5]}: fewer than 2 sizes, not fitted")
            continue
        entries.append(fit_collective(fit_rows, max_segments=max_segments, min_sizes=min_sizes, ci=ci, rng=rng,
                                      switches=switches))

    data: dict[str, Any] = base.model_dump(mode="json") if base else {"name": name}
    data["name"] = name
    data["nvls"] = nvls_default
    # collectives: replace matching, keep the rest
    new_keys = {_entry_key(e) for e in entries}
    kept = [c for c in data.get("collectives", []) if _entry_key(CollectiveEntry.model_validate(c)) not in new_keys]
    data["collectives"] = kept + [e.model_dump(mode="json") for e in entries]
    links = dict(data.get("links", {}))
    for cls, lp in links_from(entries, meta).items():
        links[cls] = lp.model_dump(mode="json")
    data["links"] = links

    compute = dict(data.get("compute", {}))
    gemm_rows = meas.of("gemm")
    if gemm_rows:
        dtypes = {r.get("dtype", "bf16") for r in gemm_rows}
        if len(dtypes) > 1:
            raise ClusterSimError(f"GEMM rows of several dtypes ({', '.join(sorted(map(str, dtypes)))}); fit one at a time")
        dtype = dtypes.pop()
        peak = peak_tflops or compute.get("peak_tflops")
        if peak is None and dtype == "bf16":
            peak = peak_tflops_for(meta.get("gpu"))
        if peak is None:
            raise ClusterSimError("cannot tell the GPU's peak TFLOP/s for the GEMM efficiencies: pass --peak-tflops "
                                  "or include a meta row naming the GPU (H100, H200, A100)")
        compute.update(fit_gemm(gemm_rows, float(peak)))
        compute["gemm_table"] = [p.model_dump(mode="json") for p in compute["gemm_table"]]
        compute["dtype"] = dtype
        if peak_tflops:
            compute["peak_tflops"] = float(peak_tflops)
    hbm = meas.of("hbm")
    if hbm:
        compute["hbm_bandwidth_GBps"] = _r(statistics.median(float(r["bandwidth_GBps"]) for r in hbm))
    launch = meas.of("launch")
    if launch:
        compute["kernel_launch_us"] = _r(statistics.median(float(r["overhead_us"]) for r in launch))
    data["compute"] = compute

    host = dict(data.get("host", {}))
    fw = [float(r["time_us"]) for r in meas.of("framework_call")]
    fw_entries = [e for e in entries if e.mode == "framework"]
    if fw:
        host["framework_call_us"] = _r(statistics.median(fw))
    elif fw_entries:
        host["framework_call_us"] = _r(statistics.median(e.segments[0].alpha_us for e in fw_entries))
    if host.get("framework_call_us") is not None and (fw or fw_entries):
        # host-side cost = framework-level time - NCCL-level time of the same small call
        diffs = []
        for e in fw_entries:
            twin = next((x for x in entries if x.mode == "nccl" and _entry_key(x)[:5] == _entry_key(e)[:5]), None)
            if twin is not None:
                diffs.append(e.segments[0].alpha_us - twin.segments[0].alpha_us)
        if not diffs and fw:
            nccl_small = [x.segments[0].alpha_us for x in entries if x.mode == "nccl"]
            if nccl_small:
                diffs.append(host["framework_call_us"] - statistics.median(nccl_small))
        if diffs:
            host["per_call_overhead_us"] = _r(max(0.0, statistics.median(diffs)))
    ci_rows = meas.of("comm_init")
    if ci_rows:
        host["comm_init"] = fit_comm_init(ci_rows).model_dump(mode="json")
    data["host"] = host

    old = base.source if base else Source()
    src = Source(
        gpu=meta.get("gpu") or old.gpu,
        host=(", ".join(meta["hosts"]) if isinstance(meta.get("hosts"), list) else meta.get("host")) or old.host,
        driver=_s(meta.get("driver")) or old.driver, nccl_version=_s(meta.get("nccl_version")) or old.nccl_version,
        torch_version=_s(meta.get("torch_version")) or old.torch_version, date=_s(meta.get("date")) or old.date,
        nvls=meta.get("nvls") if meta.get("nvls") is not None else old.nvls, measured=True,
        files=list(dict.fromkeys([*old.files, *(files or meas.files)])),
        notes=(f"fitted by clustersim calibrate fit (holdout={holdout}, ci={ci})"
               + (f"; extends profile {base.name!r}" if base else "")),
    )
    data["source"] = src.model_dump(mode="json")
    profile = validate(Profile, data, file=None)
    return FitResult(profile=profile, notes=notes, held_out=held_out)


def _s(v: Any) -> str | None:
    return None if v is None else str(v)


def profile_yaml(profile: Profile, *, command: str | None = None, date: str | None = None) -> str:
    """The profile as YAML with a header comment saying how it was made."""
    date = date or _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    head = ["# clustersim calibration profile (Contract 4), written by `clustersim calibrate fit`",
            f"# made: {date}"]
    if command:
        head.append(f"# command: {command}")
    head.append("# collectives: piecewise t = alpha + S/algbw, weighted by 1/t, 95% CIs (docs/calibration.md)")
    body = yaml.safe_dump(_tidy(profile.model_dump(mode="json", exclude_none=True, exclude_unset=True)), sort_keys=False,
                          default_flow_style=None, width=120)
    return "\n".join(head) + "\n" + body


def _tidy(obj: Any) -> Any:
    """Whole byte counts as integers, empty sections dropped (same profile once validated)."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            v = _tidy(v)
            if isinstance(v, float) and str(k).endswith("_bytes") and v.is_integer():
                v = int(v)
            if v == {}:
                continue
            out[k] = v
        return out
    if isinstance(obj, list):
        return [_tidy(v) for v in obj]
    return obj


def write_profile(profile: Profile, path: str | Path, *, command: str | None = None) -> Path:
    """Write the profile YAML (validated again on the way out)."""
    text = profile_yaml(profile, command=command)
    validate(Profile, yaml.safe_load(text), file=str(path))
    p = Path(path)
    try:
        if p.parent and not p.parent.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ClusterSimError(f"cannot write: {exc.strerror or exc}", file=str(path)) from None
    return p


def load_profile(path: str | Path) -> Profile:
    """Load a profile file by path or shipped name."""
    from clustersim.config.base import resolve_file

    return load_model(Profile, resolve_file(path, "profile"))
